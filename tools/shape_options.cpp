#include "tools/shape_options.hpp"

namespace kda::tools {

std::set<std::string> shape_flags(std::set<std::string> flags) {
  flags.insert("--checkpoints");
  return flags;
}

std::set<std::string> shape_option_names() {
  return {"--state", "--layout"};
}

ShapeKey shape_from_options(const ParsedArgs& args) {
  ShapeKey key;
  key.state_dtype = state_option(args, key.state_dtype);
  if (std::optional<std::string> layout = args.option("--layout")) {
    const std::optional<LayoutKind> l = parse_layout_kind(*layout);
    if (!l) {
      throw UsageError("--layout takes fixed or packed, got '" + *layout + "'");
    }
    key.layout = *l;
  }
  key.checkpoints = args.has("--checkpoints");
  return key;
}

StatePrecision state_option(const ParsedArgs& args, StatePrecision fallback) {
  const std::optional<std::string> state = args.option("--state");
  if (!state) {
    return fallback;
  }
  const std::optional<StatePrecision> p = parse_state_precision(*state);
  if (!p) {
    throw UsageError("--state takes bf16 or fp32, got '" + *state + "'");
  }
  return *p;
}

} // namespace kda::tools
