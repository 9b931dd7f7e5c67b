#include "tools/args.hpp"

namespace kda::tools {

std::optional<std::string> ParsedArgs::option(const std::string& name) const {
  auto it = options.find(name);
  return it == options.end() ? std::nullopt : std::optional<std::string>(it->second);
}

ParsedArgs parse_args(const std::vector<std::string>& args, const std::set<std::string>& flags,
                      const std::set<std::string>& options) {
  ParsedArgs parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      parsed.positional.push_back(a);
      continue;
    }
    std::string name = a;
    std::optional<std::string> value;
    if (const auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    }
    if (flags.contains(name)) {
      if (value) {
        throw UsageError("option " + name + " takes no value");
      }
      parsed.flags.insert(name);
    } else if (options.contains(name)) {
      if (!value) {
        if (i + 1 >= args.size()) {
          throw UsageError("option " + name + " needs a value");
        }
        value = args[++i];
      }
      parsed.options[name] = *value;
    } else {
      throw UsageError("unknown option '" + name + "'");
    }
  }
  return parsed;
}

} // namespace kda::tools
