// LoadPath: files, plain directories and kustomize directories.
//
// This is the only part of the manifest layer that touches the filesystem.
// Everything is loaded into a scratch Config first and appended to the
// caller's only on success, so a failed load leaves it unchanged.

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "manifest/checks.h"
#include "manifest/manifest.h"
#include "manifest/yaml_util.h"

namespace artel::manifest {
namespace {

namespace fs = std::filesystem;

constexpr const char* kKustomizationNames[] = {"kustomization.yaml", "kustomization.yml", "Kustomization"};

Status FileError(const std::string& path, std::string message) {
  Status s = NotFound(std::move(message));
  SourcePos pos;
  pos.file = path;
  s.WithPos(std::move(pos));
  return s;
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return FileError(path, fmt::format("cannot read file: {}", std::strerror(errno)));
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

bool IsYamlFile(const fs::path& p) {
  std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml";
}

class Loader {
 public:
  explicit Loader(Extras* extras) : extras_(extras) {}

  Status Load(const std::string& path, core::Config* out) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return FileError(path, "no such file or directory");
    if (fs::is_directory(st)) return LoadDir(path, out);
    Result<std::string> text = ReadFile(path);
    if (!text.ok()) return text.status();
    return ParseInto(*text, path, out, extras_);
  }

 private:
  Status LoadDir(const std::string& dir, core::Config* out) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(dir, ec);
    if (!active_dirs_.insert(canonical).second) {
      return FileError(dir, "directory is included from itself (kustomization resources cycle)");
    }
    Status s;
    std::string kustomization;
    for (const char* name : kKustomizationNames) {
      fs::path p = fs::path(dir) / name;
      if (fs::is_regular_file(p, ec)) {
        kustomization = p.string();
        break;
      }
    }
    s = kustomization.empty() ? LoadPlainDir(dir, out) : LoadKustomization(dir, kustomization, out);
    active_dirs_.erase(canonical);
    return s;
  }

  // Every *.yaml / *.yml, by name, except scenario files: test scenarios
  // usually sit next to the manifests they load.
  Status LoadPlainDir(const std::string& dir, core::Config* out) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      if (e.is_regular_file(ec) && IsYamlFile(e.path())) files.push_back(e.path());
    }
    if (ec) return FileError(dir, fmt::format("cannot list directory: {}", ec.message()));
    std::sort(files.begin(), files.end(),
              [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
    for (const fs::path& file : files) {
      std::string path = file.string();
      Result<std::string> text = ReadFile(path);
      if (!text.ok()) return text.status();
      Result<std::vector<yaml::Node>> docs = yaml::ParseDocuments(*text, path);
      if (!docs.ok()) return docs.status();
      bool scenario = std::any_of(docs->begin(), docs->end(), [](const yaml::Node& d) {
        yaml::Node kind = d["kind"];
        return kind.IsScalar() && kind.yaml().Scalar() == "Scenario";
      });
      if (scenario) continue;
      if (Status s = ParseInto(*text, path, out, extras_); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // The subset of kustomize that selects files: `resources` (local files
  // and directories, in order) and `namespace` (set on namespaced objects).
  Status LoadKustomization(const std::string& dir, const std::string& path, core::Config* out) {
    Result<std::string> text = ReadFile(path);
    if (!text.ok()) return text.status();
    Result<std::vector<yaml::Node>> docs = yaml::ParseDocuments(*text, path);
    if (!docs.ok()) return docs.status();
    std::vector<yaml::Node> present;
    for (const yaml::Node& d : *docs) {
      if (d.present()) present.push_back(d);
    }
    if (present.size() != 1) {
      return FileError(
          path, fmt::format("a kustomization must hold exactly one document, found {}", present.size()));
    }
    const yaml::Node& k = present[0];
    if (Status s = k.CheckKeys({"apiVersion", "kind", "metadata", "resources", "namespace"}); !s.ok()) {
      Status annotated(s.code(), s.message() +
                                     " (Artel reads only the resources and namespace fields of a "
                                     "kustomization)");
      annotated.WithField(s.field()).WithPos(s.pos());
      return annotated;
    }
    std::string ns;
    if (Status s = k.ReadString("namespace", &ns); !s.ok()) return s;
    yaml::Node resources = k["resources"];
    core::Config loaded;
    if (resources.present()) {
      if (Status s = resources.ExpectList(); !s.ok()) return s;
      for (const yaml::Node& item : resources.Items()) {
        Result<std::string> entry = item.AsString();
        if (!entry.ok()) return entry.status();
        if (entry->find("://") != std::string::npos || entry->starts_with("github.com/")) {
          return item.Error(fmt::format("remote resource \"{}\" is not supported; use a local path", *entry));
        }
        fs::path target = (fs::path(dir) / *entry).lexically_normal();
        std::error_code ec;
        if (!fs::exists(target, ec)) {
          return item.Error(
              fmt::format("resource \"{}\" not found (looked for {})", *entry, target.string()));
        }
        if (Status s = Load(target.string(), &loaded); !s.ok()) return s;
      }
    }
    if (!ns.empty()) {
      for (core::LocalQueueSpec& lq : loaded.local_queues) lq.ns = ns;
      for (core::ResourceQuotaObjSpec& rq : loaded.resource_quotas) rq.ns = ns;
    }
    internal::AppendConfig(std::move(loaded), out);
    return Status::Ok();
  }

  std::set<fs::path> active_dirs_;
  Extras* extras_;  // may be null
};

}  // namespace

Status LoadPath(const std::string& path, core::Config* config) { return LoadPath(path, config, nullptr); }

Status LoadPath(const std::string& path, core::Config* config, Extras* extras) {
  core::Config loaded;
  Extras loaded_extras;
  Loader loader(&loaded_extras);
  if (Status s = loader.Load(path, &loaded); !s.ok()) return s;
  internal::AppendConfig(std::move(loaded), config);
  if (extras != nullptr) {
    for (HyperNodeSpec& h : loaded_extras.hypernodes) extras->hypernodes.push_back(std::move(h));
  }
  return Status::Ok();
}

}  // namespace artel::manifest
