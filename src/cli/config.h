// The client configuration file of `artel` (docs/cli.md, "Configuration"):
// named contexts, each a server, a token or token file, a CA bundle and a
// default namespace, and the current context.
//
// Where: $ARTEL_CONFIG, else $XDG_CONFIG_HOME/artel/config, else
// ~/.config/artel/config. The flat file of earlier versions
// (~/.config/artel/config.yaml with top-level server/token/namespace/caFile)
// is still read when the new file does not exist; it is one context named
// "default".
//
// Thread-safety: used from main() only.
#pragma once

#include <string>
#include <vector>

namespace artel::cli {

struct Context {
  std::string name;
  std::string server;
  std::string token;
  std::string token_file;
  std::string ca_file;
  std::string ns;
  bool insecure = false;
};

struct ConfigFile {
  std::string path;     // where it was read from (or will be written)
  bool exists = false;  // false: no file yet (an empty configuration)
  std::string current;  // currentContext
  std::vector<Context> contexts;

  Context* Find(const std::string& name);
};

// The path the configuration is read from and written to.
std::string ConfigPath();

// Reads `path`; a missing file is an empty configuration. A malformed file
// is an error naming the file, the line and the field.
bool LoadConfig(const std::string& path, ConfigFile* out, std::string* err);

// Writes the file atomically (temporary file + rename) with mode 0600: it
// may hold tokens. Creates the directory (0700) when missing.
bool SaveConfig(const ConfigFile& cfg, std::string* err);

// The file as YAML; tokens are shown as REDACTED unless `raw`.
std::string ConfigYaml(const ConfigFile& cfg, bool raw);

// Reads a token file (first line, trimmed). When the file can be read by
// its group or by others, *warning says so, as ssh does for private keys.
bool ReadTokenFile(const std::string& path, std::string* token, std::string* warning, std::string* err);

// A warning when `path` (a file holding a secret) is readable by its group or
// others; "" otherwise.
std::string PermissionWarning(const std::string& path, const std::string& what);

}  // namespace artel::cli
