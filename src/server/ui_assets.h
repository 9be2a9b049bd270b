// The built-in web UI (web/dist), embedded into arteld at build time by
// src/server/embed_ui.cmake. Served at /ui/ by the API server (api.cc).
//
// Thread-safety: immutable data.
#pragma once

#include <cstddef>
#include <string_view>

namespace artel::server {

struct UiAsset {
  const char* name;  // plain file name, e.g. "app.js"
  const char* data;
  size_t size;
};

// The asset with this plain file name, or nullptr.
const UiAsset* FindUiAsset(std::string_view name);

}  // namespace artel::server
