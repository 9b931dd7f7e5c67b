// The process of the test "background builds: a new process that exits
// during its first compile exits cleanly" (tests/runtime/
// test_background_compiles.cpp), a program of its own so that NVRTC has
// compiled nothing in it: loads NVRTC as a call that keys a kernel does,
// starts the background build of portable_c16 with the given description
// for sm_90, and exits the given number of milliseconds later (exit waits
// for the build).
//   kdajit_background_exit_process DESCRIPTION EXIT_AFTER_MS
#include "compiler/schedule.hpp"
#include "compiler/target.hpp"
#include "runtime/background_compiles.hpp"
#include "runtime/kernel_registry.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: kdajit_background_exit_process DESCRIPTION EXIT_AFTER_MS\n";
    return 2;
  }
  std::ifstream file(std::string(KDAJIT_SOURCE_DIR) + "/schedules/portable_c16.json");
  nlohmann::json doc = nlohmann::json::parse(file);
  doc["description"] = argv[1];
  static const kda::Schedule schedule = kda::parse_schedule(doc, "background_build_test.json");
  (void)kda::KernelRegistry::instance().nvrtc_version();
  kda::build_in_background(schedule, *kda::find_target("sm_90"), kda::ShapeKey{});
  std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(argv[2])));
  std::exit(0); // while NVRTC compiles: exit waits for the build
}
