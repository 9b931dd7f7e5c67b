/// \file
/// A small command-line reader: positional words, `--flag` and `--option VALUE`
/// (or `--option=VALUE`). Anything not declared is a usage error.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace kda::tools {

class UsageError : public std::runtime_error {
public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

/// The content of an input named on the command line (an AOT plan, say) is
/// wrong: not valid JSON, a value of the wrong type, an unknown name (exit 1).
class ContentError : public std::runtime_error {
public:
  explicit ContentError(const std::string& message) : std::runtime_error(message) {}
};

struct ParsedArgs {
  std::vector<std::string> positional;
  std::set<std::string> flags;
  std::map<std::string, std::string> options;

  bool has(const std::string& flag) const { return flags.contains(flag); }
  std::optional<std::string> option(const std::string& name) const;
};

/// Parses `args`; `flags` take no value, `options` take one. Throws UsageError.
ParsedArgs parse_args(const std::vector<std::string>& args, const std::set<std::string>& flags,
                      const std::set<std::string>& options);

} // namespace kda::tools
