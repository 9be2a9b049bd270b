#!/usr/bin/env bash
# Installs everything Artel needs to build and test on Debian 12 (bookworm).
# Idempotent: when every package is already present it runs no apt-get at all.
# `--k8s` also checks Go (>= 1.26) and downloads the Go modules of tools/k8s
# (the Kubernetes test control plane; make k8s and make test pass it).
# `--bench-slurm` installs only the bench-only group of bench/e2e_vs_slurm.sh
# (`make bench-e2e`): Debian's Slurm (slurm-wlm 22.05: slurmctld, slurmd, the
# client commands) and munge, plus linux-perf for profiles. The default install
# never pulls them.
set -euo pipefail

# Installs the named Debian packages that are missing (no apt-get when none).
install_missing() {
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]} == 0)); then
    return 1
  fi
  echo "install-deps: installing ${missing[*]}"
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  # RUNLEVEL=1 asks invoke-rc.d not to start the packages' services (munge,
  # slurmctld, slurmd); the bench starts its own on free ports, and a system
  # slurmd started here would not disturb it either (other config, ports).
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

if [[ ${1:-} == --bench-slurm ]]; then
  if ! install_missing slurm-wlm slurmctld slurmd slurm-client munge linux-perf; then
    echo "install-deps: bench-slurm packages present"
  fi
  exit 0
fi

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libyaml-cpp-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libsqlite3-dev
  libcpp-httplib-dev libssl-dev
  clang-format clang-tidy
  # The fuzz tree of `make test` (fuzz/, build-fuzz/): clang++ with libFuzzer
  # and the sanitizer runtimes for clang.
  clang libclang-rt-14-dev
  # The thread-safety check (tests/layering/thread_safety_check.sh): clang
  # against libc++, whose mutexes carry the capability attributes.
  libc++-14-dev libc++abi-14-dev
  # Observability pack (deploy/prometheus, web/, tests/observability): promtool
  # and the Prometheus server, Chromium for the browser tests, Node.js for the
  # web UI build, jq and curl for the test scripts.
  prometheus chromium nodejs jq curl
  # The Kubernetes test control plane (scripts/k8s-up.sh): certificates.
  openssl
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi

# The web UI's npm packages (uPlot, esbuild, playwright-core), pinned by
# web/package-lock.json. Only when they are missing; needs the npm registry.
# Debian's prometheus package may start its server on hosts with an init
# system; the tests start their own on a free loopback port and need none.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -f $root/web/package-lock.json && ! -d $root/web/node_modules ]]; then
  if command -v npm >/dev/null; then
    echo "install-deps: npm ci in web/"
    (cd "$root/web" && npm ci --no-audit --no-fund --loglevel=error)
  else
    echo "install-deps: npm not found; the web UI build and browser tests will be skipped"
  fi
fi

# The chart library inlined into `artel sim` HTML reports (uPlot, pinned by
# third_party/charts/package-lock.json). Installed once; CMake reads it at
# configure time. Without npm the reports are built without charts.
charts=$root/third_party/charts
if [[ ! -d $charts/node_modules/uplot ]]; then
  if command -v npm >/dev/null; then
    echo "install-deps: npm ci in third_party/charts"
    (cd "$charts" && npm ci --no-audit --no-fund --loglevel=error)
  else
    echo "install-deps: npm not found; HTML reports will have no charts" >&2
  fi
fi

# With --k8s (make k8s / make test): the Go side of the test tooling. `make
# demo` and `make build` need no Go.
if [[ ${1:-} != --k8s ]]; then
  exit 0
fi

# The Kubernetes test control plane (tools/k8s, docs/kubernetes.md) is built
# with Go >= 1.26 from the Go module proxy; the toolchain is never downloaded
# by the go command (GOTOOLCHAIN=local). Modules are fetched once into Go's
# module cache so that later builds and test runs need no network.
export GOTOOLCHAIN=local
go_min_minor=26
if ! command -v go >/dev/null; then
  echo "install-deps: the go command is missing: the Kubernetes tests need Go 1.${go_min_minor} or newer" \
    "(https://go.dev/dl/, on PATH) and access to the Go module proxy" >&2
  exit 1
fi
gover=$(go env GOVERSION 2>/dev/null || true)
if [[ ! $gover =~ ^go1\.([0-9]+) ]] || ((BASH_REMATCH[1] < go_min_minor)); then
  echo "install-deps: ${gover:-an unknown Go} found ($(command -v go)); the Kubernetes tests need Go 1.${go_min_minor} or newer" >&2
  exit 1
fi
for m in "$root/tools/k8s" "$root/tools/k8s/kueue"; do
  if ! (cd "$m" && GOFLAGS=-mod=readonly go mod download); then
    echo "install-deps: go mod download failed in ${m#"$root"/} (needs the Go module proxy, GOPROXY=$(go env GOPROXY))" >&2
    exit 1
  fi
done
echo "install-deps: Go modules of tools/k8s present ($gover)"
