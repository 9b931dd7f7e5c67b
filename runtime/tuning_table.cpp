#include "runtime/tuning_table.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace kda {
namespace {

constexpr std::pair<ShapeClass, std::string_view> k_class_names[] = {
    {ShapeClass::few, "few"},
    {ShapeClass::one_wave, "one_wave"},
    {ShapeClass::two_waves, "two_waves"},
    {ShapeClass::many, "many"},
    {ShapeClass::few_short, "few_short"},
    {ShapeClass::one_wave_short, "one_wave_short"},
    {ShapeClass::two_waves_short, "two_waves_short"},
    {ShapeClass::many_short, "many_short"},
    {ShapeClass::few_tiny, "few_tiny"},
    {ShapeClass::one_wave_tiny, "one_wave_tiny"},
    {ShapeClass::two_waves_tiny, "two_waves_tiny"},
    {ShapeClass::many_tiny, "many_tiny"},
};

// k_class_names' classes, in its order
constexpr auto k_all_classes = [] {
  std::array<ShapeClass, std::size(k_class_names)> out{};
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = k_class_names[i].first;
  }
  return out;
}();

nlohmann::json record_json(const SelftestRecord& r) {
  return {{"device", r.device},         {"schedule", r.schedule}, {"target", r.target},
          {"source_sha256", r.source_sha256}, {"driver_version", r.driver_version}, {"nvrtc", r.nvrtc},
          {"kdajit", r.kdajit},         {"pass", r.pass},         {"detail", r.detail}};
}

std::optional<SelftestRecord> record_from_json(const nlohmann::json& j) {
  if (!j.is_object()) {
    return std::nullopt;
  }
  SelftestRecord r;
  for (auto [key, field] : {std::pair{"device", &r.device}, std::pair{"schedule", &r.schedule},
                            std::pair{"target", &r.target}, std::pair{"source_sha256", &r.source_sha256},
                            std::pair{"nvrtc", &r.nvrtc}, std::pair{"kdajit", &r.kdajit},
                            std::pair{"detail", &r.detail}}) {
    if (!j.contains(key) || !j[key].is_string()) {
      return std::nullopt;
    }
    *field = j[key].get<std::string>();
  }
  if (!j.contains("driver_version") || !j["driver_version"].is_number_integer() || !j.contains("pass") ||
      !j["pass"].is_boolean()) {
    return std::nullopt;
  }
  r.driver_version = j["driver_version"].get<int>();
  r.pass = j["pass"].get<bool>();
  return r;
}

// The last CC key "cc12.0" with its major and minor, or nothing.
std::optional<std::pair<int, int>> parse_cc_key(const std::string& key) {
  int major = 0;
  int minor = 0;
  char tail = 0;
  if (std::sscanf(key.c_str(), "cc%d.%d%c", &major, &minor, &tail) != 2 || major < 0 || minor < 0) {
    return std::nullopt;
  }
  return std::pair{major, minor};
}

} // namespace

std::string DecompositionRule::label(int device_sm_count, int cc_major, int cc_minor) const {
  if (!fallback) {
    return fmt::format("{}, {} SMs (measured)", cc, sm_count);
  }
  return fmt::format("{}, the {}-SM part's threshold (fallback: CC {}.{} with {} SMs was never measured)", cc, sm_count,
                     cc_major, cc_minor, device_sm_count);
}

std::optional<DecompositionRule> TuningTable::decomposition_rule(int cc_major, int cc_minor, int sm_count) const {
  const std::string own = fmt::format("cc{}.{}", cc_major, cc_minor);
  const DecompositionEntry* entry = nullptr;
  std::string key;
  if (auto it = m_decomposition.find(own); it != m_decomposition.end()) {
    entry = &it->second;
    key = own;
  } else {
    for (const auto& [k, e] : m_decomposition) {
      const std::optional<std::pair<int, int>> cc = parse_cc_key(k);
      if (entry == nullptr && cc && cc->first == cc_major) {
        entry = &e;
        key = k;
      }
    }
  }
  if (entry == nullptr) {
    return std::nullopt;
  }
  DecompositionRule rule;
  rule.cc = key;
  const auto measured = entry->fused_min_pairs.find(sm_count);
  rule.fallback = key != own || measured == entry->fused_min_pairs.end();
  rule.sm_count = rule.fallback ? entry->fallback_sm_count : sm_count;
  rule.fused_min_pairs = rule.fallback ? entry->fused_min_pairs.at(entry->fallback_sm_count) : measured->second;
  return rule;
}

bool SelftestRecord::same_identity(const SelftestRecord& o) const {
  return device == o.device && schedule == o.schedule && target == o.target && source_sha256 == o.source_sha256 &&
         driver_version == o.driver_version && nvrtc == o.nvrtc && kdajit == o.kdajit;
}

void TuningTable::record_selftest(const SelftestRecord& record) {
  for (SelftestRecord& r : m_selftests) {
    if (r.same_identity(record)) {
      r = record;
      return;
    }
  }
  m_selftests.push_back(record);
}

const SelftestRecord* TuningTable::find_selftest(const SelftestRecord& identity) const {
  for (const SelftestRecord& r : m_selftests) {
    if (r.same_identity(identity)) {
      return &r;
    }
  }
  return nullptr;
}

std::string_view to_string(ShapeClass c) {
  for (const auto& [value, name] : k_class_names) {
    if (value == c) {
      return name;
    }
  }
  return "?";
}

static_assert(static_cast<int>(ShapeClass::few_short) == 4 && static_cast<int>(ShapeClass::few_tiny) == 8 &&
                  static_cast<int>(ShapeClass::many_tiny) == 11,
              "each tier's four fills in order: class = 4 tier + fill");

ShapeClass shape_class(std::int64_t pairs, int sm_count, std::int64_t average_tokens) {
  // the fill (0..3), then the tier: the enum lists each tier's four fills in order
  const int fill = 2 * pairs <= sm_count                                 ? 0
                   : pairs <= sm_count                                   ? 1
                   : pairs <= 2 * static_cast<std::int64_t>(sm_count) ? 2
                                                                         : 3;
  const int tier = average_tokens <= k_tiny_sequence_tokens    ? 2
                   : average_tokens <= k_short_sequence_tokens ? 1
                                                               : 0;
  return static_cast<ShapeClass>(4 * tier + fill);
}

std::int64_t average_tokens(std::int64_t total_tokens, std::int64_t sequences) {
  return sequences > 0 ? total_tokens / sequences : 0;
}

bool short_sequences(ShapeClass c) {
  return c != long_sequence_class(c);
}

ShapeClass long_sequence_class(ShapeClass c) {
  return static_cast<ShapeClass>(static_cast<int>(c) % 4);
}

ShapeClass longer_sequence_class(ShapeClass c) {
  const int i = static_cast<int>(c);
  return i < 4 ? c : static_cast<ShapeClass>(i - 4);
}

std::span<const ShapeClass> all_shape_classes() {
  return k_all_classes;
}

std::string tuning_device_key(int cc_major, int cc_minor, int sm_count) {
  return fmt::format("cc{}.{}-sm{}", cc_major, cc_minor, sm_count);
}

std::optional<std::string> TuningTable::lookup(const std::string& device_key, ShapeClass c) const {
  auto d = m_entries.find(device_key);
  if (d == m_entries.end()) {
    return std::nullopt;
  }
  auto e = d->second.find(std::string(to_string(c)));
  return e == d->second.end() ? std::nullopt : std::optional<std::string>(e->second);
}

std::vector<std::pair<std::string, int>> TuningTable::devices_of_cc(int cc_major, int cc_minor) const {
  const std::string prefix = fmt::format("cc{}.{}-sm", cc_major, cc_minor);
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [key, classes] : m_entries) {
    if (key.starts_with(prefix)) {
      const std::string count = key.substr(prefix.size());
      if (!count.empty() && count.find_first_not_of("0123456789") == std::string::npos && count.size() < 6) {
        out.emplace_back(key, std::stoi(count));
      }
    }
  }
  return out;
}

void TuningTable::set(const std::string& device_key, ShapeClass c, const std::string& schedule) {
  m_entries[device_key][std::string(to_string(c))] = schedule;
}

nlohmann::json TuningTable::to_json() const {
  nlohmann::json j = {{"format_version", k_format_version}, {"devices", m_entries}};
  if (!m_selftests.empty()) {
    nlohmann::json records = nlohmann::json::array();
    for (const SelftestRecord& r : m_selftests) {
      records.push_back(record_json(r));
    }
    j["selftests"] = std::move(records);
  }
  for (const auto& [cc, e] : m_decomposition) {
    nlohmann::json thresholds = nlohmann::json::object();
    for (const auto& [sms, pairs] : e.fused_min_pairs) {
      thresholds[std::to_string(sms)] = pairs;
    }
    j["decomposition"][cc] = {{"fused_min_pairs", thresholds}, {"fallback_sm_count", e.fallback_sm_count}};
  }
  return j;
}

std::optional<TuningTable> TuningTable::from_json(const nlohmann::json& json) {
  if (!json.is_object() || json.value("format_version", 0) != k_format_version || !json.contains("devices") ||
      !json["devices"].is_object()) {
    return std::nullopt;
  }
  TuningTable t;
  for (const auto& [device, classes] : json["devices"].items()) {
    if (!classes.is_object()) {
      return std::nullopt;
    }
    for (const auto& [name, schedule] : classes.items()) {
      bool known = false;
      for (const auto& [value, class_name] : k_class_names) {
        known = known || class_name == name;
      }
      if (!known || !schedule.is_string()) {
        return std::nullopt;
      }
      t.m_entries[device][name] = schedule.get<std::string>();
    }
  }
  if (json.contains("selftests")) {
    if (!json["selftests"].is_array()) {
      return std::nullopt;
    }
    for (const nlohmann::json& one : json["selftests"]) {
      const std::optional<SelftestRecord> r = record_from_json(one);
      if (!r) {
        return std::nullopt;
      }
      t.record_selftest(*r);
    }
  }
  if (json.contains("decomposition")) {
    if (!json["decomposition"].is_object()) {
      return std::nullopt;
    }
    for (const auto& [cc, one] : json["decomposition"].items()) {
      if (!parse_cc_key(cc) || !one.is_object() || !one.contains("fused_min_pairs") ||
          !one["fused_min_pairs"].is_object() || !one.contains("fallback_sm_count") ||
          !one["fallback_sm_count"].is_number_integer()) {
        return std::nullopt;
      }
      DecompositionEntry e;
      for (const auto& [sms, pairs] : one["fused_min_pairs"].items()) {
        if (sms.empty() || sms.size() > 5 || sms.find_first_not_of("0123456789") != std::string::npos ||
            !pairs.is_number_integer() || pairs.get<std::int64_t>() < 0) {
          return std::nullopt;
        }
        e.fused_min_pairs[std::stoi(sms)] = pairs.get<std::int64_t>();
      }
      e.fallback_sm_count = one["fallback_sm_count"].get<int>();
      if (!e.fused_min_pairs.contains(e.fallback_sm_count)) {
        return std::nullopt; // the fallback must be a measured part
      }
      t.m_decomposition[cc] = std::move(e);
    }
  }
  return t;
}

TuningTable TuningTable::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return {};
  }
  std::ostringstream text;
  text << in.rdbuf();
  const nlohmann::json json = nlohmann::json::parse(text.str(), nullptr, false);
  return from_json(json).value_or(TuningTable{});
}

void TuningTable::save(const std::string& path) const {
  const std::string tmp = fmt::format("{}.tmp-{}", path, static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << to_json().dump(2) << "\n";
    if (!out) {
      throw CacheError(fmt::format("cannot write the tuning table {}", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw CacheError(fmt::format("cannot rename {} to {}", tmp, path));
  }
}

std::optional<std::string> tuning_table_path(const std::optional<std::string>& cache_root) {
  if (const char* file = std::getenv("KDAJIT_TUNE_FILE"); file != nullptr && *file != '\0') {
    return std::string(file);
  }
  if (cache_root) {
    return *cache_root + "/tuning-v1.json";
  }
  return std::nullopt;
}

const TuningTable& TuningTable::shipped() {
  static const TuningTable k_table = [] {
    TuningTable t;
    for (const EmbeddedFile& f : embedded_tuning_tables()) {
      const std::optional<TuningTable> one = from_json(nlohmann::json::parse(f.text, nullptr, false));
      if (!one) {
        throw InternalError(fmt::format("tuning/{}.json is not a tuning table of format {}", f.name, k_format_version));
      }
      t.fill_from(*one);
    }
    return t;
  }();
  return k_table;
}

void TuningTable::fill_from(const TuningTable& other) {
  for (const auto& [device, classes] : other.m_entries) {
    for (const auto& [name, schedule] : classes) {
      m_entries[device].emplace(name, schedule);
    }
  }
  for (const SelftestRecord& r : other.m_selftests) {
    if (find_selftest(r) == nullptr) {
      m_selftests.push_back(r);
    }
  }
  for (const auto& [cc, e] : other.m_decomposition) {
    m_decomposition.emplace(cc, e);
  }
}

TuningTable routing_tuning_table(const std::optional<std::string>& path) {
  TuningTable t = path ? TuningTable::load(*path) : TuningTable{};
  t.fill_from(TuningTable::shipped());
  return t;
}

} // namespace kda
