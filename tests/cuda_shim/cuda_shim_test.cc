// libartel-cuda against the fake driver (fake_cuda.cc, fake_nvml.cc): each
// test runs the probe program (probe.cc) as a real process, with the shim
// preloaded and the fake found by the dynamic linker, and checks its exit
// status and figures. The probe makes the detailed checks itself.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr const char* kGpu0 = "GPU-00112233-4455-6677-8899-aabbccddeeff";
constexpr unsigned long long kGiB = 1ULL << 30;

struct ProbeRun {
  int code = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class CudaShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/artel-cuda-shim-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    env_ = {{"PATH", "/usr/bin:/bin"},
            {"LD_LIBRARY_PATH", FAKE_CUDA_DIR},
            {"LD_PRELOAD", ARTEL_CUDA_SHIM},
            {"ARTEL_GPU_MEMORY_LIMIT", std::to_string(kGiB)},
            {"ARTEL_CUDA_SHM", dir_ + "/segment"},
            {"CUDA_VISIBLE_DEVICES", kGpu0}};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `bin` with env_ and `args`; captures its output.
  ProbeRun Probe(const std::vector<std::string>& args, const char* bin = PROBE) {
    std::vector<std::string> envs;
    for (const auto& [k, v] : env_) envs.push_back(k + "=" + v);
    std::vector<char*> argv{const_cast<char*>(bin)}, envp;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (std::string& e : envs) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string out = dir_ + "/out", err = dir_ + "/err";
    pid_t pid = fork();
    if (pid == 0) {
      int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(o, 1);
      dup2(e, 2);
      execve(bin, argv.data(), envp.data());
      _exit(127);
    }
    ProbeRun r;
    int st = 0;
    waitpid(pid, &st, 0);
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

  double Figure(const std::string& out, const std::string& key) {
    size_t at = out.find(key + "=");
    return at == std::string::npos ? -1 : std::atof(out.c_str() + at + key.size() + 1);
  }

  std::string dir_;
  std::map<std::string, std::string> env_;
};

#define EXPECT_PROBE_OK(r) EXPECT_EQ((r).code, 0) << (r).err << (r).out

TEST_F(CudaShimTest, EveryHookThroughDlsym) { EXPECT_PROBE_OK(Probe({"dlsym", "hooks"})); }
TEST_F(CudaShimTest, EveryHookThroughGetProcAddress) { EXPECT_PROBE_OK(Probe({"procaddr", "hooks"})); }
TEST_F(CudaShimTest, EveryHookThroughGetProcAddressV2) { EXPECT_PROBE_OK(Probe({"procaddr_v2", "hooks"})); }
TEST_F(CudaShimTest, PerThreadStreamVariantsAreHooked) { EXPECT_PROBE_OK(Probe({"ptsz", "hooks"})); }
TEST_F(CudaShimTest, EveryHookWhenLinkedDirectly) {
  EXPECT_PROBE_OK(Probe({"linked", "hooks"}, PROBE_LINKED));
}

// The control: without the shim the same program resolves the fake's own
// functions and its over-limit allocations succeed.
TEST_F(CudaShimTest, WithoutTheShimNothingIsRefused) {
  env_.erase("LD_PRELOAD");
  EXPECT_PROBE_OK(Probe({"dlsym", "hooks"}));
  EXPECT_PROBE_OK(Probe({"procaddr", "hooks"}));
}

TEST_F(CudaShimTest, VirtualMemoryAsNcclAndVllmUseIt) {
  EXPECT_PROBE_OK(Probe({"procaddr", "vmm"}));
  EXPECT_PROBE_OK(Probe({"linked", "vmm"}, PROBE_LINKED));
}

TEST_F(CudaShimTest, MemGetInfoAndNvmlAgreeOnTheShare) {
  ProbeRun r = Probe({"procaddr", "meminfo"});
  EXPECT_PROBE_OK(r);
  EXPECT_EQ(Figure(r.out, "cuda_total"), static_cast<double>(kGiB)) << r.out;
  EXPECT_EQ(Figure(r.out, "cuda_free"), Figure(r.out, "nvml_free")) << r.out;
}

TEST_F(CudaShimTest, ForkedProcessesShareOneLimit) {
  // dlsym: the parent maps the segment before it forks; linked: each child
  // maps it by itself.
  ProbeRun r = Probe({"dlsym", "fork", "4"});
  EXPECT_PROBE_OK(r);
  EXPECT_EQ(Figure(r.out, "chunks"), 16) << r.out;  // 1 GiB in 64 MiB chunks, over four processes
  r = Probe({"linked", "fork", "4"}, PROBE_LINKED);
  EXPECT_PROBE_OK(r);
  EXPECT_EQ(Figure(r.out, "chunks"), 16) << r.out;
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/segment").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the segment is its owner's only";
}

TEST_F(CudaShimTest, WithoutASharedSegmentEachProcessHasItsOwnLimit) {
  // The control for the test above: the limit is shared only through the segment.
  env_.erase("ARTEL_CUDA_SHM");
  ProbeRun r = Probe({"linked", "fork", "4"}, PROBE_LINKED);
  EXPECT_NE(r.code, 0);
  EXPECT_EQ(Figure(r.out, "chunks"), 64) << r.out;
}

TEST_F(CudaShimTest, KilledProcessesAreReconciledAndTheLockRecovers) {
  env_["FAKE_CUDA_BLOCK_BYTES"] = std::to_string(kGiB / 4);
  EXPECT_PROBE_OK(Probe({"linked", "kill9", dir_}, PROBE_LINKED));
}

TEST_F(CudaShimTest, ManyThreadsNeverPassTheLimit) {
  env_["ARTEL_GPU_MEMORY_LIMIT"] = std::to_string(256ULL << 20);
  ProbeRun r = Probe({"dlsym", "threads", "2000"});
  EXPECT_PROBE_OK(r);
  EXPECT_LE(Figure(r.out, "peak"), 256.0 * (1 << 20)) << r.out;
}

TEST_F(CudaShimTest, NoFalseOutOfMemoryAfterAMillionPairs) {
  EXPECT_PROBE_OK(Probe({"procaddr", "million"}));
}

TEST_F(CudaShimTest, AnInvalidLimitRefusesEveryAllocationWithAClearError) {
  env_["ARTEL_GPU_MEMORY_LIMIT"] = "lots";
  ProbeRun r = Probe({"dlsym", "badlimit"});
  EXPECT_PROBE_OK(r);
  EXPECT_NE(r.err.find("ARTEL_GPU_MEMORY_LIMIT=lots is not a byte count"), std::string::npos) << r.err;
}

TEST_F(CudaShimTest, HamiStyleLimitIsUnderstood) {
  env_.erase("ARTEL_GPU_MEMORY_LIMIT");
  env_["CUDA_DEVICE_MEMORY_LIMIT"] = "1024m";
  ProbeRun r = Probe({"procaddr", "meminfo"});
  EXPECT_EQ(Figure(r.out, "cuda_total"), static_cast<double>(kGiB)) << r.out << r.err;
}

// The compute share: the fake GPU is busy FAKE_GPU_LAUNCH_US per launch and
// the fake NVML reports it; at 25% the shim slows launches until the busy
// share falls near 25%. Without a limit the fake GPU is saturated.
TEST_F(CudaShimTest, ComputeShareThrottlesLaunches) {
  env_["FAKE_GPU_LAUNCH_US"] = "100";
  env_["ARTEL_GPU_COMPUTE_PERCENT"] = "25";
  ProbeRun limited = Probe({"dlsym", "compute", "1.5"});
  EXPECT_PROBE_OK(limited);
  const double util = Figure(limited.out, "util");
  EXPECT_LE(util, 40) << limited.out;
  EXPECT_GE(util, 5) << limited.out;
  env_.erase("ARTEL_GPU_COMPUTE_PERCENT");
  ProbeRun free_run = Probe({"dlsym", "compute", "1.0"});
  EXPECT_PROBE_OK(free_run);
  EXPECT_GE(Figure(free_run.out, "util"), 50) << free_run.out;  // unthrottled: far above 100
}

// scripts/gpu-check.sh parses, and on a host without a GPU it stops at once
// with a clear message (nvidia-smi here is a stand-in that finds none).
TEST_F(CudaShimTest, GpuCheckScriptParsesAndFailsClearlyWithoutAGpu) {
  const std::string script = std::string(ARTEL_SOURCE_DIR) + "/scripts/gpu-check.sh";
  EXPECT_EQ(std::system(("bash -n " + script).c_str()), 0);
  std::filesystem::create_directories(dir_ + "/bin");
  {
    std::ofstream f(dir_ + "/bin/nvidia-smi");
    f << "#!/bin/sh\necho 'No devices were found'\nexit 6\n";
  }
  std::filesystem::permissions(dir_ + "/bin/nvidia-smi", std::filesystem::perms::owner_all);
  const std::string cmd = "PATH=" + dir_ + "/bin:/usr/bin:/bin bash " + script + " --out " + dir_ +
                          "/figures.txt --build-dir /nonexistent >" + dir_ + "/gc.out 2>&1";
  const int st = std::system(cmd.c_str());
  const std::string out = Slurp(dir_ + "/gc.out");
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 2) << st << out;
  EXPECT_NE(out.find("no NVIDIA GPU"), std::string::npos) << out;
}

}  // namespace
