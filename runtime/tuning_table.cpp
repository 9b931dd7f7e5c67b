#include "runtime/tuning_table.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace kda {
namespace {

constexpr std::pair<ShapeClass, std::string_view> k_class_names[] = {{ShapeClass::few, "few"},
                                                                    {ShapeClass::one_wave, "one_wave"},
                                                                    {ShapeClass::two_waves, "two_waves"},
                                                                    {ShapeClass::many, "many"}};

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

} // namespace

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

ShapeClass shape_class(std::int64_t pairs, int sm_count) {
  if (2 * pairs <= sm_count) {
    return ShapeClass::few;
  }
  if (pairs <= sm_count) {
    return ShapeClass::one_wave;
  }
  if (pairs <= 2 * static_cast<std::int64_t>(sm_count)) {
    return ShapeClass::two_waves;
  }
  return ShapeClass::many;
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
}

TuningTable routing_tuning_table(const std::optional<std::string>& path) {
  TuningTable t = path ? TuningTable::load(*path) : TuningTable{};
  t.fill_from(TuningTable::shipped());
  return t;
}

} // namespace kda
