// GPU models and NVIDIA MIG slot geometry, as facts (no policy).
//
// A MIG-capable GPU has 8 memory slices and 7 compute slices. A GPU instance
// profile occupies a contiguous run of memory slices that starts at one of
// the profile's allowed start slots (../shared/reference/mig-geometry.md).
// The four models Artel knows (A100-40GB, A100-80GB, H100-80GB, H200-141GB)
// share one slot geometry and differ only in profile names and memory, so the
// geometry is indexed by a model-independent `ProfileShape`:
//
//   shape       slices  compute  starts           max per GPU
//   k1Slice       1       1      {0..6}           7
//   k1SliceMe     1       1      {0..6}           1 (media engines)
//   k1gDouble     2       1      {0,2,4,6}        4
//   k2g           2       2      {0,2,4}          3
//   k3g           4       3      {0,4}            2
//   k4g           4       4      {0}              1
//   k7g           8       7      {0}              1 (needs an empty GPU)
//
// A GPU's MIG state is summarised by an 8-bit mask of memory slices held by
// instances, the compute slices they hold and whether the media-engine
// instance exists. `Headroom` scores such a state by how many instances of
// each shape (widest first) could still be created in it; placement policies
// compare headrooms to leave the largest free blocks (mig_policy.h).
//
// Memory per profile is the MiB figure NVML reports where the reference gives
// it (A100-40GB, A100-80GB; H100-80GB is taken to equal A100-80GB). For
// H200-141GB the reference gives none, so the profile name's gigabytes are
// read as 10^9 bytes and rounded down to MiB: a conservative figure.
//
// Thread-safety: immutable tables; all functions are pure.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace artel::core::placement {

inline constexpr int kMigMemorySlices = 8;
inline constexpr int kMigComputeSlices = 7;
inline constexpr int kNumShapes = 7;

enum class ProfileShape : int8_t { k1Slice = 0, k1SliceMe, k1gDouble, k2g, k3g, k4g, k7g };

struct ShapeInfo {
  int8_t slices;       // memory slices
  int8_t compute;      // compute slices
  uint8_t start_mask;  // bit s set = may start at slot s
  int8_t max_instances;
  bool media;
};

const ShapeInfo& Shape(int shape);

struct GpuModelInfo {
  const char* name;                             // canonical, e.g. "H100-80GB"
  int64_t memory_mib;                           // whole GPU
  std::array<const char*, kNumShapes> profile;  // per shape, e.g. "3g.40gb"
  std::array<int64_t, kNumShapes> profile_mib;  // per shape
};

inline constexpr int kNumGpuModels = 4;
const GpuModelInfo& GpuModel(int model);

// Maps a product name to a model index, or -1 when Artel has no MIG geometry
// for it. Accepts canonical names and the usual product strings
// ("NVIDIA-H100-80GB-HBM3", "A100-SXM4-40GB", "NVIDIA H200"), case-insensitive.
int FindGpuModel(std::string_view product);

// The shape whose profile on `model` is named `profile` ("3g.40gb"), or -1.
// A media-engine profile may be named NVIDIA's way ("1g.10gb+me") or the
// way NVIDIA's device plugin writes it into a Kubernetes resource name,
// where '+' is not allowed ("1g.10gb.me").
int FindProfile(int model, std::string_view profile);

// A profile name as NVIDIA names the GPU instance profile: "1g.10gb.me"
// (the device plugin's resource-name form) -> "1g.10gb+me"; any other name
// is returned as it is.
std::string CanonicalMigProfile(std::string_view profile);

// The extended resource NVIDIA's device plugin advertises for a profile
// (MIG strategy "mixed"): "nvidia.com/mig-" + the profile with '+' -> '.',
// e.g. "1g.10gb+me" -> "nvidia.com/mig-1g.10gb.me".
std::string MigResourceName(std::string_view profile);

// The smallest shape (fewest memory slices, then fewest compute slices; never
// a media-engine shape) whose memory on `model` is at least `memory_mib` and
// whose compute is at least `compute_slices`. -1 when none fits.
int SmallestShapeFor(int model, int64_t memory_mib, int compute_slices);

// Memory slices [start, start + slices) as a mask.
inline uint8_t SliceMask(int shape, int start) {
  return static_cast<uint8_t>(((1u << Shape(shape).slices) - 1u) << start);
}

// True if `shape` may be created at `start` in a GPU whose held slices are
// `mask`, holding `compute` compute slices and `media` (media-engine instance
// present). Checks the start slot, overlap, the compute budget, the
// media-engine limit and that 7g needs an empty GPU.
bool CanCreate(int shape, int start, uint8_t mask, int compute, bool media);

// Headroom of a MIG state: for each non-media shape from the widest (7g) to
// the narrowest (1 slice), how many instances of it alone could still be
// created, packed into one integer that compares lexicographically (widest
// shape most significant). Larger is better: it means larger free blocks.
uint32_t Headroom(uint8_t mask, int compute, bool media);

// Number of instances of `shape` that could be created (upper bound used to
// estimate a node's capacity).
int CountCreatable(int shape, uint8_t mask, int compute, bool media);

// "3g.40gb@4" -> (profile "3g.40gb", start 4). Returns false on bad syntax.
bool ParseMigInstance(std::string_view text, std::string* profile, int* start);

}  // namespace artel::core::placement
