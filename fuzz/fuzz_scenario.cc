// libFuzzer target: the scenario reader (`artel test`) on arbitrary text.
// Scenario files may name other files relative to their own directory; the
// input is read as if it were /nonexistent/fuzz.yaml so nothing is found.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const artel::sim::ScenarioDoc& doc : artel::sim::ParseScenarios(text, "/nonexistent/fuzz.yaml")) {
    (void)doc.error.ToString();
  }
  return 0;
}
