#include "tools/cache_target.hpp"
#include "tools/json_output.hpp"

#include "runtime/kernel_registry.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace kda::tools {

CacheTarget cache_target(const ParsedArgs& parsed) {
  const cache::CacheConfig& config = KernelRegistry::instance().disk_cache().config();
  CacheTarget t;
  t.lock_dir = config.lock_dir;
  if (const std::optional<std::string> dir = parsed.option("--cache-dir")) {
    if (!std::filesystem::is_directory(*dir)) {
      throw UsageError("--cache-dir " + *dir + " is not a directory");
    }
    t.root = *dir;
    return t;
  }
  t.root = config.root;
  t.memory_only_reason = config.memory_only_warning;
  return t;
}

bool report_memory_only(const CacheTarget& target, bool json, const char* nothing_to, std::ostream& out) {
  if (target.root) {
    return false;
  }
  if (json) {
    out << nlohmann::json{{"root", nullptr}, {"memory_only", target.memory_only_reason}}.dump(2, ' ', false, k_replace_invalid_utf8) << "\n";
  } else {
    out << "the kernel cache is memory-only (" << target.memory_only_reason << "): nothing to " << nothing_to << "\n";
  }
  return true;
}

} // namespace kda::tools
