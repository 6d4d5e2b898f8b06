#include "sim/python_process.hpp"

#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <thread>

#include "sim/interrupt.hpp"

extern char** environ;

namespace chunkflow {

namespace {

/// posix_spawn of /usr/bin/python3 with argv = python, script, extra..., args...; stdin_fd (if >= 0)
/// becomes the child's standard input. Returns the pid, or -1 when the spawn failed.
int spawn_python(const std::string& script, const std::vector<std::string>& extra, const std::vector<std::string>& args,
                 int stdin_fd) {
  std::vector<std::string> words{kPlotPython, script};
  words.insert(words.end(), extra.begin(), extra.end());
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(words.size() + 1);
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) return -1;
  if (stdin_fd >= 0 && posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return -1;
  }
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, kPlotPython, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? int(pid) : -1;
}

/// Waits for pid; its exit status, 128 + N for signal N, 127 when it cannot be waited for (a
/// parent that ignores SIGCHLD: chunkflow's main restores the default). chunkflow's handlers only
/// set a flag and glibc restarts a blocking waitpid after them, so the wait polls (every 2 ms, on
/// a ~0.3 s plot) to see the flag: once a SIGINT or SIGTERM is flagged (sim/interrupt.hpp), the
/// child gets SIGTERM, on which the plotting scripts remove their temporary image and exit.
int wait_exit_status(int pid) {
  int status = 0;
  bool terminated = false;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return 127;
    if (!terminated && interrupt_signal() != 0) {
      kill(pid, SIGTERM);
      terminated = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

}  // namespace

int run_python(const std::string& script, const std::vector<std::string>& args) {
  const int pid = spawn_python(script, {}, args, -1);
  return pid < 0 ? 127 : wait_exit_status(pid);
}

PythonPlot::PythonPlot(const std::string& script, const std::vector<std::string>& args) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return;  // draw() then returns 127
  pid_ = spawn_python(script, {"--wait-for-go"}, args, fds[1]);
  close(fds[1]);
  if (pid_ < 0) {
    close(fds[0]);
    return;
  }
  socket_ = fds[0];
}

PythonPlot::~PythonPlot() { finish(); }

int PythonPlot::draw() {
  if (pid_ < 0) return 127;
  // MSG_NOSIGNAL: a child that already exited (no matplotlib) must not raise SIGPIPE here; its
  // exit status says what happened.
  if (socket_ >= 0) (void)send(socket_, "go\n", 3, MSG_NOSIGNAL);
  return finish();
}

int PythonPlot::finish() {
  if (socket_ >= 0) {
    close(socket_);  // end of file for a child still waiting: it exits without drawing
    socket_ = -1;
  }
  if (pid_ < 0) return 127;
  const int rc = wait_exit_status(pid_);
  pid_ = -1;
  return rc;
}

}  // namespace chunkflow
