#include "test_support.hpp"

#include "tools/cli.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kda::test {

std::string source_path(const std::string& relative) {
  return std::string(KDAJIT_SOURCE_DIR) + "/" + relative;
}

std::string kdajit_binary() {
  const char* cli = std::getenv("KDAJIT_CLI");
  return cli != nullptr && *cli != '\0' ? std::string(cli) : std::string(KDAJIT_BINARY);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("reading " << path);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

CliRun run_kdajit(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  CliRun run;
  run.exit_code = tools::run_cli(args, out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

} // namespace kda::test
