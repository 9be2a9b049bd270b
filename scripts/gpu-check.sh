#!/usr/bin/env bash
# libartel-cuda on a real NVIDIA GPU (docs/gpus.md, "libartel-cuda"): NVML
# discovery, then two tenants on one GPU with 20 GiB and 40 GiB memory
# shares (scaled down on a smaller card) and 50% compute shares each:
#   - each gets CUDA_ERROR_OUT_OF_MEMORY at its limit and not before;
#   - cuMemGetInfo (and nvidia-smi / NVML in the pod) shows its limit;
#   - tenant A's kernel throughput with B running flat out drops at most
#     20% against A alone;
#   - PyTorch's torch.cuda.mem_get_info and OOM too, if torch imports.
# The tenant program is written here (driver API by dlopen, compiled with
# g++, no nvcc; its busy-loop kernel is PTX loaded with cuModuleLoadData).
# Figures go to --out (default gpu-check-results.txt). Bounded: about 5
# minutes, every step under `timeout`.
#   scripts/gpu-check.sh [--build-dir build] [--out FILE]
# Exit: 0 all checks held, 1 a check failed, 2 no GPU or no library.
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
out=gpu-check-results.txt
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--build-dir DIR] [--out FILE]" >&2; exit 2 ;;
  esac
done

fail=0
note() { echo "$*" | tee -a "$out"; }
check() {  # check <description> <condition as a shell test>
  if eval "$2"; then note "PASS $1"; else note "FAIL $1"; fail=1; fi
}

# ---- 0. a GPU, or a clear stop
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU: nvidia-smi is not installed (this script needs a GPU machine)" >&2
  exit 2
fi
if ! listing=$(timeout 30 nvidia-smi -L 2>&1) || ! grep -q '^GPU ' <<<"$listing"; then
  echo "gpu-check: no NVIDIA GPU found: nvidia-smi -L says: $listing" >&2
  exit 2
fi
: >"$out"
note "# gpu-check $(date -u +%FT%TZ) on $(hostname)"

# ---- 1. NVML discovery
note "## nvidia-smi -L"
note "$listing"
note "## nvidia-smi --query-gpu"
note "$(timeout 30 nvidia-smi --query-gpu=index,name,uuid,memory.total,mig.mode.current,driver_version --format=csv 2>&1)"
if [[ -x $build/bin/artel ]]; then
  note "## artel check --inventory (Artel's own NVML discovery)"
  note "$(timeout 60 "$build/bin/artel" check --inventory 2>&1)"
fi

# ---- 2. the library and the tenant program
shim=$build/lib/libartel-cuda.so
if [[ ! -f $shim ]]; then
  echo "gpu-check: $shim not found; build it: cmake --build $build --target artel_cuda" >&2
  exit 2
fi
work=$(mktemp -d /tmp/artel-gpu-check-XXXXXX)
bpid=
trap '[[ -n $bpid ]] && kill "$bpid" 2>/dev/null; rm -rf "$work"' EXIT
cat >"$work/tenant.cc" <<'EOF'
// One tenant: "oom <chunk MiB>" allocates until refused; "run <seconds>"
// launches a PTX busy loop and prints kernels per second.
#include <dlfcn.h>
#include <time.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
static const char* kPtx = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry spin(.param .u64 dst, .param .u32 iters)
{
  .reg .pred p;
  .reg .b32 i, n;
  .reg .f32 x;
  .reg .b64 o;
  ld.param.u32 n, [iters];
  mov.u32 i, 0;
  mov.f32 x, 0f3F800000;
LOOP:
  fma.rn.f32 x, x, 0f3F7FFFFF, 0f3A83126F;
  add.u32 i, i, 1;
  setp.lt.u32 p, i, n;
  @p bra LOOP;
  ld.param.u64 o, [dst];
  cvta.to.global.u64 o, o;
  st.global.f32 [o], x;
  ret;
}
)";
static void* cuda;
template <class F> F sym(const char* n) {
  void* f = dlsym(cuda, n);
  if (!f) { std::fprintf(stderr, "no %s\n", n); std::exit(3); }
  return reinterpret_cast<F>(f);
}
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(int argc, char** argv) {
  if (argc < 3) return 2;
  cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda) { std::fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror()); return 3; }
  auto cuInit = sym<CUresult (*)(unsigned)>("cuInit");
  auto cuDeviceGet = sym<CUresult (*)(int*, int)>("cuDeviceGet");
  auto cuRetain = sym<CUresult (*)(void**, int)>("cuDevicePrimaryCtxRetain");
  auto cuSet = sym<CUresult (*)(void*)>("cuCtxSetCurrent");
  auto cuMemGetInfo = sym<CUresult (*)(size_t*, size_t*)>("cuMemGetInfo_v2");
  auto cuMemAlloc = sym<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc_v2");
  auto cuLoad = sym<CUresult (*)(void**, const void*)>("cuModuleLoadData");
  auto cuGetFn = sym<CUresult (*)(void**, void*, const char*)>("cuModuleGetFunction");
  auto cuLaunch = sym<CUresult (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   void*, void**, void**)>("cuLaunchKernel");
  auto cuSync = sym<CUresult (*)()>("cuCtxSynchronize");
  int dev = 0; void* ctx = nullptr;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuRetain(&ctx, dev) || cuSet(ctx)) { std::fprintf(stderr, "no context\n"); return 3; }
  size_t f = 0, t = 0;
  cuMemGetInfo(&f, &t);
  std::printf("mem_get_info_total=%zu mem_get_info_free=%zu\n", t, f);
  if (!std::strcmp(argv[1], "oom")) {
    const size_t chunk = std::strtoull(argv[2], nullptr, 10) << 20;
    size_t got = 0; CUdeviceptr p; CUresult r;
    while ((r = cuMemAlloc(&p, chunk)) == 0) got += chunk;
    std::printf("allocated=%zu error=%d\n", got, r);
    return 0;
  }
  CUdeviceptr outp = 0;
  void *mod = nullptr, *fn = nullptr;
  if (cuMemAlloc(&outp, 4096) || cuLoad(&mod, kPtx) || cuGetFn(&fn, mod, "spin")) { std::fprintf(stderr, "kernel setup failed\n"); return 3; }
  unsigned iters = 20000;
  void* params[] = {&outp, &iters};
  const double secs = std::atof(argv[2]), start = now();
  long kernels = 0;
  while (now() - start < secs) {
    for (int i = 0; i < 8; ++i) cuLaunch(fn, 264, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr);
    cuSync();
    kernels += 8;
  }
  std::printf("kernels_per_s=%.1f\n", kernels / (now() - start));
  return 0;
}
EOF
if ! g++ -O2 -std=c++17 -o "$work/tenant" "$work/tenant.cc" -ldl 2>"$work/cc.err"; then
  echo "gpu-check: cannot compile the tenant program:" >&2; cat "$work/cc.err" >&2; exit 2
fi

# Shares: 20 and 40 GiB, scaled to the card when it has under 64 GiB.
total_mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 | head -1 | tr -d ' ')
a_mib=20480 b_mib=40960
if (( total_mib < 65536 )); then a_mib=$(( total_mib / 4 )) b_mib=$(( total_mib / 2 )); fi
note "## shares on GPU 0 ($total_mib MiB): A $a_mib MiB, B $b_mib MiB, 50% compute each"
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0 | head -1 | tr -d ' ')
tenant() {  # tenant <name> <MiB> <compute %> <args...>
  local name=$1 mib=$2 pct=$3; shift 3
  mkdir -p "$work/$name"
  env LD_PRELOAD="$shim" ARTEL_CUDA_SHM="$work/$name/segment" ARTEL_GPU_MEMORY_LIMIT=$(( mib * 1048576 )) \
    ARTEL_GPU_COMPUTE_PERCENT="$pct" CUDA_VISIBLE_DEVICES="$uuid" timeout 120 "$work/tenant" "$@"
}
val() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2" | head -1; }

# ---- 3. out of memory at the limit, not before; mem_get_info shows the limit
chunk=256
for t in "A $a_mib" "B $b_mib"; do
  set -- $t
  r=$(tenant "$1" "$2" 0 oom $chunk 2>&1); note "tenant $1 oom: $r"
  limit=$(( $2 * 1048576 )); got=$(val allocated "$r"); err=$(val error "$r"); total=$(val mem_get_info_total "$r")
  check "tenant $1: mem_get_info total = its limit ($limit)" "[[ '$total' == '$limit' ]]"
  check "tenant $1: out of memory (error 2) at its limit, not before ($got of $limit)" \
    "[[ '$err' == 2 && -n '$got' ]] && (( $got <= $limit && $got > $limit - $chunk * 1048576 ))"
done
r=$(LD_PRELOAD="$shim" ARTEL_GPU_MEMORY_LIMIT=$(( a_mib * 1048576 )) CUDA_VISIBLE_DEVICES="$uuid" \
    ARTEL_CUDA_SHM="$work/A/segment" timeout 30 nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 2>&1)
note "nvidia-smi memory.total under the shim (tenant A): $r MiB"
check "nvidia-smi in tenant A shows its limit" "[[ '$(tr -d ' ' <<<"$r")' == '$a_mib' ]]"

# ---- 4. throughput: A alone, then A with B flat out
r=$(tenant A "$a_mib" 50 run 20 2>&1); alone=$(val kernels_per_s "$r"); note "A alone (50%): $r"
tenant B "$b_mib" 50 run 40 >"$work/b.out" 2>&1 &
bpid=$!
sleep 5  # B reaches its steady rate before A is measured
r=$(tenant A "$a_mib" 50 run 20 2>&1); shared=$(val kernels_per_s "$r"); note "A with B running: $r"
wait $bpid; note "B (50%) meanwhile: $(cat "$work/b.out")"
r=$(tenant A "$a_mib" 0 run 10 2>&1); note "A alone without a compute limit: $r"
check "A's throughput with B running drops at most 20% ($shared vs $alone kernels/s)" \
  "[[ -n '$alone' && -n '$shared' ]] && awk 'BEGIN{exit !($shared >= 0.8 * $alone)}'"

# ---- 5. PyTorch, if it is there
if timeout 60 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  r=$(LD_PRELOAD="$shim" ARTEL_CUDA_SHM="$work/A/segment" ARTEL_GPU_MEMORY_LIMIT=$(( a_mib * 1048576 )) \
      CUDA_VISIBLE_DEVICES="$uuid" timeout 120 python3 - <<'EOF' 2>&1
import torch
free, total = torch.cuda.mem_get_info()
print(f"torch_total={total} torch_free={free}")
held, got = [], 0
try:
    while True:
        held.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
        got += 256 << 20
except torch.cuda.OutOfMemoryError:
    print(f"torch_allocated={got} torch_oom=1")
EOF
)
  note "torch: $r"
  limit=$(( a_mib * 1048576 ))
  check "torch.cuda.mem_get_info total = A's limit" "[[ '$(val torch_total "$r")' == '$limit' ]]"
  check "torch: OutOfMemoryError near A's limit (caching allocator and context overhead aside)" \
    "[[ '$(val torch_oom "$r")' == 1 ]] && (( $(val torch_allocated "$r") > $limit - 2 * 268435456 ))"
else
  note "torch: not importable with CUDA here; skipped"
fi

note "## result: $([[ $fail == 0 ]] && echo ALL PASSED || echo FAILURES)"
exit $fail
