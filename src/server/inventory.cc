#include "server/inventory.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

namespace artel::server {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// NVIDIA's MIG-capable families (A100, A30, H100, H200, B200).
bool MigCapable(const runtime::GpuInfo& g) {
  std::string family = g.model.substr(0, g.model.find('-'));
  for (const char* f : {"A100", "A30", "H100", "H200", "GH200", "B200", "GB200"}) {
    if (family == f) return true;
  }
  return false;
}

bool SelectorMatches(const NodePoolConfig& p, const runtime::GpuInfo& g) {
  if (!p.product.empty()) {
    std::string want = Lower(p.product);
    if (want != Lower(g.model) && want != Lower(GfdProduct(g))) return false;
  }
  if (p.mig.has_value() && *p.mig != g.mig_enabled) return false;
  if (!p.indices.empty() && std::find(p.indices.begin(), p.indices.end(), g.index) == p.indices.end())
    return false;
  return true;
}

core::placement::GpuSpec SpecOf(const runtime::GpuInfo& g) {
  core::placement::GpuSpec spec;
  spec.model = g.model;
  spec.memory_mib = g.memory_bytes / (1024 * 1024);
  spec.uuid = g.uuid;
  spec.mig = g.mig_enabled;
  for (const runtime::MigInstanceInfo& m : g.mig_instances)
    spec.mig_layout.push_back({m.profile, m.start_slot});
  return spec;
}

std::string TaintText(const core::Taint& t) {
  return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect;
}

}  // namespace

std::string GfdProduct(const runtime::GpuInfo& g) {
  std::string s = g.name.empty() ? g.model : g.name;
  for (char& c : s) {
    if (c == ' ') c = '-';
  }
  return s;
}

std::map<std::string, std::string> GpuFeatureLabels(const std::vector<const runtime::GpuInfo*>& gpus) {
  std::map<std::string, std::string> l;
  if (gpus.empty()) return l;
  const runtime::GpuInfo& g = *gpus.front();
  l["nvidia.com/gpu.present"] = "true";
  l["nvidia.com/gpu.product"] = GfdProduct(g);
  l["nvidia.com/gpu.memory"] = std::to_string(g.memory_bytes / (1024 * 1024));
  l["nvidia.com/gpu.count"] = std::to_string(gpus.size());
  l["nvidia.com/mig.capable"] = MigCapable(g) ? "true" : "false";
  bool mig = g.mig_enabled;
  l["nvidia.com/mig.strategy"] = mig ? "mixed" : "none";
  if (!mig) {
    l["nvidia.com/mig.config"] = "all-disabled";
  } else {
    // "all-<profile>" when every GPU is already cut into one profile; a
    // dynamic pool (no instances yet) gets its mig.config from the config.
    std::set<std::string> profiles;
    bool all_cut = true;
    for (const runtime::GpuInfo* x : gpus) {
      all_cut = all_cut && !x->mig_instances.empty();
      for (const runtime::MigInstanceInfo& m : x->mig_instances) profiles.insert(m.profile);
    }
    if (all_cut && profiles.size() == 1) {
      // mig-parted's config names spell a media-engine profile with '.'
      // (all-1g.10gb.me), as the device plugin's resource names do.
      std::string name = *profiles.begin();
      std::replace(name.begin(), name.end(), '+', '.');
      l["nvidia.com/mig.config"] = "all-" + name;
    }
  }
  return l;
}

Result<std::vector<HostPool>> BuildHostPools(const std::string& host,
                                             const std::vector<runtime::GpuInfo>& gpus,
                                             const InventoryOptions& options, bool offer_real_mig,
                                             std::vector<std::string>* notes) {
  std::vector<bool> taken(gpus.size(), false);
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].mig_enabled && !offer_real_mig) taken[i] = true;
  }
  std::vector<HostPool> out;
  std::set<std::string> names;
  auto finish = [&](HostPool p, const std::map<std::string, std::string>& own_labels,
                    const std::vector<core::Taint>& own_taints) -> Status {
    if (!names.insert(p.name).second) return InvalidArgument("node pool " + p.name + " is defined twice");
    std::vector<const runtime::GpuInfo*> members;
    for (int g : p.gpus) members.push_back(&gpus[static_cast<size_t>(g)]);
    p.node.name = host + "/" + p.name;
    p.node.labels = GpuFeatureLabels(members);
    p.node.labels[kNodePoolLabel] = p.name;
    p.node.labels[kHostLabel] = host;
    for (const auto& [k, v] : options.labels) p.node.labels[k] = v;
    for (const auto& [k, v] : own_labels) p.node.labels[k] = v;
    p.node.taints = options.taints;
    p.node.taints.insert(p.node.taints.end(), own_taints.begin(), own_taints.end());
    for (const runtime::GpuInfo* g : members) p.node.gpus.push_back(SpecOf(*g));
    out.push_back(std::move(p));
    return Status::Ok();
  };
  for (const NodePoolConfig& pc : options.pools) {
    HostPool p;
    p.name = pc.name;
    if (pc.has_gpus) {
      for (size_t i = 0; i < gpus.size(); ++i) {
        if (taken[i] || !SelectorMatches(pc, gpus[i])) continue;
        if (pc.count > 0 && static_cast<int>(p.gpus.size()) >= pc.count) break;
        taken[i] = true;
        p.gpus.push_back(static_cast<int>(i));
      }
      if (p.gpus.empty()) {
        if (notes != nullptr) {
          notes->push_back("node pool " + pc.name + (pc.where.empty() ? "" : " (" + pc.where + ")") +
                           " matches no GPU of this host that an earlier pool did not take; it is left out");
        }
        continue;
      }
      if (pc.count > 0 && static_cast<int>(p.gpus.size()) < pc.count && notes != nullptr) {
        notes->push_back("node pool " + pc.name + " asks for " + std::to_string(pc.count) +
                         " GPUs but only " + std::to_string(p.gpus.size()) + " match");
      }
    }
    if (Status s = finish(std::move(p), pc.labels, pc.taints); !s.ok()) return s;
  }
  // The rest: one pool per model and MIG mode, in index order of first GPU.
  std::vector<std::tuple<std::string, bool>> keys;
  std::map<std::tuple<std::string, bool>, std::vector<int>> groups;
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (taken[i]) continue;
    auto k = std::make_tuple(gpus[i].model, gpus[i].mig_enabled);
    if (!groups.count(k)) keys.push_back(k);
    groups[k].push_back(static_cast<int>(i));
  }
  for (const auto& k : keys) {
    HostPool p;
    p.name = Lower(std::get<0>(k)) + (std::get<1>(k) ? "-mig" : "");
    p.gpus = groups[k];
    if (names.count(p.name)) p.name += "-" + std::to_string(p.gpus.front());
    if (Status s = finish(std::move(p), {}, {}); !s.ok()) return s;
  }
  return out;
}

bool FlavorMatchesNode(const core::ResourceFlavorSpec& flavor, const core::placement::NodeSpec& node,
                       std::string* why) {
  for (const auto& [k, v] : flavor.node_labels) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) {
      if (why != nullptr) {
        *why = it == node.labels.end() ? "has no label " + k : "has " + k + "=" + it->second + ", not " + v;
      }
      return false;
    }
  }
  for (const core::Taint& t : node.taints) {
    if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
    bool ok = false;
    for (const core::Toleration& tol : flavor.tolerations) ok = ok || tol.Tolerates(t);
    if (!ok) {
      if (why != nullptr) *why = "has taint " + TaintText(t) + " that the flavor does not tolerate";
      return false;
    }
  }
  return true;
}

std::map<std::string, std::string> FlavorsWithoutNodes(const core::Config& config,
                                                       const std::vector<core::placement::NodeSpec>& nodes) {
  std::map<std::string, std::string> out;
  for (const core::ResourceFlavorSpec& f : config.flavors) {
    std::string reasons;
    bool any = false;
    int listed = 0;
    for (const core::placement::NodeSpec& n : nodes) {
      std::string why;
      if (FlavorMatchesNode(f, n, &why)) {
        any = true;
        break;
      }
      if (++listed <= 3) {
        reasons += (reasons.empty() ? "" : "; ") + n.name + " " + why;
      } else if (listed == 4) {
        reasons += "; ...";
      }
    }
    if (any) continue;
    std::string labels;
    for (const auto& [k, v] : f.node_labels) labels += (labels.empty() ? "" : ",") + k + "=" + v;
    out[f.name] = "ResourceFlavor " + f.name + " matches no node of this host" +
                  (labels.empty() ? "" : " (nodeLabels " + labels + ")") +
                  (nodes.empty() ? ": the host has no nodes" : ": " + reasons) +
                  "; its quota cannot be used here";
  }
  return out;
}

std::map<std::string, std::string> FlavorGpuProducts(const core::Config& config,
                                                     const std::vector<core::placement::NodeSpec>& nodes) {
  static const std::string kProduct = "nvidia.com/gpu.product";
  std::map<std::string, std::string> out;
  for (const core::ResourceFlavorSpec& f : config.flavors) {
    auto own = f.node_labels.find(kProduct);
    if (own != f.node_labels.end()) {
      out[f.name] = own->second;
      continue;
    }
    std::set<std::string> products;
    bool unknown = false;
    for (const core::placement::NodeSpec& n : nodes) {
      if (!FlavorMatchesNode(f, n, nullptr)) continue;
      auto it = n.labels.find(kProduct);
      if (it == n.labels.end()) {
        unknown = true;
      } else {
        products.insert(it->second);
      }
    }
    if (products.size() == 1 && !unknown) out[f.name] = *products.begin();
  }
  return out;
}

}  // namespace artel::server
