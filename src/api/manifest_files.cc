#include "api/manifest_files.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "manifest/manifest.h"
#include "manifest/yaml_util.h"

namespace artel::api {
namespace fs = std::filesystem;
namespace {

Result<std::string> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return NotFound("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status Collect(const fs::path& path, int depth, std::vector<ManifestFile>* out) {
  if (depth > 16) return InvalidArgument("kustomization nesting too deep at " + path.string());
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const char* k : {"kustomization.yaml", "kustomization.yml", "Kustomization"}) {
      fs::path kp = path / k;
      if (!fs::exists(kp, ec)) continue;
      auto text = ReadFile(kp);
      if (!text.ok()) return text.status();
      auto loaded = manifest::yaml::LoadDocuments(*text, kp.string(), manifest::yaml::kLocalFileLimits);
      if (!loaded.ok()) return loaded.status();
      try {
        YAML::Node n = loaded->empty() ? YAML::Node() : loaded->front();
        for (const auto& r : n["resources"]) {
          if (Status s = Collect(path / r.as<std::string>(), depth + 1, out); !s.ok()) return s;
        }
      } catch (const YAML::Exception& e) {
        return InvalidArgument(kp.string() + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
      }
      return Status::Ok();
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      auto ext = e.path().extension();
      if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      auto text = ReadFile(f);
      if (!text.ok()) return text.status();
      if (text->find("kind: Scenario") != std::string::npos) continue;
      out->push_back({f.string(), std::move(text).value()});
    }
    return Status::Ok();
  }
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  out->push_back({path.string(), std::move(text).value()});
  return Status::Ok();
}

bool IsSeparator(std::string_view line) {
  if (line.substr(0, 3) != "---") return false;
  for (char c : line.substr(3)) {
    if (c != ' ' && c != '\t' && c != '\r') return c == '#';
  }
  return true;
}

}  // namespace

Result<std::vector<ManifestFile>> ReadManifestFiles(const std::string& path) {
  std::vector<ManifestFile> out;
  if (Status s = Collect(path, 0, &out); !s.ok()) return s;
  return out;
}

Result<std::string> ReadManifestText(const std::string& path) {
  auto files = ReadManifestFiles(path);
  if (!files.ok()) return files.status();
  std::string out;
  for (const auto& f : *files) out += "---\n" + f.text + "\n";
  return out;
}

bool IsNamespacedKind(std::string_view kind) { return manifest::IsNamespacedKind(kind); }

Result<std::vector<ManifestDoc>> SplitDocuments(std::string_view text) {
  // Cut at bare `---` lines first, so that each document keeps its own text;
  // then the real YAML parser reads each piece (within the bounds of
  // untrusted input). A piece holding more than one document (one started
  // on its own `---` line, `--- {kind: ...}`) is split by the parser, and
  // each of its documents emitted again alone.
  std::vector<std::string> chunks(1);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line =
        text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    if (IsSeparator(line)) {
      chunks.emplace_back();
    } else {
      chunks.back().append(line);
      chunks.back().push_back('\n');
    }
    if (eol == std::string_view::npos) break;
    pos = eol + 1;
  }
  std::vector<ManifestDoc> docs;
  int index = 0;
  for (const std::string& c : chunks) {
    // The server's own limits: it would refuse more anyway.
    auto nodes = manifest::yaml::LoadDocuments(c, "manifest");
    if (!nodes.ok()) return nodes.status();
    size_t present = 0;
    for (const YAML::Node& n : *nodes) present += (n && !n.IsNull()) ? 1 : 0;
    for (const YAML::Node& n : *nodes) {
      if (!n || n.IsNull()) continue;
      const std::string where = "document " + std::to_string(++index);
      if (!n.IsMap()) return InvalidArgument(where + ": a manifest document must be a map");
      ManifestDoc d;
      try {
        if (n["kind"] && n["kind"].IsScalar()) d.kind = n["kind"].as<std::string>();
        if (n["metadata"] && n["metadata"].IsMap()) {
          if (n["metadata"]["name"] && n["metadata"]["name"].IsScalar()) {
            d.name = n["metadata"]["name"].as<std::string>();
          }
          if (n["metadata"]["namespace"] && n["metadata"]["namespace"].IsScalar()) {
            d.ns = n["metadata"]["namespace"].as<std::string>();
          }
          // A submission may leave its name to the server.
          if (d.name.empty() && (d.kind == "Workload" || d.kind == "Job") && n["metadata"]["generateName"] &&
              n["metadata"]["generateName"].IsScalar()) {
            d.name = n["metadata"]["generateName"].as<std::string>();
          }
        }
        if (present == 1) {
          d.text = c;
        } else {
          YAML::Emitter out;
          out << n;
          if (!out.good()) return InvalidArgument(where + ": cannot emit it again: " + out.GetLastError());
          d.text = std::string(out.c_str()) + "\n";
        }
      } catch (const YAML::Exception& e) {
        return InvalidArgument(where + ": malformed YAML: " + e.msg);
      }
      if (d.kind.empty() || d.name.empty()) {
        return InvalidArgument(where + ": a manifest document needs kind and metadata.name");
      }
      if (!IsNamespacedKind(d.kind)) d.ns.clear();
      docs.push_back(std::move(d));
    }
  }
  return docs;
}

}  // namespace artel::api
