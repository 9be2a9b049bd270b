#include "runtime/gpu_models.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace artel::runtime {

const std::vector<GpuModel>& KnownGpuModels() {
  static const std::vector<GpuModel> kModels = {
      {"B200-180GB", "B200", 180, "NVIDIA B200"},
      {"H200-141GB", "H200", 141, "NVIDIA H200"},
      {"H100-80GB", "H100", 80, "NVIDIA H100 80GB HBM3"},
      {"H100-PCIe", "H100", 80, "NVIDIA H100 PCIe"},
      {"H100-94GB", "H100", 94, "NVIDIA H100 NVL"},
      {"A100-80GB", "A100", 80, "NVIDIA A100-SXM4-80GB"},
      {"A100-40GB", "A100", 40, "NVIDIA A100-SXM4-40GB"},
      {"L40S-48GB", "L40S", 48, "NVIDIA L40S"},
      {"A10-24GB", "A10", 24, "NVIDIA A10"},
      {"L4-24GB", "L4", 24, "NVIDIA L4"},
      {"V100-32GB", "V100", 32, "Tesla V100-SXM2-32GB"},
      {"T4-16GB", "T4", 16, "Tesla T4"},
  };
  return kModels;
}

namespace {

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> Tokens(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == '-' || c == '_') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

const GpuModel* FindGpuModel(const std::string& model) {
  std::string want = Upper(model);
  for (const GpuModel& m : KnownGpuModels()) {
    if (want == Upper(m.model)) return &m;
  }
  return nullptr;
}

std::string NormalizeGpuModel(const std::string& nvml_name, int64_t memory_bytes) {
  // A name in the table is that model (H100 PCIe and SXM share a size).
  for (const GpuModel& m : KnownGpuModels()) {
    if (Upper(nvml_name) == Upper(m.nvml_name)) return m.model;
  }
  std::vector<std::string> tokens = Tokens(Upper(nvml_name));
  std::string family;
  for (const std::string& t : tokens) {
    for (const GpuModel& m : KnownGpuModels()) {
      if (t == m.family) family = t;
    }
    if (!family.empty()) break;
  }
  if (family.empty()) {
    for (const std::string& t : tokens) {
      if (t != "NVIDIA" && t != "TESLA" && t != "GEFORCE" && t != "QUADRO" && t != "RTX") {
        family = t;
        break;
      }
    }
  }
  if (family.empty()) family = "GPU";
  double gib = static_cast<double>(memory_bytes) / static_cast<double>(int64_t{1} << 30);
  // The closest nominal size of this family, within 12% (drivers reserve
  // some memory, and vendors round "141GB" from 140.4 GiB).
  const GpuModel* best = nullptr;
  double best_diff = 0;
  for (const GpuModel& m : KnownGpuModels()) {
    if (family != m.family) continue;
    double diff = std::abs(gib - m.memory_gib);
    if (diff <= 0.12 * m.memory_gib && (best == nullptr || diff < best_diff)) {
      best = &m;
      best_diff = diff;
    }
  }
  if (best != nullptr) return best->model;
  return family + "-" + std::to_string(static_cast<int64_t>(std::llround(gib))) + "GB";
}

std::string MigProfileFromName(const std::string& name) {
  size_t pos = name.find("MIG ");
  if (pos == std::string::npos) return std::string();
  pos += 4;
  size_t end = name.find(' ', pos);
  std::string profile = name.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
  // A profile looks like "<n>g.<m>gb", optionally with a suffix ("+me").
  if (profile.size() < 5 || !std::isdigit(static_cast<unsigned char>(profile[0])) ||
      profile.find("g.") == std::string::npos) {
    return std::string();
  }
  return profile;
}

}  // namespace artel::runtime
