/// \file
/// How the CLI prints JSON: strings that came from a user's files (schedule
/// names, paths, messages quoting them) may hold invalid UTF-8, which is
/// printed as U+FFFD instead of failing the command:
/// `j.dump(2, ' ', false, k_replace_invalid_utf8)`.
#pragma once

#include <nlohmann/json.hpp>

namespace kda::tools {

inline constexpr nlohmann::json::error_handler_t k_replace_invalid_utf8 = nlohmann::json::error_handler_t::replace;

} // namespace kda::tools
