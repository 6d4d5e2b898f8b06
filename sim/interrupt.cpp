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

std::string signal_name(int signal) { return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "a signal"; }

Interrupted::Interrupted(int signal, int completed, int total)
    : std::runtime_error("interrupted by " + signal_name(signal) + " after " + std::to_string(completed) + " of " +
                         std::to_string(total) + " configurations"),
      signal_(signal),
      completed_(completed),
      total_(total) {}

Interrupted::Interrupted(int signal, const std::string& doing)
    : std::runtime_error("interrupted by " + signal_name(signal) + " while " + doing), signal_(signal), completed_(0), total_(0) {}

}  // namespace chunkflow
