#include "sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <regex>
#include <sstream>

#include "core/placement/gpu_geometry.h"
#include "core/placement/placement.h"
#include "manifest/manifest.h"
#include "manifest/typed_fields.h"
#include "manifest/yaml_util.h"
#include "sim/duration.h"
#include "sim/yaml_field.h"

namespace artel::sim {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kApiVersion = "artel.dev/v1alpha1";
constexpr std::string_view kKind = "Scenario";
// A guard against a typo such as `gpu-{0..100000000}` eating all memory.
constexpr size_t kMaxExpandedNodes = 100000;

// Everything the document reader needs besides the YAML itself.
struct Context {
  std::string file;
  std::string dir;        // directory of `file`, for `config: [{file: ...}]`
  std::string_view text;  // raw text, to locate inline block scalars
};

template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.ok() ? Status::Ok() : r.status();
}

Status ReadDuration(const Field& f, core::Time* out) {
  ARTEL_ASSIGN_OR_RETURN(std::string s, f.String());
  Result<core::Time> d = ParseDuration(s);
  if (!d.ok()) return f.Error(d.status().message());
  *out = *d;
  return Status::Ok();
}

Status ReadRef(const Field& f, WorkloadRef* out) {
  ARTEL_ASSIGN_OR_RETURN(out->text, f.String());
  if (out->text.empty()) return f.Error("empty workload name");
  out->pos = f.pos();
  return Status::Ok();
}

Status ReadRefList(const Field& f, std::vector<WorkloadRef>* out) {
  if (f.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(f.RequireSeq());
  std::set<std::string> seen;
  for (const Field& item : f.Items()) {
    WorkloadRef ref;
    ARTEL_RETURN_IF_ERROR(ReadRef(item, &ref));
    if (!seen.insert(ref.text).second) return item.Error("`" + ref.text + "` is listed twice");
    out->push_back(std::move(ref));
  }
  return Status::Ok();
}

Result<std::map<std::string, core::Amount>> ReadQuantityMap(const Field& f) {
  std::map<std::string, core::Amount> out;
  ARTEL_RETURN_IF_ERROR(f.CheckUniqueKeys());
  for (auto& [k, v] : f.Entries()) {
    const std::string key = k.node().Scalar();
    if (key == "artel.dev/gpu-compute") {
      // A fraction of a GPU in sevenths or a decimal: "3/7", "0.5".
      ARTEL_ASSIGN_OR_RETURN(std::string text, v.String());
      auto q = core::placement::ParseGpuCompute(text);
      if (!q.ok()) return v.Error(q.status().message());
      out[key] = *q;
      continue;
    }
    ARTEL_ASSIGN_OR_RETURN(core::Amount q, v.Quantity());
    if (q < 0) return v.Error("must not be negative");
    out[key] = q;
  }
  return out;
}

Status ReadTolerations(const Field& f, std::vector<core::Toleration>* out) {
  if (f.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(f.RequireSeq());
  for (const Field& item : f.Items()) {
    ARTEL_RETURN_IF_ERROR(item.CheckKeys({"key", "operator", "value", "effect", "tolerationSeconds"}));
    core::Toleration t;
    if (item.Has("key")) {
      ARTEL_ASSIGN_OR_RETURN(t.key, item.Key("key").String());
    }
    if (item.Has("operator")) {
      Field op = item.Key("operator");
      ARTEL_ASSIGN_OR_RETURN(t.op, op.String());
      if (t.op != "Equal" && t.op != "Exists") return op.Error("must be Equal or Exists, got " + t.op);
    }
    if (item.Has("value")) {
      ARTEL_ASSIGN_OR_RETURN(t.value, item.Key("value").String());
    }
    if (t.op == "Exists" && !t.value.empty())
      return item.Key("value").Error("must be empty with operator Exists");
    if (t.key.empty() && t.op != "Exists") return item.Error("an empty key needs operator Exists");
    if (item.Has("effect")) {
      Field eff = item.Key("effect");
      ARTEL_ASSIGN_OR_RETURN(t.effect, eff.String());
      if (!t.effect.empty() && t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" &&
          t.effect != "NoExecute") {
        return eff.Error("must be NoSchedule, PreferNoSchedule or NoExecute, got " + t.effect);
      }
    }
    if (item.Has("tolerationSeconds")) {
      ARTEL_RETURN_IF_ERROR(
          StatusOf(item.Key("tolerationSeconds").Int(0, std::numeric_limits<int64_t>::max())));
    }
    out->push_back(std::move(t));
  }
  return Status::Ok();
}

// nodeAffinity: required node selector terms, as in the API
// ([{matchExpressions: [{key, operator, values}], matchFields: [...]}]);
// matchFields supports metadata.name (the node's hostname label).
Status ReadNodeAffinity(const Field& f, std::vector<core::NodeSelectorTerm>* out) {
  if (f.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(f.RequireSeq());
  for (const Field& t : f.Items()) {
    ARTEL_RETURN_IF_ERROR(t.CheckKeys({"matchExpressions", "matchFields"}));
    core::NodeSelectorTerm term;
    for (const char* list_key : {"matchExpressions", "matchFields"}) {
      if (!t.Has(list_key)) continue;
      const bool field = std::string_view(list_key) == "matchFields";
      Field list = t.Key(list_key);
      ARTEL_RETURN_IF_ERROR(list.RequireSeq());
      for (const Field& e : list.Items()) {
        ARTEL_RETURN_IF_ERROR(e.CheckKeys({"key", "operator", "values"}));
        ARTEL_RETURN_IF_ERROR(e.Require("key"));
        ARTEL_RETURN_IF_ERROR(e.Require("operator"));
        core::NodeSelectorRequirement r;
        ARTEL_ASSIGN_OR_RETURN(r.key, e.Key("key").String());
        ARTEL_ASSIGN_OR_RETURN(r.op, e.Key("operator").String());
        if (e.Has("values")) {
          ARTEL_ASSIGN_OR_RETURN(r.values, e.Key("values").StringList());
        }
        if (field) {
          if (r.key != "metadata.name") return e.Key("key").Error("matchFields supports only metadata.name");
          if (r.op != "In" && r.op != "NotIn")
            return e.Key("operator").Error("matchFields supports In and NotIn");
          r.key = "kubernetes.io/hostname";
        }
        std::string culprit;
        std::string problem = r.Problem(&culprit);
        if (!problem.empty()) return (e.Has(culprit) ? e.Key(culprit) : e).Error(problem);
        term.match_expressions.push_back(std::move(r));
      }
    }
    if (term.match_expressions.empty()) return t.Error("a term needs matchExpressions or matchFields");
    out->push_back(std::move(term));
  }
  return Status::Ok();
}

Status ReadTaints(const Field& f, std::vector<core::Taint>* out) {
  if (f.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(f.RequireSeq());
  for (const Field& item : f.Items()) {
    ARTEL_RETURN_IF_ERROR(item.CheckKeys({"key", "value", "effect"}));
    ARTEL_RETURN_IF_ERROR(item.Require("key"));
    ARTEL_RETURN_IF_ERROR(item.Require("effect"));
    core::Taint t;
    ARTEL_ASSIGN_OR_RETURN(t.key, item.Key("key").String());
    if (item.Has("value")) {
      ARTEL_ASSIGN_OR_RETURN(t.value, item.Key("value").String());
    }
    Field eff = item.Key("effect");
    ARTEL_ASSIGN_OR_RETURN(t.effect, eff.String());
    if (t.effect != "NoSchedule" && t.effect != "PreferNoSchedule" && t.effect != "NoExecute") {
      return eff.Error("must be NoSchedule, PreferNoSchedule or NoExecute, got " + t.effect);
    }
    out->push_back(std::move(t));
  }
  return Status::Ok();
}

// Shifts positions that refer to an inline manifest's own text so that they
// point into the scenario file instead.
struct PosShift {
  std::string file;
  int lines = 0;
  int columns = 0;
  void Apply(SourcePos* pos) const {
    if (pos->file != file || !pos->known()) return;
    pos->line += lines;
    if (pos->column > 0) pos->column += columns;
  }
};

void ShiftConfig(const PosShift& shift, core::Config* c) {
  for (auto& x : c->flavors) shift.Apply(&x.pos);
  for (auto& x : c->cohorts) shift.Apply(&x.pos);
  for (auto& x : c->cluster_queues) shift.Apply(&x.pos);
  for (auto& x : c->local_queues) shift.Apply(&x.pos);
  for (auto& x : c->priority_classes) shift.Apply(&x.pos);
  for (auto& x : c->namespaces) shift.Apply(&x.pos);
  for (auto& x : c->resource_quotas) shift.Apply(&x.pos);
  for (auto& x : c->topologies) shift.Apply(&x.pos);
}

template <typename T>
void AppendAll(std::vector<T>&& from, std::vector<T>* to) {
  for (T& x : from) to->push_back(std::move(x));
}

void AppendConfig(core::Config&& from, core::Config* to) {
  AppendAll(std::move(from.flavors), &to->flavors);
  AppendAll(std::move(from.cohorts), &to->cohorts);
  AppendAll(std::move(from.cluster_queues), &to->cluster_queues);
  AppendAll(std::move(from.local_queues), &to->local_queues);
  AppendAll(std::move(from.priority_classes), &to->priority_classes);
  AppendAll(std::move(from.namespaces), &to->namespaces);
  AppendAll(std::move(from.resource_quotas), &to->resource_quotas);
  AppendAll(std::move(from.topologies), &to->topologies);
}

// Where an inline manifest's line 1, column 1 sits in the scenario file. For a
// block scalar (`inline: |`) the content starts on the line after the
// indicator, indented; for a quoted or plain scalar only the line is exact.
PosShift InlineShift(const Context& ctx, const Field& f) {
  PosShift shift;
  shift.file = ctx.file;
  const YAML::Mark mark = f.node().Mark();
  if (mark.is_null()) return shift;
  size_t at = static_cast<size_t>(mark.pos);
  bool block = at < ctx.text.size() && (ctx.text[at] == '|' || ctx.text[at] == '>');
  if (!block) {
    shift.lines = mark.line;
    shift.columns = mark.column;
    return shift;
  }
  shift.lines = mark.line + 1;
  // The block's indentation is that of its first non-blank line.
  size_t p = ctx.text.find('\n', at);
  while (p != std::string_view::npos && p + 1 < ctx.text.size()) {
    size_t line_start = p + 1;
    size_t q = line_start;
    while (q < ctx.text.size() && ctx.text[q] == ' ') ++q;
    if (q < ctx.text.size() && ctx.text[q] != '\n' && ctx.text[q] != '\r') {
      shift.columns = static_cast<int>(q - line_start);
      break;
    }
    p = ctx.text.find('\n', line_start);
  }
  return shift;
}

// Parses an inline manifest (`inline: |`) and appends its objects; positions
// in errors and objects point into the scenario file.
Status ReadInline(const Context& ctx, const Field& f, core::Config* config,
                  manifest::Extras* extras = nullptr) {
  ARTEL_ASSIGN_OR_RETURN(std::string text, f.String());
  core::Config parsed;
  manifest::Extras scratch;
  Status st = manifest::ParseInto(text, ctx.file, &parsed, extras ? extras : &scratch);
  PosShift shift = InlineShift(ctx, f);
  if (!st.ok()) {
    SourcePos pos = st.pos();
    if (pos.file.empty()) {
      pos = f.pos();
    } else {
      shift.Apply(&pos);
    }
    st.WithPos(pos);
    if (st.field().empty()) st.WithField(f.path());
    return st;
  }
  ShiftConfig(shift, &parsed);
  AppendConfig(std::move(parsed), config);
  return Status::Ok();
}

// Reads a list of `{file: PATH}` / `{inline: TEXT}` entries into `config`.
Status ReadConfigSources(const Context& ctx, const Field& list, core::Config* config,
                         manifest::Extras* extras = nullptr) {
  if (list.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(list.RequireSeq());
  for (const Field& item : list.Items()) {
    ARTEL_RETURN_IF_ERROR(item.CheckKeys({"file", "inline"}));
    if (item.Has("file") == item.Has("inline")) return item.Error("needs exactly one of `file` or `inline`");
    if (item.Has("file")) {
      Field f = item.Key("file");
      ARTEL_ASSIGN_OR_RETURN(std::string rel, f.String());
      fs::path p = fs::path(rel).is_absolute() ? fs::path(rel) : fs::path(ctx.dir) / rel;
      std::error_code ec;
      if (!fs::exists(p, ec)) return f.Error("no such file or directory: " + p.lexically_normal().string());
      core::Config loaded;
      manifest::Extras scratch;
      Status st = manifest::LoadPath(p.lexically_normal().string(), &loaded, extras ? extras : &scratch);
      if (!st.ok()) return st;
      AppendConfig(std::move(loaded), config);
    } else {
      ARTEL_RETURN_IF_ERROR(ReadInline(ctx, item.Key("inline"), config, extras));
    }
  }
  return Status::Ok();
}

// `submit: - manifest: |` or `- file: PATH`: workloads in any supported
// dialect (a Volcano vcjob, a Volcano/KAI PodGroup with its Pods, a Kueue
// Workload, a batch/v1 Job with the queue-name label), optionally with a
// `runtime:` that applies to each of them.
Status ReadManifestSubmit(const Context& ctx, const Field& item, std::vector<SubmitEvent>* out) {
  ARTEL_RETURN_IF_ERROR(item.CheckKeys({"manifest", "file", "runtime"}));
  if (item.Has("manifest") == item.Has("file"))
    return item.Error("needs exactly one of `manifest` or `file`");
  std::vector<core::WorkloadSpec> specs;
  if (item.Has("manifest")) {
    Field f = item.Key("manifest");
    ARTEL_ASSIGN_OR_RETURN(std::string text, f.String());
    Status st = manifest::ParseWorkloads(text, ctx.file, &specs);
    if (!st.ok()) {
      SourcePos pos = st.pos();
      PosShift shift = InlineShift(ctx, f);
      if (pos.file.empty()) {
        pos = f.pos();
      } else {
        shift.Apply(&pos);
      }
      st.WithPos(pos);
      if (st.field().empty()) st.WithField(f.path());
      return st;
    }
  } else {
    Field f = item.Key("file");
    ARTEL_ASSIGN_OR_RETURN(std::string rel, f.String());
    fs::path p = fs::path(rel).is_absolute() ? fs::path(rel) : fs::path(ctx.dir) / rel;
    std::ifstream in(p);
    if (!in) return f.Error("cannot read " + p.lexically_normal().string());
    std::stringstream buf;
    buf << in.rdbuf();
    Status st = manifest::ParseWorkloads(buf.str(), p.lexically_normal().string(), &specs);
    if (!st.ok()) return st;
  }
  std::optional<core::Time> runtime;
  if (item.Has("runtime")) {
    ARTEL_ASSIGN_OR_RETURN(std::string d, item.Key("runtime").String());
    auto t = ParseDuration(d);
    if (!t.ok()) return item.Key("runtime").Error(t.status().message());
    runtime = *t;
  }
  if (specs.empty()) return item.Error("the manifest holds no workload");
  for (auto& spec : specs) {
    SubmitEvent ev;
    ev.spec = std::move(spec);
    ev.runtime = runtime;
    out->push_back(std::move(ev));
  }
  return Status::Ok();
}

Status ReadFeatureGates(const Field& f, core::EngineOptions* options) {
  if (f.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(f.CheckKeys(
      {"fairSharing", "fairSharingPreemptionStrategies", "admissionFairSharing", "multiAdmission"}));
  if (f.Has("fairSharing")) {
    ARTEL_ASSIGN_OR_RETURN(options->fair_sharing, f.Key("fairSharing").Bool());
  }
  if (f.Has("multiAdmission")) {
    ARTEL_ASSIGN_OR_RETURN(options->multi_admission, f.Key("multiAdmission").Bool());
  }
  if (f.Has("fairSharingPreemptionStrategies")) {
    Field list = f.Key("fairSharingPreemptionStrategies");
    ARTEL_RETURN_IF_ERROR(list.RequireSeq());
    options->fair_sharing_strategies.clear();
    for (const Field& item : list.Items()) {
      ARTEL_ASSIGN_OR_RETURN(std::string s, item.String());
      if (s == "LessThanOrEqualToFinalShare") {
        options->fair_sharing_strategies.push_back(core::FairSharingStrategy::kLessThanOrEqualToFinalShare);
      } else if (s == "LessThanInitialShare") {
        options->fair_sharing_strategies.push_back(core::FairSharingStrategy::kLessThanInitialShare);
      } else {
        return item.Error("unknown strategy `" + s + "`" +
                          DidYouMean(s, {"LessThanOrEqualToFinalShare", "LessThanInitialShare"}));
      }
    }
  }
  if (f.Has("admissionFairSharing")) {
    Field afs = f.Key("admissionFairSharing");
    options->admission_fair_sharing = true;
    if (!afs.IsNull()) {
      ARTEL_RETURN_IF_ERROR(afs.CheckKeys({"usageHalfLifeTime", "usageSamplingInterval", "resourceWeights"}));
      if (afs.Has("usageHalfLifeTime")) {
        ARTEL_RETURN_IF_ERROR(ReadDuration(afs.Key("usageHalfLifeTime"), &options->afs.usage_half_life));
      }
      if (afs.Has("usageSamplingInterval")) {
        Field si = afs.Key("usageSamplingInterval");
        ARTEL_RETURN_IF_ERROR(ReadDuration(si, &options->afs.usage_sampling_interval));
        if (options->afs.usage_sampling_interval <= 0) return si.Error("must be positive");
      }
      if (afs.Has("resourceWeights")) {
        ARTEL_ASSIGN_OR_RETURN(options->afs.resource_weights, ReadQuantityMap(afs.Key("resourceWeights")));
      }
    }
  }
  return Status::Ok();
}

Result<MigInstance> ParseMigInstance(const Field& f) {
  ARTEL_ASSIGN_OR_RETURN(std::string s, f.String());
  // A media-engine profile is written NVIDIA's way (1g.10gb+me) or the device
  // plugin's (1g.10gb.me); both name the profile 1g.10gb+me.
  static const std::regex kForm(R"(^([1-9][0-9]*g\.[1-9][0-9]*gb(?:[+.]me)?)@([0-9]+)$)");
  std::smatch m;
  if (!std::regex_match(s, m, kForm)) {
    return f.Error("invalid MIG instance \"" + s +
                   "\" (expected PROFILE@START such as 3g.40gb@4 or 1g.10gb+me@0)");
  }
  return MigInstance{core::placement::CanonicalMigProfile(m[1].str()), std::stoi(m[2].str())};
}

Status ReadMigList(const Field& f, std::vector<MigInstance>* out) {
  if (f.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(f.RequireSeq());
  for (const Field& item : f.Items()) {
    ARTEL_ASSIGN_OR_RETURN(MigInstance mi, ParseMigInstance(item));
    out->push_back(std::move(mi));
  }
  return Status::Ok();
}

Status ReadGpus(const Field& f, GpuSpec* gpus) {
  ARTEL_RETURN_IF_ERROR(f.CheckKeys({"model", "count", "mig", "migLayout"}));
  ARTEL_RETURN_IF_ERROR(f.Require("count"));
  if (f.Has("model")) {
    ARTEL_ASSIGN_OR_RETURN(gpus->model, f.Key("model").String());
  }
  ARTEL_ASSIGN_OR_RETURN(int64_t count, f.Key("count").Int(0, 1024));
  gpus->count = static_cast<int>(count);
  std::optional<bool> mig;
  if (f.Has("mig")) {
    ARTEL_ASSIGN_OR_RETURN(mig, f.Key("mig").Bool());
  }
  if (f.Has("migLayout")) {
    Field layout = f.Key("migLayout");
    if (mig == false) return layout.Error("a MIG layout needs `mig: true`");
    mig = true;
    ARTEL_RETURN_IF_ERROR(layout.CheckUniqueKeys());
    for (auto& [k, v] : layout.Entries()) {
      ARTEL_ASSIGN_OR_RETURN(int64_t index, k.Int(0, gpus->count - 1));
      ARTEL_RETURN_IF_ERROR(ReadMigList(v, &gpus->mig_layout[static_cast<int>(index)]));
    }
  }
  gpus->mig = mig.value_or(false);
  return Status::Ok();
}

Status ReadNodes(const Field& f, std::vector<NodeSpec>* nodes) {
  if (f.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(f.RequireSeq());
  std::set<std::string> names;
  for (const Field& item : f.Items()) {
    ARTEL_RETURN_IF_ERROR(item.CheckKeys({"name", "labels", "capacity", "taints", "gpus"}));
    ARTEL_RETURN_IF_ERROR(item.Require("name"));
    Field name_f = item.Key("name");
    ARTEL_ASSIGN_OR_RETURN(std::string pattern, name_f.String());
    Result<std::vector<std::string>> expanded = ExpandNodeName(pattern);
    if (!expanded.ok()) return name_f.Error(expanded.status().message());
    NodeSpec proto;
    proto.pos = item.pos();
    ARTEL_ASSIGN_OR_RETURN(proto.labels, item.Key("labels").StringMap());
    if (item.Has("capacity")) {
      ARTEL_ASSIGN_OR_RETURN(proto.capacity, ReadQuantityMap(item.Key("capacity")));
    }
    ARTEL_RETURN_IF_ERROR(ReadTaints(item.Key("taints"), &proto.taints));
    if (item.Has("gpus")) {
      GpuSpec gpus;
      ARTEL_RETURN_IF_ERROR(ReadGpus(item.Key("gpus"), &gpus));
      proto.gpus = std::move(gpus);
    }
    for (const std::string& n : *expanded) {
      if (!names.insert(n).second) return name_f.Error("duplicate node name " + n);
      NodeSpec node = proto;
      node.name = n;
      node.labels["kubernetes.io/hostname"] = n;
      nodes->push_back(std::move(node));
    }
  }
  return Status::Ok();
}

Status ReadPodSet(const Field& f, core::PodSetSpec* ps) {
  ARTEL_RETURN_IF_ERROR(f.CheckKeys({"name", "count", "minCount", "requests", "annotations", "nodeSelector",
                                     "nodeAffinity", "tolerations"}));
  if (f.Has("name")) {
    ARTEL_ASSIGN_OR_RETURN(ps->name, f.Key("name").String());
  }
  if (f.Has("count")) {
    ARTEL_ASSIGN_OR_RETURN(int64_t c, f.Key("count").Int(1, std::numeric_limits<int32_t>::max()));
    ps->count = static_cast<int32_t>(c);
  }
  if (f.Has("minCount")) {
    Field mc = f.Key("minCount");
    ARTEL_ASSIGN_OR_RETURN(int64_t c, mc.Int(1, std::numeric_limits<int32_t>::max()));
    if (c > ps->count)
      return mc.Error("minCount " + std::to_string(c) + " exceeds count " + std::to_string(ps->count));
    ps->min_count = static_cast<int32_t>(c);
  }
  if (f.Has("requests")) {
    ARTEL_ASSIGN_OR_RETURN(ps->requests, ReadQuantityMap(f.Key("requests")));
  }
  ARTEL_ASSIGN_OR_RETURN(ps->annotations, f.Key("annotations").StringMap());
  ARTEL_ASSIGN_OR_RETURN(ps->node_selector, f.Key("nodeSelector").StringMap());
  ARTEL_RETURN_IF_ERROR(ReadTolerations(f.Key("tolerations"), &ps->tolerations));
  ARTEL_RETURN_IF_ERROR(ReadNodeAffinity(f.Key("nodeAffinity"), &ps->node_affinity));
  return Status::Ok();
}

Status ReadWorkload(const Field& f, SubmitEvent* ev) {
  ARTEL_RETURN_IF_ERROR(
      f.CheckKeys({"name", "namespace", "queue", "priorityClass", "priority", "podSets", "runtime",
                   "annotations", "labels", "active", "maximumExecutionTimeSeconds"}));
  ARTEL_RETURN_IF_ERROR(f.Require("name"));
  ARTEL_RETURN_IF_ERROR(f.Require("podSets"));
  core::WorkloadSpec& w = ev->spec;
  ARTEL_ASSIGN_OR_RETURN(w.name, f.Key("name").String());
  if (w.name.empty() || w.name.find('/') != std::string::npos) {
    return f.Key("name").Error("a workload name must be non-empty and must not contain '/'");
  }
  w.ns = "default";
  if (f.Has("namespace")) {
    ARTEL_ASSIGN_OR_RETURN(w.ns, f.Key("namespace").String());
  }
  if (f.Has("queue")) {
    ARTEL_ASSIGN_OR_RETURN(w.queue, f.Key("queue").String());
  }
  if (f.Has("priorityClass") && f.Has("priority")) {
    // Both are legal in Kueue (the value wins), but in a test it hides intent.
    return f.Key("priority").Error("set either `priorityClass` or `priority`, not both");
  }
  if (f.Has("priorityClass")) {
    ARTEL_ASSIGN_OR_RETURN(std::string pc, f.Key("priorityClass").String());
    w.priority_class = pc;
  }
  if (f.Has("priority")) {
    ARTEL_ASSIGN_OR_RETURN(
        int64_t p,
        f.Key("priority").Int(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
    w.priority = static_cast<int32_t>(p);
  }
  Field pod_sets = f.Key("podSets");
  ARTEL_RETURN_IF_ERROR(pod_sets.RequireSeq());
  if (pod_sets.Items().empty()) return pod_sets.Error("needs at least one pod set");
  std::set<std::string> ps_names;
  for (const Field& item : pod_sets.Items()) {
    core::PodSetSpec ps;
    ARTEL_RETURN_IF_ERROR(ReadPodSet(item, &ps));
    if (!ps_names.insert(ps.name).second) return item.Error("duplicate pod set name " + ps.name);
    w.pod_sets.push_back(std::move(ps));
  }
  if (f.Has("runtime")) {
    core::Time rt = 0;
    ARTEL_RETURN_IF_ERROR(ReadDuration(f.Key("runtime"), &rt));
    ev->runtime = rt;
  }
  if (f.Has("maximumExecutionTimeSeconds")) {
    ARTEL_ASSIGN_OR_RETURN(int64_t m,
                           f.Key("maximumExecutionTimeSeconds").Int(1, std::numeric_limits<int32_t>::max()));
    w.max_runtime = m * 1000;
  }
  ARTEL_ASSIGN_OR_RETURN(w.annotations, f.Key("annotations").StringMap());
  ARTEL_ASSIGN_OR_RETURN(w.labels, f.Key("labels").StringMap());
  if (f.Has("active")) {
    ARTEL_ASSIGN_OR_RETURN(w.active, f.Key("active").Bool());
  }
  int bad = -1;
  Status typed = manifest::ReadTypedFields(&w, [&bad](int pod_set) {
    bad = pod_set;
    return std::string("annotations");
  });
  if (!typed.ok()) {
    const Field at =
        bad < 0 ? f.Key("annotations") : pod_sets.Items()[static_cast<size_t>(bad)].Key("annotations");
    std::string key = typed.field().substr(std::string("annotations[").size());  // "key]"
    if (!key.empty()) key.pop_back();
    return at.Error(key + ": " + typed.message());
  }
  return Status::Ok();
}

bool IsKnownPendingReason(const std::string& s) {
  using K = core::PendingReason::Kind;
  for (int k = static_cast<int>(K::kNone); k <= static_cast<int>(K::kInfeasible); ++k) {
    if (s == core::PendingReasonKindName(static_cast<K>(k))) return true;
  }
  return false;
}

std::vector<std::string> PendingReasonNames() {
  using K = core::PendingReason::Kind;
  std::vector<std::string> out;
  for (int k = static_cast<int>(K::kNone); k <= static_cast<int>(K::kInfeasible); ++k) {
    out.emplace_back(core::PendingReasonKindName(static_cast<K>(k)));
  }
  return out;
}

std::vector<std::string> EvictionReasonNames() {
  using R = core::EvictionReason;
  std::vector<std::string> out;
  for (int r = static_cast<int>(R::kInClusterQueue); r <= static_cast<int>(R::kMaximumExecutionTimeExceeded);
       ++r) {
    out.emplace_back(core::EvictionReasonName(static_cast<R>(r)));
  }
  return out;
}

Status CheckName(const Field& f, const std::string& value, const std::vector<std::string>& known,
                 const char* what) {
  if (std::find(known.begin(), known.end(), value) != known.end()) return Status::Ok();
  std::vector<std::string_view> views(known.begin(), known.end());
  std::string hint = DidYouMean(value, views);
  if (hint.empty()) {
    hint = " (one of:";
    for (const std::string& k : known) hint += " " + k;
    hint += ")";
  }
  return f.Error(std::string("unknown ") + what + " `" + value + "`" + hint);
}

Status ReadExpectation(const Field& f, Expectation* ex) {
  ex->pos = f.pos();
  ex->field = f.path();
  if (f.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(f.CheckKeys({"admitted", "pending", "finished", "failed", "preempted", "evictions",
                                     "flavors", "admittedCounts", "usage", "pendingReasons",
                                     "pendingMessages", "share", "placements", "migLayouts"}));
  auto ref_set = [&](const char* key, std::optional<std::vector<WorkloadRef>>* out) -> Status {
    if (!f.Has(key)) return Status::Ok();
    out->emplace();
    return ReadRefList(f.Key(key), &**out);
  };
  ARTEL_RETURN_IF_ERROR(ref_set("admitted", &ex->admitted));
  ARTEL_RETURN_IF_ERROR(ref_set("pending", &ex->pending));
  ARTEL_RETURN_IF_ERROR(ref_set("finished", &ex->finished));
  ARTEL_RETURN_IF_ERROR(ref_set("failed", &ex->failed));
  ARTEL_RETURN_IF_ERROR(ref_set("preempted", &ex->preempted));

  if (f.Has("evictions")) {
    Field list = f.Key("evictions");
    ex->evictions.emplace();
    if (!list.IsNull()) ARTEL_RETURN_IF_ERROR(list.RequireSeq());
    std::vector<std::string> reasons = EvictionReasonNames();
    for (const Field& item : list.Items()) {
      ARTEL_RETURN_IF_ERROR(item.CheckKeys({"victim", "reason", "preemptor"}));
      ARTEL_RETURN_IF_ERROR(item.Require("victim"));
      EvictionExpect e;
      e.pos = item.pos();
      ARTEL_RETURN_IF_ERROR(ReadRef(item.Key("victim"), &e.victim));
      if (item.Has("reason")) {
        ARTEL_ASSIGN_OR_RETURN(std::string r, item.Key("reason").String());
        ARTEL_RETURN_IF_ERROR(CheckName(item.Key("reason"), r, reasons, "eviction reason"));
        e.reason = r;
      }
      if (item.Has("preemptor")) {
        WorkloadRef p;
        ARTEL_RETURN_IF_ERROR(ReadRef(item.Key("preemptor"), &p));
        e.preemptor = p;
      }
      ex->evictions->push_back(std::move(e));
    }
  }

  if (f.Has("flavors")) {
    Field m = f.Key("flavors");
    ex->flavors.emplace();
    ARTEL_RETURN_IF_ERROR(m.CheckUniqueKeys());
    for (auto& [wk, wv] : m.Entries()) {
      WorkloadRef ref;
      ARTEL_RETURN_IF_ERROR(ReadRef(wk, &ref));
      FlavorExpect fe;
      ARTEL_RETURN_IF_ERROR(wv.RequireMap());
      ARTEL_RETURN_IF_ERROR(wv.CheckUniqueKeys());
      for (auto& [pk, pv] : wv.Entries()) {
        ARTEL_RETURN_IF_ERROR(pv.RequireMap());
        ARTEL_ASSIGN_OR_RETURN(fe[pk.node().Scalar()], pv.StringMap());
      }
      ex->flavors->emplace_back(std::move(ref), std::move(fe));
    }
  }

  if (f.Has("admittedCounts")) {
    Field m = f.Key("admittedCounts");
    ex->admitted_counts.emplace();
    ARTEL_RETURN_IF_ERROR(m.CheckUniqueKeys());
    for (auto& [wk, wv] : m.Entries()) {
      WorkloadRef ref;
      ARTEL_RETURN_IF_ERROR(ReadRef(wk, &ref));
      std::map<std::string, int32_t> counts;
      ARTEL_RETURN_IF_ERROR(wv.RequireMap());
      ARTEL_RETURN_IF_ERROR(wv.CheckUniqueKeys());
      for (auto& [pk, pv] : wv.Entries()) {
        ARTEL_ASSIGN_OR_RETURN(int64_t c, pv.Int(0, std::numeric_limits<int32_t>::max()));
        counts[pk.node().Scalar()] = static_cast<int32_t>(c);
      }
      ex->admitted_counts->emplace_back(std::move(ref), std::move(counts));
    }
  }

  if (f.Has("usage")) {
    Field list = f.Key("usage");
    ex->usage.emplace();
    if (!list.IsNull()) ARTEL_RETURN_IF_ERROR(list.RequireSeq());
    for (const Field& item : list.Items()) {
      ARTEL_RETURN_IF_ERROR(item.CheckKeys({"clusterQueue", "cohort", "flavor", "resource", "value"}));
      if (item.Has("clusterQueue") == item.Has("cohort")) {
        return item.Error("needs exactly one of `clusterQueue` or `cohort`");
      }
      ARTEL_RETURN_IF_ERROR(item.Require("flavor"));
      ARTEL_RETURN_IF_ERROR(item.Require("resource"));
      ARTEL_RETURN_IF_ERROR(item.Require("value"));
      UsageExpect u;
      u.pos = item.pos();
      u.is_cohort = item.Has("cohort");
      ARTEL_ASSIGN_OR_RETURN(u.node, item.Key(u.is_cohort ? "cohort" : "clusterQueue").String());
      ARTEL_ASSIGN_OR_RETURN(u.flavor, item.Key("flavor").String());
      ARTEL_ASSIGN_OR_RETURN(u.resource, item.Key("resource").String());
      ARTEL_ASSIGN_OR_RETURN(u.value, item.Key("value").Quantity());
      ex->usage->push_back(std::move(u));
    }
  }

  if (f.Has("pendingReasons")) {
    Field m = f.Key("pendingReasons");
    ex->pending_reasons.emplace();
    ARTEL_RETURN_IF_ERROR(m.CheckUniqueKeys());
    std::vector<std::string> known = PendingReasonNames();
    for (auto& [wk, wv] : m.Entries()) {
      WorkloadRef ref;
      ARTEL_RETURN_IF_ERROR(ReadRef(wk, &ref));
      ARTEL_ASSIGN_OR_RETURN(std::string reason, wv.String());
      if (!IsKnownPendingReason(reason)) {
        ARTEL_RETURN_IF_ERROR(CheckName(wv, reason, known, "pending reason"));
      }
      ex->pending_reasons->emplace_back(std::move(ref), std::move(reason));
    }
  }

  if (f.Has("pendingMessages")) {
    Field m = f.Key("pendingMessages");
    ex->pending_messages.emplace();
    ARTEL_RETURN_IF_ERROR(m.CheckUniqueKeys());
    for (auto& [wk, wv] : m.Entries()) {
      WorkloadRef ref;
      ARTEL_RETURN_IF_ERROR(ReadRef(wk, &ref));
      Expectation::MessageExpect me;
      if (wv.IsMap()) {
        ARTEL_RETURN_IF_ERROR(wv.CheckKeys({"contains", "excludes"}));
        if (wv.Has("contains")) {
          ARTEL_ASSIGN_OR_RETURN(me.contains, wv.Key("contains").StringList());
        }
        if (wv.Has("excludes")) {
          ARTEL_ASSIGN_OR_RETURN(me.excludes, wv.Key("excludes").StringList());
        }
      } else if (wv.IsSeq()) {
        ARTEL_ASSIGN_OR_RETURN(me.contains, wv.StringList());
      } else {
        ARTEL_ASSIGN_OR_RETURN(std::string one, wv.String());
        me.contains.push_back(std::move(one));
      }
      ex->pending_messages->emplace_back(std::move(ref), std::move(me));
    }
  }

  if (f.Has("share")) {
    Field m = f.Key("share");
    ex->share.emplace();
    ARTEL_RETURN_IF_ERROR(m.CheckUniqueKeys());
    for (auto& [k, v] : m.Entries()) {
      ARTEL_ASSIGN_OR_RETURN(std::string s, v.String());
      int64_t drs = -1;
      if (s != "Inf" && s != "inf") {
        ARTEL_ASSIGN_OR_RETURN(drs, v.Int(0, std::numeric_limits<int64_t>::max()));
      }
      ex->share->emplace_back(k.node().Scalar(), drs);
    }
  }

  if (f.Has("placements")) {
    Field m = f.Key("placements");
    ex->placements.emplace();
    ARTEL_RETURN_IF_ERROR(m.CheckUniqueKeys());
    for (auto& [wk, wv] : m.Entries()) {
      ARTEL_RETURN_IF_ERROR(wv.CheckUniqueKeys());
      auto& per_ps = (*ex->placements)[wk.node().Scalar()];
      for (auto& [pk, pv] : wv.Entries()) {
        ARTEL_ASSIGN_OR_RETURN(per_ps[pk.node().Scalar()], pv.StringList());
      }
    }
  }

  if (f.Has("migLayouts")) {
    Field m = f.Key("migLayouts");
    ex->mig_layouts.emplace();
    ARTEL_RETURN_IF_ERROR(m.CheckUniqueKeys());
    static const std::regex kGpuKey(R"(^[^/]+/[0-9]+$)");
    for (auto& [k, v] : m.Entries()) {
      const std::string& key = k.node().Scalar();
      if (!std::regex_match(key, kGpuKey))
        return k.Error("expected NODE/GPU-INDEX such as gpu-0/0, got " + key);
      ARTEL_RETURN_IF_ERROR(ReadMigList(v, &(*ex->mig_layouts)[key]));
    }
  }
  return Status::Ok();
}

Status ReadWorkloadRefEvents(const Field& f, Event::Kind kind, std::vector<Event>* events) {
  if (f.IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(f.RequireSeq());
  for (const Field& item : f.Items()) {
    Event ev;
    ev.kind = kind;
    ev.field = item.path();
    ev.pos = item.pos();
    ARTEL_RETURN_IF_ERROR(ReadRef(item, &ev.target));
    events->push_back(std::move(ev));
  }
  return Status::Ok();
}

// `current` is the configuration in force before this step; `apply:` events
// update it so that each one is validated against what it patches.
Status ReadStep(const Context& ctx, const Field& f, core::Config* current, Step* step) {
  ARTEL_RETURN_IF_ERROR(
      f.CheckKeys({"at", "submit", "finish", "cancel", "activate", "deactivate", "apply", "expect"}));
  ARTEL_RETURN_IF_ERROR(f.Require("at"));
  step->field = f.path();
  step->pos = f.pos();
  ARTEL_RETURN_IF_ERROR(ReadDuration(f.Key("at"), &step->at));
  for (auto& [k, v] : f.Entries()) {
    const std::string& key = k.node().Scalar();
    if (key == "at") continue;
    if (key == "expect") {
      Expectation ex;
      ARTEL_RETURN_IF_ERROR(ReadExpectation(v, &ex));
      step->expect = std::move(ex);
    } else if (key == "submit") {
      if (v.IsNull()) continue;
      ARTEL_RETURN_IF_ERROR(v.RequireSeq());
      for (const Field& item : v.Items()) {
        if (item.Has("manifest") || (item.Has("file") && !item.Has("name"))) {
          std::vector<SubmitEvent> subs;
          ARTEL_RETURN_IF_ERROR(ReadManifestSubmit(ctx, item, &subs));
          for (auto& sub : subs) {
            Event ev;
            ev.kind = Event::Kind::kSubmit;
            ev.field = item.path();
            ev.pos = item.pos();
            ev.submit = std::move(sub);
            step->events.push_back(std::move(ev));
          }
          continue;
        }
        Event ev;
        ev.kind = Event::Kind::kSubmit;
        ev.field = item.path();
        ev.pos = item.pos();
        ARTEL_RETURN_IF_ERROR(ReadWorkload(item, &ev.submit));
        step->events.push_back(std::move(ev));
      }
    } else if (key == "apply") {
      Event ev;
      ev.kind = Event::Kind::kApply;
      ev.field = v.path();
      ev.pos = v.pos();
      if (v.IsScalar()) {
        // `apply: |` is shorthand for a single `inline:` entry.
        ARTEL_RETURN_IF_ERROR(ReadInline(ctx, v, &ev.patch));
      } else {
        ARTEL_RETURN_IF_ERROR(ReadConfigSources(ctx, v, &ev.patch));
      }
      MergeConfig(ev.patch, current);
      Status st = manifest::Validate(*current);
      if (!st.ok()) {
        if (!st.pos().known()) st.WithPos(v.pos());
        return st;
      }
      step->events.push_back(std::move(ev));
    } else {
      Event::Kind kind = key == "finish"     ? Event::Kind::kFinish
                         : key == "cancel"   ? Event::Kind::kCancel
                         : key == "activate" ? Event::Kind::kActivate
                                             : Event::Kind::kDeactivate;
      ARTEL_RETURN_IF_ERROR(ReadWorkloadRefEvents(v, kind, &step->events));
    }
  }
  return Status::Ok();
}

Status ReadDocument(const Context& ctx, const Field& root, ScenarioDoc* doc) {
  ARTEL_RETURN_IF_ERROR(root.CheckKeys({"apiVersion", "kind", "metadata", "spec"}));
  ARTEL_RETURN_IF_ERROR(root.Require("kind"));
  ARTEL_ASSIGN_OR_RETURN(std::string kind, root.Key("kind").String());
  if (kind != kKind) {
    return root.Key("kind").Error("expected kind Scenario, got " + kind + DidYouMean(kind, {kKind}));
  }
  ARTEL_RETURN_IF_ERROR(root.Require("apiVersion"));
  ARTEL_ASSIGN_OR_RETURN(std::string api, root.Key("apiVersion").String());
  if (api != kApiVersion) {
    return root.Key("apiVersion").Error("expected apiVersion " + std::string(kApiVersion) + ", got " + api);
  }
  ARTEL_RETURN_IF_ERROR(root.Require("metadata"));
  Field meta = root.Key("metadata");
  ARTEL_RETURN_IF_ERROR(meta.CheckKeys({"name", "description", "labels", "annotations"}));
  ARTEL_RETURN_IF_ERROR(meta.Require("name"));
  Scenario sc;
  sc.file = ctx.file;
  sc.pos = root.pos();
  ARTEL_ASSIGN_OR_RETURN(sc.name, meta.Key("name").String());
  doc->name = sc.name;
  if (meta.Has("description")) ARTEL_RETURN_IF_ERROR(StatusOf(meta.Key("description").String()));
  ARTEL_RETURN_IF_ERROR(StatusOf(meta.Key("labels").StringMap()));
  ARTEL_RETURN_IF_ERROR(StatusOf(meta.Key("annotations").StringMap()));
  ARTEL_RETURN_IF_ERROR(root.Require("spec"));
  Field spec = root.Key("spec");
  ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"config", "featureGates", "nodes", "steps"}));
  ARTEL_RETURN_IF_ERROR(ReadConfigSources(ctx, spec.Key("config"), &sc.config, &sc.extras));
  Status st = manifest::Validate(sc.config);
  if (!st.ok()) {
    if (!st.pos().known()) st.WithPos(spec.Key("config").pos());
    return st;
  }
  ARTEL_RETURN_IF_ERROR(ReadFeatureGates(spec.Key("featureGates"), &sc.options));
  ARTEL_RETURN_IF_ERROR(ReadNodes(spec.Key("nodes"), &sc.nodes));

  ARTEL_RETURN_IF_ERROR(spec.Require("steps"));
  Field steps = spec.Key("steps");
  ARTEL_RETURN_IF_ERROR(steps.RequireSeq());
  core::Config current = sc.config;
  for (const Field& item : steps.Items()) {
    Step step;
    ARTEL_RETURN_IF_ERROR(ReadStep(ctx, item, &current, &step));
    if (!sc.steps.empty() && step.at < sc.steps.back().at) {
      return item.Key("at").Error("steps must be in non-decreasing time order: " + FormatDuration(step.at) +
                                  " comes after " + FormatDuration(sc.steps.back().at));
    }
    sc.steps.push_back(std::move(step));
  }
  doc->scenario = std::move(sc);
  return Status::Ok();
}

template <typename T, typename KeyFn>
void MergeByKey(const std::vector<T>& patch, std::vector<T>* base, KeyFn key) {
  for (const T& p : patch) {
    auto it = std::find_if(base->begin(), base->end(), [&](const T& b) { return key(b) == key(p); });
    if (it != base->end()) {
      *it = p;
    } else {
      base->push_back(p);
    }
  }
}

}  // namespace

const char* EventKindName(Event::Kind kind) {
  switch (kind) {
    case Event::Kind::kSubmit: return "submit";
    case Event::Kind::kFinish: return "finish";
    case Event::Kind::kCancel: return "cancel";
    case Event::Kind::kActivate: return "activate";
    case Event::Kind::kDeactivate: return "deactivate";
    case Event::Kind::kApply: return "apply";
  }
  return "?";
}

void MergeConfig(const core::Config& patch, core::Config* base) {
  auto by_name = [](const auto& x) { return x.name; };
  auto by_ns_name = [](const auto& x) { return x.ns + "/" + x.name; };
  MergeByKey(patch.flavors, &base->flavors, by_name);
  MergeByKey(patch.cohorts, &base->cohorts, by_name);
  MergeByKey(patch.cluster_queues, &base->cluster_queues, by_name);
  MergeByKey(patch.local_queues, &base->local_queues, by_ns_name);
  MergeByKey(patch.priority_classes, &base->priority_classes, by_name);
  MergeByKey(patch.namespaces, &base->namespaces, by_name);
  MergeByKey(patch.resource_quotas, &base->resource_quotas, by_ns_name);
  MergeByKey(patch.topologies, &base->topologies, by_name);
}

Result<std::vector<std::string>> ExpandNodeName(std::string_view pattern) {
  std::vector<std::string> out = {""};
  size_t i = 0;
  while (i < pattern.size()) {
    size_t open = pattern.find('{', i);
    size_t close_before = pattern.find('}', i);
    if (close_before < open) return InvalidArgument("unbalanced '}' in node name " + std::string(pattern));
    if (open == std::string_view::npos) {
      for (std::string& s : out) s += pattern.substr(i);
      break;
    }
    for (std::string& s : out) s += pattern.substr(i, open - i);
    size_t close = pattern.find('}', open);
    if (close == std::string_view::npos)
      return InvalidArgument("unbalanced '{' in node name " + std::string(pattern));
    std::string_view body = pattern.substr(open + 1, close - open - 1);
    static const std::regex kRange(R"(^([0-9]+)\.\.([0-9]+)$)");
    std::string body_s(body);
    std::smatch m;
    if (!std::regex_match(body_s, m, kRange)) {
      return InvalidArgument("invalid range {" + body_s +
                             "} in node name (expected {FIRST..LAST}, e.g. {0..7})");
    }
    const std::string lo_s = m[1].str();
    const std::string hi_s = m[2].str();
    if (lo_s.size() > 9 || hi_s.size() > 9) return InvalidArgument("range {" + body_s + "} is too large");
    long lo = std::stol(lo_s);
    long hi = std::stol(hi_s);
    if (lo > hi) return InvalidArgument("empty range {" + body_s + "}: first is greater than last");
    // `{00..15}` pads every number to the width of the first bound, as shells do.
    size_t width = lo_s.size() > 1 && lo_s[0] == '0' ? lo_s.size() : 0;
    size_t n = static_cast<size_t>(hi - lo + 1);
    if (n * out.size() > kMaxExpandedNodes) {
      return InvalidArgument("node name " + std::string(pattern) + " expands to more than " +
                             std::to_string(kMaxExpandedNodes) + " nodes");
    }
    std::vector<std::string> next;
    next.reserve(out.size() * n);
    for (const std::string& prefix : out) {
      for (long v = lo; v <= hi; ++v) {
        std::string num = std::to_string(v);
        if (num.size() < width) num.insert(0, width - num.size(), '0');
        next.push_back(prefix + num);
      }
    }
    out = std::move(next);
    i = close + 1;
  }
  if (out.size() == 1 && out[0].empty()) return InvalidArgument("empty node name");
  return out;
}

std::vector<ScenarioDoc> ParseScenarios(std::string_view text, const std::string& file) {
  std::vector<ScenarioDoc> docs;
  // Bounded: alias bombs, cycles and invalid UTF-8 are refused before any
  // reader walks the nodes (manifest/yaml_util.h).
  Result<std::vector<YAML::Node>> loaded =
      manifest::yaml::LoadDocuments(text, file, manifest::yaml::kLocalFileLimits);
  if (!loaded.ok()) {
    ScenarioDoc doc;
    doc.error = loaded.status();
    if (doc.error.message().starts_with("YAML syntax error: ")) {  // the runner's wording
      Status s = InvalidArgument("invalid YAML: " + doc.error.message().substr(19));
      s.WithPos(doc.error.pos());
      doc.error = s;
    }
    docs.push_back(std::move(doc));
    return docs;
  }
  std::vector<YAML::Node> roots = std::move(loaded).value();
  Context ctx;
  ctx.file = file;
  ctx.dir = fs::path(file).parent_path().string();
  ctx.text = text;
  auto file_ptr = std::make_shared<const std::string>(file);
  for (const YAML::Node& node : roots) {
    if (node.IsNull()) continue;  // an empty document, e.g. after a trailing `---`
    ScenarioDoc doc;
    Field root(node, "", file_ptr);
    // Read the name leniently first so that --filter works on broken documents.
    if (Field name = root.Key("metadata").Key("name"); name.IsScalar()) doc.name = name.node().Scalar();
    try {
      doc.error = ReadDocument(ctx, root, &doc);
    } catch (const YAML::Exception& e) {
      // yaml-cpp throws on a few malformed shapes the checks above do not
      // anticipate; untrusted input must still not crash the runner.
      doc.error = InvalidArgument(e.msg);
      doc.error.WithPos(PosFromMark(file, e.mark));
    }
    if (!doc.error.ok()) doc.scenario.reset();
    docs.push_back(std::move(doc));
  }
  if (docs.empty()) {
    ScenarioDoc doc;
    doc.error = InvalidArgument("no Scenario documents in file");
    doc.error.WithPos(SourcePos{file, 0, 0});
    docs.push_back(std::move(doc));
  }
  return docs;
}

namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<ScenarioDoc> LoadScenarioFile(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) {
    ScenarioDoc doc;
    doc.error = text.status();
    doc.error.WithPos(SourcePos{path, 0, 0});
    return {std::move(doc)};
  }
  return ParseScenarios(*text, path);
}

bool LooksLikeScenarioFile(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return false;
  Result<std::vector<YAML::Node>> loaded =
      manifest::yaml::LoadDocuments(*text, path, manifest::yaml::kLocalFileLimits);
  if (!loaded.ok()) {
    static const std::regex kKindLine(R"((^|\n)kind:[ \t]*["']?Scenario["']?[ \t]*(\r?\n|$))");
    return std::regex_search(*text, kKindLine);
  }
  try {
    auto file = std::make_shared<const std::string>(path);
    for (const YAML::Node& node : *loaded) {
      Field kind = Field(node, "", file).Key("kind");
      if (kind.IsScalar() && kind.node().Scalar() == kKind) return true;
    }
    return false;
  } catch (const YAML::Exception&) {
    return false;
  }
}

}  // namespace artel::sim
