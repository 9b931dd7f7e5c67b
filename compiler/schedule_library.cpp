#include "compiler/schedule_library.hpp"

namespace kda {

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

const Schedule* find_shipped_schedule(const std::string& name) {
  for (const Schedule& s : shipped_schedules()) {
    if (s.name == name) {
      return &s;
    }
  }
  return nullptr;
}

} // namespace kda
