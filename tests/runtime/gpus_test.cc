// GPU discovery: fake specs, model-name normalisation, NVML through a stub
// library, and NVML absent.
#include <gtest/gtest.h>

#include <set>

#include "runtime/gpu_models.h"
#include "runtime/runtime.h"

namespace artel::runtime {
namespace {

std::vector<GpuInfo> MustDiscover(const std::string& spec) {
  auto d = MakeFakeDiscovery(spec);
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.status().ToString());
  if (!d.ok()) return {};
  EXPECT_EQ((*d)->mode(), "fake");
  auto gpus = (*d)->Discover();
  EXPECT_TRUE(gpus.ok());
  return gpus.ok() ? *gpus : std::vector<GpuInfo>{};
}

TEST(FakeGpusTest, ParsesMixedSpec) {
  auto gpus = MustDiscover("8xH100-80GB,4xA100-40GB,2xH200-141GB,1xA100-80GB");
  ASSERT_EQ(gpus.size(), 15u);
  std::set<std::string> uuids;
  for (size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(gpus[i].index, static_cast<int>(i));
    EXPECT_EQ(gpus[i].uuid.rfind("GPU-fake-", 0), 0u) << gpus[i].uuid;
    EXPECT_EQ(gpus[i].uuid.substr(gpus[i].uuid.rfind('-') + 1), std::to_string(i));
    uuids.insert(gpus[i].uuid);
    EXPECT_TRUE(gpus[i].healthy);
    EXPECT_FALSE(gpus[i].mig_enabled);
  }
  EXPECT_EQ(uuids.size(), 15u);
  EXPECT_EQ(gpus[0].model, "H100-80GB");
  EXPECT_EQ(gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpus[0].memory_bytes, int64_t{80} << 30);
  EXPECT_EQ(gpus[8].model, "A100-40GB");
  EXPECT_EQ(gpus[8].memory_bytes, int64_t{40} << 30);
  EXPECT_EQ(gpus[12].model, "H200-141GB");
  EXPECT_EQ(gpus[12].memory_bytes, int64_t{141} << 30);
  EXPECT_EQ(gpus[14].model, "A100-80GB");
  // Deterministic: the same spec gives the same UUIDs.
  auto again = MustDiscover("8xH100-80GB,4xA100-40GB,2xH200-141GB,1xA100-80GB");
  ASSERT_EQ(again.size(), gpus.size());
  EXPECT_EQ(again[14].uuid, gpus[14].uuid);
}

TEST(FakeGpusTest, CountDefaultsToOneCaseAndSpacesAndMig) {
  auto gpus = MustDiscover(" h100-80gb , 2x l4-24GB:mig");
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].model, "H100-80GB");
  EXPECT_EQ(gpus[1].model, "L4-24GB");
  EXPECT_TRUE(gpus[2].mig_enabled);
  EXPECT_FALSE(gpus[0].mig_enabled);
}

TEST(FakeGpusTest, ErrorsNameTheItem) {
  struct Case {
    const char* spec;
    const char* want;
  };
  const Case cases[] = {
      {"", "empty"},
      {"8xH100-81GB", "item 1 \"8xH100-81GB\": unknown model \"H100-81GB\" (known: "},
      {"8xH100-80GB,", "item 2 \"\": empty item"},
      {"0xH100-80GB", "count must be at least 1"},
      {"99999999xH100-80GB", "more than 1024 GPUs"},
      {"1000xH100-80GB,100xA100-40GB", "item 2"},
      {"2xH100-80GB:shared", "unknown option \"shared\""},
      {"8x", "unknown model \"\""},
      {"4yA100-40GB", "unknown model \"4yA100-40GB\""},
  };
  for (const Case& c : cases) {
    auto d = MakeFakeDiscovery(c.spec);
    ASSERT_FALSE(d.ok()) << c.spec;
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find(c.want), std::string::npos)
        << c.spec << " -> " << d.status().message();
  }
}

TEST(FakeGpusTest, H100PcieIsAModelOfItsOwn) {
  auto gpus = MustDiscover("1xh100-pcie,1xH100-80GB");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].model, "H100-PCIe");
  EXPECT_EQ(gpus[0].name, "NVIDIA H100 PCIe");
  EXPECT_EQ(gpus[0].memory_bytes, int64_t{80} << 30);
  EXPECT_EQ(gpus[1].model, "H100-80GB");
}

TEST(GpuModelsTest, NormalizesNvmlNames) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 80GB HBM3", 81559 * kMiB), "H100-80GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 NVL", 95830 * kMiB), "H100-94GB");
  // A name in the table is that model: H100 PCIe has the SXM's size.
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H100 PCIe", 81559 * kMiB), "H100-PCIe");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA H200", 143771 * kMiB), "H200-141GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100-SXM4-40GB", 40960 * kMiB), "A100-40GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA A100 80GB PCIe", 81920 * kMiB), "A100-80GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA L4", 23034 * kMiB), "L4-24GB");
  EXPECT_EQ(NormalizeGpuModel("NVIDIA L40S", 46068 * kMiB), "L40S-48GB");
  EXPECT_EQ(NormalizeGpuModel("Tesla T4", 15360 * kMiB), "T4-16GB");
  // Unknown families keep their name and the memory rounded to GiB.
  EXPECT_EQ(NormalizeGpuModel("NVIDIA GeForce RTX 4090", 24564 * kMiB), "4090-24GB");
  EXPECT_EQ(NormalizeGpuModel("", 0), "GPU-0GB");
}

TEST(GpuModelsTest, MigProfileFromName) {
  EXPECT_EQ(MigProfileFromName("NVIDIA H100 80GB HBM3 MIG 3g.40gb"), "3g.40gb");
  EXPECT_EQ(MigProfileFromName("NVIDIA A100-SXM4-40GB MIG 1g.5gb+me"), "1g.5gb+me");
  EXPECT_EQ(MigProfileFromName("NVIDIA A100-SXM4-40GB"), "");
  EXPECT_EQ(MigProfileFromName("MIG x"), "");
}

TEST(NvmlTest, AbsentLibraryIsAClearError) {
  auto d = MakeNvmlDiscovery("libnvidia-ml-artel-test-absent.so.1");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(d.status().message().find("NVML not available"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("--fake-gpus"), std::string::npos);
}

TEST(NvmlTest, DefaultLibraryEitherWorksOrSaysWhy) {
  auto d = MakeNvmlDiscovery();
  if (!d.ok()) {  // The usual case on CI hosts: no driver.
    EXPECT_NE(d.status().message().find("libnvidia-ml.so.1"), std::string::npos) << d.status().message();
    return;
  }
  EXPECT_EQ((*d)->mode(), "nvml");
  auto gpus = (*d)->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  for (const GpuInfo& g : *gpus) EXPECT_FALSE(g.uuid.empty());
}

TEST(NvmlTest, LibraryWithoutRequiredSymbolsIsRefused) {
  auto d = MakeNvmlDiscovery("libm.so.6");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("missing nvmlInit_v2"), std::string::npos) << d.status().message();
}

TEST(NvmlTest, ReadsInventoryMigAndProcessesThroughStub) {
  auto d = MakeNvmlDiscovery(ARTEL_STUB_NVML);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)->mode(), "nvml");
  auto gpus = (*d)->Discover();
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  const GpuInfo& h100 = (*gpus)[0];
  EXPECT_EQ(h100.uuid, "GPU-stub-0");
  EXPECT_EQ(h100.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.model, "H100-80GB");
  EXPECT_EQ(h100.memory_bytes, int64_t{81559} << 20);
  EXPECT_EQ(h100.memory_used_bytes, int64_t{1} << 30);
  EXPECT_EQ(h100.utilization_pct, 37);
  EXPECT_FALSE(h100.mig_enabled);
  ASSERT_EQ(h100.processes.size(), 2u);
  EXPECT_EQ(h100.processes[0].pid, 4242);
  EXPECT_EQ(h100.processes[1].used_bytes, int64_t{2} << 30);

  const GpuInfo& a100 = (*gpus)[1];
  EXPECT_EQ(a100.model, "A100-40GB");
  EXPECT_TRUE(a100.mig_enabled);
  EXPECT_EQ(a100.utilization_pct, 0);
  ASSERT_EQ(a100.mig_instances.size(), 2u);
  EXPECT_EQ(a100.mig_instances[0].profile, "3g.20gb");
  EXPECT_EQ(a100.mig_instances[0].uuid, "MIG-stub-1-0");
  EXPECT_EQ(a100.mig_instances[0].start_slot, 0);
  EXPECT_EQ(a100.mig_instances[1].profile, "1g.5gb");
  EXPECT_EQ(a100.mig_instances[1].start_slot, 6);
}

}  // namespace
}  // namespace artel::runtime
