// GPU models Artel knows by name: the table behind `--fake-gpus` specs and
// the normalisation of NVML device names ("NVIDIA A100-SXM4-40GB") to model
// names ("A100-40GB"). The table is documented in docs/gpus.md.
//
// Thread-safety: immutable data and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace artel::runtime {

struct GpuModel {
  const char* model;      // normalised name, e.g. "H100-80GB"
  const char* family;     // e.g. "H100"
  int memory_gib;         // nominal memory, as in the model name
  const char* nvml_name;  // what NVML reports as the device name
};

const std::vector<GpuModel>& KnownGpuModels();

// Returns the entry whose `model` equals `model` (case-insensitive), or null.
const GpuModel* FindGpuModel(const std::string& model);

// Derives the model name from an NVML device name and its total memory: the
// family is the first known family token of the name (or its first token that
// is not a vendor word), and the size is the nominal size of the closest known
// model of that family, or the memory rounded to GiB.
std::string NormalizeGpuModel(const std::string& nvml_name, int64_t memory_bytes);

// "3g.40gb" from a MIG device name such as "NVIDIA H100 80GB HBM3 MIG 3g.40gb";
// empty when the name carries no profile.
std::string MigProfileFromName(const std::string& name);

}  // namespace artel::runtime
