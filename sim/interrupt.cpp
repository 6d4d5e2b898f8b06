// Signal flag; see sim/interrupt.hpp.
#include "sim/interrupt.hpp"

#include <csignal>
#include <cstring>

namespace chunkflow {

namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_signal(int sig) {
  g_signal = sig;
  std::signal(sig, SIG_DFL);  // a second one ends the process
}

}  // namespace

void install_interrupt_handlers() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}

int interrupt_signal() { return g_signal; }

Interrupted::Interrupted(int signal, int completed, int total)
    : std::runtime_error(std::string("interrupted by ") + (signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal") +
                         " after " + std::to_string(completed) + " of " + std::to_string(total) + " configurations"),
      signal_(signal),
      completed_(completed),
      total_(total) {}

}  // namespace chunkflow
