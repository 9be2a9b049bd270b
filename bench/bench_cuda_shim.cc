// libartel-cuda's overhead on the fake driver (tests/cuda_shim/fake_cuda.cc):
// ns per kernel launch and per allocation and free, without the shim and
// with it (LD_PRELOAD), the functions resolved through cuGetProcAddress as
// CUDA 12/13 runtimes do. Each run is a child process of this program;
// each figure is the fastest of three runs.
// Figures in docs/performance.md, "libartel-cuda".
//   bench_cuda_shim [launches=2000000] [alloc rounds=500]
#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_shim/cuda_abi.h"

namespace {

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

template <class F>
F Get(CUresult (*gpa)(const char*, void**, int, cuuint64_t), const char* name) {
  void* f = nullptr;
  if (gpa(name, &f, 12040, 0) != CUDA_SUCCESS || f == nullptr) {
    std::fprintf(stderr, "bench_cuda_shim: no %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(f);
}

int Child(long launches, int rounds) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (cuda == nullptr) return 1;
  auto gpa =
      reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t)>(dlsym(cuda, "cuGetProcAddress"));
  auto retain = Get<CUresult (*)(CUcontext*, CUdevice)>(gpa, "cuDevicePrimaryCtxRetain");
  auto set = Get<CUresult (*)(CUcontext)>(gpa, "cuCtxSetCurrent");
  auto launch = Get<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, CUstream, void**, void**)>(gpa, "cuLaunchKernel");
  auto alloc = Get<CUresult (*)(CUdeviceptr*, size_t)>(gpa, "cuMemAlloc");
  auto free_ = Get<CUresult (*)(CUdeviceptr)>(gpa, "cuMemFree");
  CUcontext ctx = nullptr;
  retain(&ctx, 0);
  set(ctx);
  double t = Now();
  for (long i = 0; i < launches; ++i) launch(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
  const double launch_ns = (Now() - t) / launches;
  std::vector<CUdeviceptr> ptrs(1000);
  double alloc_ns = 0, free_ns = 0;
  for (int r = 0; r < rounds; ++r) {
    t = Now();
    for (CUdeviceptr& p : ptrs) {
      if (alloc(&p, 1 << 20) != CUDA_SUCCESS) return 2;
    }
    alloc_ns += Now() - t;
    t = Now();
    for (CUdeviceptr p : ptrs) free_(p);
    free_ns += Now() - t;
  }
  std::printf("%.1f %.1f %.1f\n", launch_ns, alloc_ns / (rounds * 1000.0), free_ns / (rounds * 1000.0));
  return 0;
}

// Runs this program as a child with `env`; returns its three figures.
bool Measure(const char* self, const std::vector<std::string>& env, const std::string& args, double out[3]) {
  std::string cmd;
  for (const std::string& e : env) cmd += e + " ";
  cmd += std::string(self) + " " + args;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  int n = std::fscanf(p, "%lf %lf %lf", &out[0], &out[1], &out[2]);
  return pclose(p) == 0 && n == 3;
}

}  // namespace

int main(int argc, char** argv) {
  const long launches = argc > 1 ? std::atol(argv[1]) : 2000000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 500;
  if (getenv("BENCH_CUDA_SHIM_CHILD") != nullptr) return Child(launches, rounds);
  const std::string args = std::to_string(launches) + " " + std::to_string(rounds);
  const std::vector<std::string> base = {"BENCH_CUDA_SHIM_CHILD=1",
                                         std::string("LD_LIBRARY_PATH=") + FAKE_CUDA_DIR,
                                         "FAKE_GPU_LAUNCH_US=0", "ARTEL_CUDA_SHM=/tmp/bench-cuda-shim-$$"};
  struct Row {
    const char* name;
    std::vector<std::string> extra;
  } rows[] = {
      {"no shim", {}},
      {"shim, memory limit",
       {std::string("LD_PRELOAD=") + ARTEL_CUDA_SHIM, "ARTEL_GPU_MEMORY_LIMIT=1099511627776"}},
      {"shim, memory + compute 50%",
       {std::string("LD_PRELOAD=") + ARTEL_CUDA_SHIM, "ARTEL_GPU_MEMORY_LIMIT=1099511627776",
        "ARTEL_GPU_COMPUTE_PERCENT=50"}},
  };
  double first[3] = {0, 0, 0};
  std::printf("%-28s %12s %12s %12s\n", "fake driver, ns per call", "launch", "alloc", "free");
  for (Row& r : rows) {
    std::vector<std::string> env = base;
    env.insert(env.end(), r.extra.begin(), r.extra.end());
    // The fastest of three runs of each: the least disturbed by other load.
    double f[3] = {1e18, 1e18, 1e18};
    for (int run = 0; run < 3; ++run) {
      double g[3];
      if (!Measure(argv[0], env, args, g)) {
        std::fprintf(stderr, "bench_cuda_shim: run \"%s\" failed\n", r.name);
        return 1;
      }
      for (int k = 0; k < 3; ++k) f[k] = std::min(f[k], g[k]);
    }
    if (first[0] == 0) std::copy(f, f + 3, first);
    std::printf("%-28s %12.1f %12.1f %12.1f   (added: %+.1f, %+.1f, %+.1f)\n", r.name, f[0], f[1], f[2],
                f[0] - first[0], f[1] - first[1], f[2] - first[2]);
  }
  std::system("rm -f /tmp/bench-cuda-shim-*");
  return 0;
}
