/// \file
/// The device fragments of templates/, embedded into the binary at build time
/// (cmake/embed_files.cmake), so kernels compile under NVRTC with no include
/// path and no toolkit headers on the host.
#pragma once

#include "compiler/embedded_file.hpp"

#include <span>
#include <string>
#include <string_view>

namespace kda {

/// Every embedded fragment ("warp_mma/recurrence", ...), sorted by name.
std::span<const EmbeddedFile> embedded_templates();

/// The text of fragment `name`; InternalError when it is not embedded.
std::string_view template_text(const std::string& name);

} // namespace kda
