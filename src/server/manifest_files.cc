#include "server/manifest_files.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace artel::server {
namespace fs = std::filesystem;
namespace {

Result<std::string> ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return NotFound("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t CountLines(std::string_view s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// Appends one file's text; records where its first line lands in *out.
void AppendFile(const fs::path& f, const std::string& text, std::string* out, std::vector<ManifestSpan>* spans) {
  *out += "---\n";
  if (spans != nullptr) spans->push_back({CountLines(*out) + 1, f.string()});
  *out += text + "\n";
}

Status Collect(const fs::path& path, int depth, std::string* out, std::vector<ManifestSpan>* spans) {
  if (depth > 16) return InvalidArgument("kustomization nesting too deep at " + path.string());
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const char* k : {"kustomization.yaml", "kustomization.yml", "Kustomization"}) {
      fs::path kp = path / k;
      if (!fs::exists(kp, ec)) continue;
      try {
        YAML::Node n = YAML::LoadFile(kp.string());
        for (const auto& r : n["resources"]) {
          if (Status s = Collect(path / r.as<std::string>(), depth + 1, out, spans); !s.ok()) return s;
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
      AppendFile(f, *text, out, spans);
    }
    return Status::Ok();
  }
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  AppendFile(path, *text, out, spans);
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

Result<std::string> ReadManifestText(const std::string& path, std::vector<ManifestSpan>* spans) {
  std::string out;
  if (Status s = Collect(path, 0, &out, spans); !s.ok()) return s;
  return out;
}

Status MapManifestPosition(Status s, const std::string& source, const std::vector<ManifestSpan>& spans) {
  const SourcePos& pos = s.pos();
  if (pos.file != source || !pos.known()) return s;
  const ManifestSpan* in = nullptr;
  for (const ManifestSpan& sp : spans) {
    if (sp.first_line <= static_cast<size_t>(pos.line)) in = &sp;
  }
  if (in == nullptr) return s;
  SourcePos mapped = pos;
  mapped.file = in->file;
  mapped.line = pos.line - static_cast<int>(in->first_line) + 1;
  s.WithPos(std::move(mapped));
  return s;
}

bool IsNamespacedKind(std::string_view kind) { return kind == "LocalQueue" || kind == "ResourceQuota"; }

Result<std::vector<ManifestDoc>> SplitDocuments(std::string_view text) {
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
  for (auto& c : chunks) {
    try {
      YAML::Node n = YAML::Load(c);
      if (!n || n.IsNull()) continue;
      if (!n.IsMap()) return InvalidArgument("a manifest document must be a map");
      ManifestDoc d;
      if (n["kind"] && n["kind"].IsScalar()) d.kind = n["kind"].as<std::string>();
      if (n["metadata"] && n["metadata"].IsMap()) {
        if (n["metadata"]["name"] && n["metadata"]["name"].IsScalar())
          d.name = n["metadata"]["name"].as<std::string>();
        if (n["metadata"]["namespace"] && n["metadata"]["namespace"].IsScalar()) {
          d.ns = n["metadata"]["namespace"].as<std::string>();
        }
      }
      if (d.kind.empty() || d.name.empty())
        return InvalidArgument("a manifest document needs kind and metadata.name");
      if (!IsNamespacedKind(d.kind)) d.ns.clear();
      d.text = std::move(c);
      docs.push_back(std::move(d));
    } catch (const YAML::Exception& e) {
      return InvalidArgument("malformed YAML: " + e.msg);
    }
  }
  return docs;
}

}  // namespace artel::server
