/// \file
/// The `kdajit` command line: dispatch to one function per subcommand, and the
/// mapping of exceptions to the documented exit codes (tools/exit_codes.hpp).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace kda::tools {

/// Runs `kdajit ARGS...` (args exclude the program name); returns the exit code.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// `kdajit --help`.
std::string usage_text();

// One function per subcommand (one source file each).
int schedule_check_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int compile_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cache_ls_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cache_gc_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cache_clear_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int repro_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int aot_build_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int env_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cache_explain_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cache_show_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int cache_verify_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int route_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int accuracy_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int selftest_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int tune_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int verify_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int bench_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int first_call_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int emit_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int schedule_explain_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace kda::tools
