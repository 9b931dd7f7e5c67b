#include "tools/cli.hpp"

#include <iostream>

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return kda::tools::run_cli(args, std::cout, std::cerr);
}
