#!/usr/bin/env bash
# Builds Kueue's own scalability harness from the release pinned by
# kueue/go.mod (sigs.k8s.io/kueue, built from the module cache; nothing of
# Kueue is committed): minimalkueue (Kueue's core controllers and scheduler,
# without webhooks or job integrations), runner (the generator, the
# execution player and the recorder) and checker (Kueue's rangespec check,
# which Kueue ships as a Go test: built with `go test -c`). kueue/ is a module
# of its own, so Kueue keeps its own dependency versions (k8s.io/* v0.35),
# apart from the control plane's v1.36. Output: $1 (default
# <repo>/build-k8s/bin), as kueue-minimalkueue, kueue-runner, kueue-checker.
# A warm run (nothing changed) takes seconds: Go's caches stay at their
# defaults. See docs/kubernetes.md for the cold time.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build-k8s/bin}
mkdir -p "$out"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
cd "$here/kueue"
pkg=sigs.k8s.io/kueue/test/performance/scheduler
if [[ ${2:-} == --minimal ]]; then what="kueue-minimalkueue only"; else what="kueue-minimalkueue, kueue-runner, kueue-checker"; fi
echo "k8s-tools: go build $what ($pkg)" >&2
go build -trimpath -ldflags "-s -w" -o "$out/kueue-minimalkueue" "$pkg/minimalkueue"
# --minimal: only minimalkueue (what `make test`'s differential run needs);
# the runner and the checker are for `make bench-kueue`.
if [[ ${2:-} != --minimal ]]; then
  go build -trimpath -ldflags "-s -w" -o "$out/kueue-runner" "$pkg/runner"
  go test -c -trimpath -ldflags "-s -w" -o "$out/kueue-checker" "$pkg/checker"
fi
go list -m -f '{{.Version}}' sigs.k8s.io/kueue >"$out/KUEUE_VERSION"
