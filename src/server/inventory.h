// The host's inventory as the placement library sees it (docs/daemon.md,
// "Node pools"): the host's GPUs grouped into node pools, each pool one
// placement node named "<host>/<pool>" with labels derived from its GPUs as
// NVIDIA GPU feature discovery derives them (nvidia.com/gpu.product,
// nvidia.com/gpu.memory, nvidia.com/gpu.count, nvidia.com/mig.capable,
// nvidia.com/mig.strategy, nvidia.com/mig.config), plus labels and taints
// from arteld's configuration (`nodeLabels`, `nodeTaints`, `nodePools`).
//
// A ResourceFlavor has capacity on this host only in the pools whose labels
// carry its nodeLabels and whose taints its tolerations tolerate;
// `FlavorsWithoutNodes` names the flavors that match no pool.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/placement/placement.h"
#include "core/status.h"
#include "runtime/runtime.h"

namespace artel::server {

// One `nodePools` entry of arteld's configuration.
struct NodePoolConfig {
  std::string name;
  // Without `gpus` the pool is a CPU-only node (no GPU of the host).
  bool has_gpus = false;
  // GPU selector: every set field must match; the GPUs matched by an earlier
  // pool are not offered to later ones.
  std::string product;       // model ("A100-80GB") or GFD product ("NVIDIA-A100-SXM4-80GB"), any case
  std::optional<bool> mig;   // MIG mode on/off
  std::vector<int> indices;  // host GPU indices; empty = any
  int count = 0;             // at most this many GPUs (the first free ones); 0 = all that match
  std::map<std::string, std::string> labels;
  std::vector<core::Taint> taints;
  std::string where;  // "file:line:col" for messages
};

struct InventoryOptions {
  std::map<std::string, std::string> labels;  // added to every pool
  std::vector<core::Taint> taints;            // added to every pool
  std::vector<NodePoolConfig> pools;
};

struct HostPool {
  std::string name;                // pool name (label artel.dev/node-pool)
  core::placement::NodeSpec node;  // name "<host>/<pool>"
  std::vector<int> gpus;           // host GPU indices, in the node's GPU order
};

inline constexpr char kNodePoolLabel[] = "artel.dev/node-pool";
inline constexpr char kHostLabel[] = "artel.dev/host";

// The GFD form of a GPU's product name: NVML's name with spaces as dashes
// ("NVIDIA A100-SXM4-80GB" -> "NVIDIA-A100-SXM4-80GB").
std::string GfdProduct(const runtime::GpuInfo& g);

// GPU feature discovery labels for a group of GPUs of one model.
std::map<std::string, std::string> GpuFeatureLabels(const std::vector<const runtime::GpuInfo*>& gpus);

// Groups `gpus` into node pools: the configured pools first (in order; each
// takes the not yet taken GPUs its selector matches), then one pool per
// (model, MIG mode) for the rest, named after the model ("a100-80gb",
// "a100-80gb-mig"). GPUs that `offer` rejects are left out (real MIG-mode
// GPUs: MIG reconfiguration is not implemented). Notes (a configured pool
// that matched no GPU) go to *notes.
Result<std::vector<HostPool>> BuildHostPools(const std::string& host,
                                             const std::vector<runtime::GpuInfo>& gpus,
                                             const InventoryOptions& options, bool offer_real_mig,
                                             std::vector<std::string>* notes);

// Whether pods admitted on `flavor` may run on `node`: the node has every
// nodeLabel of the flavor, and the flavor's tolerations tolerate each of the
// node's NoSchedule and NoExecute taints.
bool FlavorMatchesNode(const core::ResourceFlavorSpec& flavor, const core::placement::NodeSpec& node,
                       std::string* why = nullptr);

// flavor name -> why it matches no node, for every flavor that matches none.
std::map<std::string, std::string> FlavorsWithoutNodes(const core::Config& config,
                                                       const std::vector<core::placement::NodeSpec>& nodes);

// flavor name -> the one GPU product (label nvidia.com/gpu.product) its
// quota stands for: the flavor's own nodeLabels value when it sets one, else
// the product of every node it matches when they all agree. Flavors whose
// nodes are of several products, or of none known, are left out (issue 16:
// the UI groups flavors by product and must never add unlike ones).
std::map<std::string, std::string> FlavorGpuProducts(const core::Config& config,
                                                     const std::vector<core::placement::NodeSpec>& nodes);

}  // namespace artel::server
