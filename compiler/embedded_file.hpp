/// \file
/// A file embedded into the binary at build time (cmake/embed_files.cmake).
#pragma once

#include <string_view>

namespace kda {

struct EmbeddedFile {
  std::string_view name; ///< path under its directory without the extension
  std::string_view text;
};

} // namespace kda
