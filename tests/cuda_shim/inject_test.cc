// arteld's local runtime preloads libartel-cuda into pods on GPU memory
// shares, and only there: a pod on a whole GPU gets neither LD_PRELOAD nor
// a segment. The share's pod runs the fake-driver probe (probe.cc) under
// the daemon's own environment: the limit it is refused at is the one the
// daemon set. Its segment directory is the pod user's, 0700, and goes when
// the pod ends. With arteld running as root the pods run as an allocated
// uid (docs/daemon.md, "Pod users"), so the library and segment are proven
// usable by another user.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../server/harness.h"

namespace artel::testing {
namespace {

std::string Value(const std::string& log, const std::string& key) {
  size_t at = log.find(key + "=");
  if (at == std::string::npos) return "";
  size_t end = log.find('\n', at);
  return log.substr(at + key.size() + 1,
                    end == std::string::npos ? std::string::npos : end - at - key.size() - 1);
}

TEST(CudaShimInjectTest, MemorySharePodsGetTheLibraryAndWholeGpuPodsDoNot) {
  const std::string dir = TempDir("cudashim");
  WriteFile(dir + "/cluster.yaml", kTwoTeamsManifests);
  WriteFile(dir + "/arteld.yaml", "runtime:\n  podUidRange: 62100-62199\n");
  // Pod users must reach the data directory's parent only through their own
  // directories; the temp dir itself stays arteld's.
  Arteld d(dir);
  ASSERT_TRUE(d.Start({"--config", dir + "/arteld.yaml", "-m", dir + "/cluster.yaml", "--fake-gpus",
                       "2xA100-80GB", "--grace-period", "0", "--cuda-shim", ARTEL_CUDA_SHIM}))
      << d.log();
  const std::string report =
      "echo preload=$LD_PRELOAD; echo shm=$ARTEL_CUDA_SHM; echo uid=$(id -u); "
      "if [ -n \"$ARTEL_CUDA_SHM\" ]; then echo dir=$(stat -c '%a %u' \"$(dirname \"$ARTEL_CUDA_SHM\")\"); "
      "\"$PROBE\" dlsym hooks; echo probe=$?; fi";
  Json share = Workload("team-a", "share", "default", 1, {"/bin/sh", "-c", report});
  share["spec"]["podSets"][0]["requests"]["nvidia.com/gpumem"] = "20000";  // MiB of one GPU
  share["spec"]["podSets"][0]["env"] = {{"LD_LIBRARY_PATH", FAKE_CUDA_DIR}, {"PROBE", PROBE}};
  ASSERT_EQ(d.Post("/api/v1/workloads", share.dump()).status, 201);
  Json whole = Workload("team-a", "whole", "default", 1, {"/bin/sh", "-c", report});
  ASSERT_EQ(d.Post("/api/v1/workloads", whole.dump()).status, 201);
  for (const char* name : {"share", "whole"}) {
    EXPECT_TRUE(WaitFor([&] { return d.Phase("team-a", name) == "Succeeded"; }, 30000))
        << name << " " << d.Phase("team-a", name) << "\n"
        << ReadFile(dir + "/data/logs/team-a/" + name + "/main-0.log") << d.log();
  }
  const std::string s = ReadFile(dir + "/data/logs/team-a/share/main-0.log");
  const std::string w = ReadFile(dir + "/data/logs/team-a/whole/main-0.log");
  EXPECT_EQ(Value(s, "preload"), ARTEL_CUDA_SHIM) << s;
  EXPECT_EQ(Value(s, "probe"), "0") << s;  // refused over 20000 MiB, without reaching the driver
  const std::string shm = Value(s, "shm");
  ASSERT_FALSE(shm.empty()) << s;
  EXPECT_EQ(Value(s, "dir"), "700 " + Value(s, "uid")) << s;
  if (geteuid() == 0) {
    EXPECT_NE(Value(s, "uid"), "0") << "arteld as root runs pods as another user";
  }
  EXPECT_TRUE(
      WaitFor([&] { return !std::filesystem::exists(std::filesystem::path(shm).parent_path()); }, 10000))
      << shm << " outlived its pod";
  EXPECT_EQ(Value(w, "preload"), "") << w;
  EXPECT_EQ(Value(w, "shm"), "") << w;
  EXPECT_TRUE(d.Stop()) << d.log();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
