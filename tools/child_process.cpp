#include "tools/child_process.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kda::tools {

std::string ChildOutcome::describe(int timeout_s) const {
  if (!started) {
    return "could not start: " + error;
  }
  if (timed_out) {
    return fmt::format("timed out after {} s (killed)", timeout_s);
  }
  if (signal != 0) {
    return fmt::format("ended by signal {} ({})", signal, strsignal(signal));
  }
  return fmt::format("exit {}", exit_code);
}

ChildOutcome run_child(const std::vector<std::string>& argv, int timeout_s) {
  ChildOutcome r;
  if (argv.empty()) {
    r.error = "no command";
    return r;
  }
  int pipe_fd[2];
  if (pipe(pipe_fd) != 0) {
    r.error = fmt::format("pipe: {}", std::strerror(errno));
    return r;
  }
  std::vector<char*> cargv;
  for (const std::string& a : argv) {
    cargv.push_back(const_cast<char*>(a.c_str()));
  }
  cargv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    r.error = fmt::format("fork: {}", std::strerror(errno));
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    return r;
  }
  if (pid == 0) { // the child: stdout into the pipe, then the command
    dup2(pipe_fd[1], STDOUT_FILENO);
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(pipe_fd[1]);
  r.started = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd p{pipe_fd[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) {
      break;
    }
    if (ready > 0) {
      const ssize_t n = read(pipe_fd[0], buffer, sizeof buffer);
      if (n > 0) {
        r.out.append(buffer, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        break; // end of its output
      }
    }
  }
  close(pipe_fd[0]);
  int status = 0;
  if (r.timed_out) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    r.signal = SIGKILL;
    return r;
  }
  // its stdout is closed; it may still be running (a hang after the output)
  for (;;) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      r.signal = SIGKILL;
      return r;
    }
    usleep(10000);
  }
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  return r;
}

std::string self_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string();
}

} // namespace kda::tools
