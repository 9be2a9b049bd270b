#!/bin/bash
# Makes the serving certificate of arteld's admission webhooks with openssl
# (a CA of its own and a certificate for artel-webhook.artel-system.svc),
# stores it as the Secret artel-webhook-tls and writes the CA into the
# caBundle of the MutatingWebhookConfiguration and ValidatingWebhookConfiguration
# `artel`. Run it after `kubectl apply -k deploy/kubernetes`, and again before
# the certificate expires (DAYS, default 365); the replicas read the
# certificate at start, so restart them after (kubectl -n artel-system
# rollout restart deployment/arteld).
#   KUBECTL=kubectl DAYS=365 deploy/kubernetes/webhook-cert.sh [DIR]
# DIR keeps ca.crt, ca.key, tls.crt and tls.key (default: a temporary
# directory, removed at the end). cert-manager is the alternative
# (docs/kubernetes.md, "Deployment").
set -euo pipefail
kubectl=${KUBECTL:-kubectl}
days=${DAYS:-365}
ns=artel-system
svc=artel-webhook
dir=${1:-}
if [ -z "$dir" ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
chmod 700 "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days "$days" -sha256 \
  -subj "/CN=artel-webhook-ca" -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -new -newkey rsa:2048 -nodes -keyout tls.key -subj "/CN=$svc.$ns.svc" -out tls.csr 2>/dev/null
printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
  "extendedKeyUsage=serverAuth" "subjectAltName=DNS:$svc.$ns.svc,DNS:$svc.$ns.svc.cluster.local" >tls.ext
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 8)" -days "$days" \
  -sha256 -extfile tls.ext -out tls.crt 2>/dev/null
rm -f tls.csr tls.ext
chmod 600 ca.key tls.key
"$kubectl" -n "$ns" create secret tls artel-webhook-tls --cert=tls.crt --key=tls.key \
  --dry-run=client -o yaml | "$kubectl" apply -f -
ca=$(base64 -w0 <ca.crt)
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
  "$kubectl" patch "$kind" artel --type=json \
    -p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$ca\"}]"
done
echo "webhook certificate in secret $ns/artel-webhook-tls; caBundle set"
