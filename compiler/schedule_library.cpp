#include "compiler/schedule_library.hpp"

#include "compiler/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace kda {
namespace {

// The .json files of one KDAJIT_SCHEDULE_PATH entry: itself, or a directory's, sorted.
std::vector<std::string> entry_files(const std::string& entry) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(entry, ec)) {
    if (!fs::exists(entry, ec)) {
      throw ScheduleError(entry, {{"", "KDAJIT_SCHEDULE_PATH names a file or directory that does not exist"}});
    }
    return {entry};
  }
  std::vector<std::string> files;
  for (const fs::directory_entry& f : fs::directory_iterator(entry, ec)) {
    if (f.path().extension() == ".json") {
      files.push_back(f.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace

const std::vector<Schedule>& shipped_schedules() {
  static const std::vector<Schedule> k_schedules = [] {
    std::vector<Schedule> out;
    for (const EmbeddedFile& f : embedded_schedules()) {
      out.push_back(parse_schedule_text(std::string(f.text), "schedules/" + std::string(f.name) + ".json"));
    }
    return out;
  }();
  return k_schedules;
}

std::vector<Schedule> schedules_on_path(const std::string& path_list) {
  std::vector<Schedule> out;
  std::istringstream entries(path_list);
  for (std::string entry; std::getline(entries, entry, ':');) {
    if (entry.empty()) {
      continue;
    }
    for (const std::string& file : entry_files(entry)) {
      Schedule s = load_schedule_file(file);
      s.shipped = false;
      const bool taken = find_shipped_schedule(s.name) != nullptr ||
                         std::any_of(out.begin(), out.end(), [&](const Schedule& o) { return o.name == s.name; });
      if (taken) {
        throw ScheduleError(file, {{"/name", fmt::format("'{}' is already the name of a {} schedule", s.name,
                                                         find_shipped_schedule(s.name) ? "shipped" : "KDAJIT_SCHEDULE_PATH")}});
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

const std::vector<Schedule>& available_schedules() {
  static const std::vector<Schedule> k_schedules = [] {
    std::vector<Schedule> out = shipped_schedules();
    if (const char* path = std::getenv("KDAJIT_SCHEDULE_PATH"); path != nullptr) {
      std::vector<Schedule> extra = schedules_on_path(path);
      out.insert(out.end(), std::make_move_iterator(extra.begin()), std::make_move_iterator(extra.end()));
    }
    return out;
  }();
  return k_schedules;
}

const Schedule* find_available_schedule(const std::string& name) {
  for (const Schedule& s : available_schedules()) {
    if (s.name == name) {
      return &s;
    }
  }
  return nullptr;
}

const Schedule* find_shipped_schedule(const std::string& name) {
  for (const Schedule& s : shipped_schedules()) {
    if (s.name == name) {
      return &s;
    }
  }
  return nullptr;
}

} // namespace kda
