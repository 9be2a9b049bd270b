#!/usr/bin/env bash
# Builds the test control plane from the Go modules pinned by this folder's
# go.mod/go.sum: kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl (Kubernetes v1.36.3), etcd (v3.6.8, the version 1.36.3 requires) and
# the test harness's own programs (cmd/*). Kueue's scalability harness is
# built apart, by build-kueue.sh (make bench-kueue). Output: $1 (default
# <repo>/build-k8s/bin). Go's module and build caches stay at their defaults,
# so a second run only relinks what changed (about a minute; see
# docs/kubernetes.md for cold times).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build-k8s/bin}
mkdir -p "$out"
# GOFLAGS is set here whatever the caller's is: go.mod/go.sum are never
# changed by a build, and no VCS stamp is taken (a checkout without git, or
# one git calls "dubious ownership", builds the same).
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.8
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# Without these, /version is not semver and kubectl and Kueue refuse it.
kver="-X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
kver+=" -X $pkg.gitCommit=0000000000000000000000000000000000000000"
kver+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1"
kver+=" -X k8s.io/client-go/pkg/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitTreeState=clean"
# buildDate is left out of the ldflags on purpose: a changing value would
# relink every binary on every run.
cd "$here"
build() {  # name package [extra ldflags]
  local name=$1 p=$2
  echo "k8s-tools: go build $name ($p)" >&2
  go build -trimpath -ldflags "-s -w $kver ${3:-}" -o "$out/$name" "$p"
}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build kubectl k8s.io/kubernetes/cmd/kubectl
build etcd go.etcd.io/etcd/server/v3 "-X go.etcd.io/etcd/api/v3/version.GitSHA=v${ETCD_VERSION#v}"
for d in "$here"/cmd/*/; do
  [[ -d $d ]] || continue
  build "$(basename "$d")" "./cmd/$(basename "$d")"
done
echo "$K8S_VERSION" >"$out/VERSION"
# Kueue's scalability harness (minimalkueue, runner, checker) is built by
# build-kueue.sh, from `make bench-kueue` only: no test needs it, and a cold
# build of it takes about 10 minutes more.
