// libFuzzer target: what arteld does with a request body (JSON or YAML) on
// POST .../workloads: parse, decode into a workload spec, and encode the spec
// as the journal would. Every accepted spec must round-trip, and every error
// must be encodable as the JSON error body (no invalid UTF-8 may get through).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  using artel::server::Json;
  auto parsed = artel::server::ParseBody(body);
  if (!parsed.ok()) {
    (void)artel::server::ErrorJson(parsed.status()).dump();
    return 0;
  }
  (void)parsed->dump();  // throws on a string that is not UTF-8
  std::string gen;
  auto spec = artel::server::WorkloadFromObject(*parsed, &gen);
  if (!spec.ok()) {
    (void)artel::server::ErrorJson(spec.status()).dump();
    return 0;
  }
  if (spec->name.empty()) spec->name = gen + "abcde";  // as arteld does for generateName
  Json encoded = artel::server::WorkloadSpecToJson(*spec);
  std::string journal = encoded.dump();
  // What recovery reads back must decode to the same spec.
  auto again = artel::server::WorkloadFromJson(Json::parse(journal));
  if (!again.ok() || artel::server::WorkloadSpecToJson(*again) != encoded) std::abort();
  return 0;
}
