// `FakeDiscovery`: an inventory built from a `--fake-gpus` spec, for hosts
// without GPUs. Grammar (docs/gpus.md):
//
//   spec  := item ("," item)*
//   item  := [COUNT "x"] MODEL [":mig"]
//
// GPUs are indexed in spec order. UUIDs are deterministic per host
// ("GPU-fake-<host>-<index>"), so a restarted daemon sees the same devices.
#include <unistd.h>

#include <cctype>
#include <climits>
#include <string>

#include "runtime/gpu_models.h"
#include "runtime/runtime.h"

namespace artel::runtime {
namespace {

constexpr int kMaxFakeGpus = 1024;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return std::string();
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string out;
  for (const char* p = buf; *p != '\0'; ++p) {
    char c = *p;
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '-';
  }
  return out;
}

std::string KnownList() {
  std::string out;
  for (const GpuModel& m : KnownGpuModels()) {
    if (!out.empty()) out += ", ";
    out += m.model;
  }
  return out;
}

class FakeDiscovery final : public GpuDiscovery {
 public:
  explicit FakeDiscovery(std::vector<GpuInfo> gpus) : gpus_(std::move(gpus)) {}
  std::string mode() const override { return "fake"; }
  Result<std::vector<GpuInfo>> Discover() override { return gpus_; }

 private:
  const std::vector<GpuInfo> gpus_;
};

}  // namespace

Result<std::unique_ptr<GpuDiscovery>> MakeFakeDiscovery(const std::string& spec) {
  const std::string where = "fake GPU spec \"" + spec + "\"";
  if (Trim(spec).empty()) return InvalidArgument(where + ": empty (example: 8xH100-80GB,4xA100-40GB)");
  std::string host = HostName();
  std::vector<GpuInfo> gpus;
  size_t start = 0;
  for (int item_no = 1;; ++item_no) {
    size_t comma = spec.find(',', start);
    std::string item =
        Trim(spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    std::string at = where + ": item " + std::to_string(item_no) + " \"" + item + "\"";
    if (item.empty()) return InvalidArgument(at + ": empty item");
    long count = 1;
    std::string model = item;
    size_t x = item.find_first_of("xX");
    if (x != std::string::npos && x > 0 && std::isdigit(static_cast<unsigned char>(item[0]))) {
      std::string digits = item.substr(0, x);
      for (char c : digits) {
        if (!std::isdigit(static_cast<unsigned char>(c)))
          return InvalidArgument(at + ": count must be a number");
      }
      count = digits.size() > 6 ? LONG_MAX : std::stol(digits);
      model = Trim(item.substr(x + 1));
    }
    bool mig = false;
    if (size_t colon = model.find(':'); colon != std::string::npos) {
      std::string opt = model.substr(colon + 1);
      if (opt != "mig") return InvalidArgument(at + ": unknown option \"" + opt + "\" (only \":mig\")");
      mig = true;
      model = model.substr(0, colon);
    }
    if (count < 1) return InvalidArgument(at + ": count must be at least 1");
    if (count > kMaxFakeGpus || static_cast<long>(gpus.size()) + count > kMaxFakeGpus) {
      return InvalidArgument(at + ": more than " + std::to_string(kMaxFakeGpus) + " GPUs in total");
    }
    const GpuModel* m = FindGpuModel(model);
    if (m == nullptr) {
      return InvalidArgument(at + ": unknown model \"" + model + "\" (known: " + KnownList() + ")");
    }
    for (long i = 0; i < count; ++i) {
      GpuInfo g;
      g.index = static_cast<int>(gpus.size());
      g.uuid = "GPU-fake-" + host + "-" + std::to_string(g.index);
      g.model = m->model;
      g.name = m->nvml_name;
      g.memory_bytes = int64_t{m->memory_gib} << 30;
      g.mig_enabled = mig;
      gpus.push_back(std::move(g));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::unique_ptr<GpuDiscovery>(std::make_unique<FakeDiscovery>(std::move(gpus)));
}

}  // namespace artel::runtime
