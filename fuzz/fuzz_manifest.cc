// libFuzzer target: the manifest loader (Kubernetes-style YAML, Kueue,
// Volcano and KAI dialects) on arbitrary text, then validation of whatever
// parsed. Errors are expected; crashes, sanitizer reports, timeouts and
// memory blow-ups are bugs (docs/testing.md#fuzzing).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "manifest/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  artel::core::Config config;
  artel::manifest::Extras extras;
  artel::Status s = artel::manifest::ParseInto(text, "fuzz.yaml", &config, &extras);
  if (s.ok()) {
    (void)artel::manifest::Validate(config);
    (void)artel::manifest::Warnings(config);
  }
  (void)s.ToString();
  std::vector<artel::core::WorkloadSpec> workloads;
  (void)artel::manifest::ParseWorkloads(text, "fuzz.yaml", &workloads);
  return 0;
}
