// libFuzzer target: the CSV trace reader (`artel sim --trace`). The first
// byte picks the reader's options (preset, header, strictness, delimiter,
// time unit) so that one corpus covers them; the rest is the file.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint8_t opts = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  artel::sim::TraceFormat format;
  constexpr artel::sim::TracePreset kPresets[] = {
      artel::sim::TracePreset::kAuto, artel::sim::TracePreset::kGeneric, artel::sim::TracePreset::kPhilly,
      artel::sim::TracePreset::kItp};
  format.preset = kPresets[opts & 3];
  format.header = (opts & 4) == 0;
  format.strict = (opts & 8) != 0;
  format.delimiter = (opts & 16) ? '\t' : ',';
  format.time_unit_ms = (opts & 32) ? 1.0 : 1000.0;
  if (opts & 64) format.gpu_scale = 0.01;
  if (format.preset == artel::sim::TracePreset::kGeneric) {
    if (opts & 128) {
      format.columns = {{"submit", "1"}, {"duration", "2"}, {"gpus", "3"}, {"tenant", "4"}};
    } else {
      format.columns = {{"submit", "submit"}, {"duration", "duration"}, {"gpus", "gpus"}, {"user", "user"}};
    }
  }
  auto trace = artel::sim::ParseTrace(text, "fuzz.csv", format);
  if (trace.ok()) artel::sim::KeepEarliest(&*trace, 3);
  return 0;
}
