/// \file
/// The shape-key options shared by commands that generate code:
/// --state bf16|fp32, --layout fixed|packed and --checkpoints (native
/// checkpoints compiled in).
#pragma once

#include "compiler/shape_key.hpp"
#include "tools/args.hpp"

#include <set>
#include <string>

namespace kda::tools {

/// `flags` and the shape-key flags (--checkpoints).
std::set<std::string> shape_flags(std::set<std::string> flags);

/// Option names this reader consumes.
std::set<std::string> shape_option_names();

/// The shape key from parsed options (UsageError for unknown words).
ShapeKey shape_from_options(const ParsedArgs& args);

/// --state as a precision, `fallback` when it is absent (UsageError for
/// another word).
StatePrecision state_option(const ParsedArgs& args, StatePrecision fallback);

} // namespace kda::tools
