#pragma once
// SIGINT and SIGTERM during long runs (issue 11 §4): the first signal only sets a flag; sweeps stop
// starting configurations, finish the ones running, write nothing, print what completed and the
// program ends by the signal itself (chunkflow_main.cpp end_by_signal: a shell reports 130 for
// SIGINT, 143 for SIGTERM, and stops a loop of calls). The other commands take milliseconds and run
// to their end (a plot they draw is terminated: python_process.hpp run_python), then end by the
// signal the same way. A second signal terminates at once (default
// action), so a stuck run can still be killed. Output files are written only after a run
// completes, each through a temporary file and a rename (write_file_atomic), so an interrupted run
// leaves the previous file or none.
#include <stdexcept>
#include <string>

namespace chunkflow {

/// Installs the handlers (idempotent). Called by the program's main, not by library code.
void install_interrupt_handlers();

/// The signal received (SIGINT, SIGTERM), or 0.
int interrupt_signal();

/// "SIGINT", "SIGTERM", or "a signal" for any other.
std::string signal_name(int signal);

/// Thrown by a run that stopped because of a signal; `completed` of `total` units were done.
class Interrupted : public std::runtime_error {
 public:
  Interrupted(int signal, int completed, int total);
  /// A command that stopped at the signal while `doing` (what() is "interrupted by SIGINT while " +
  /// doing); completed() and total() are 0.
  Interrupted(int signal, const std::string& doing);
  int signal() const { return signal_; }
  int completed() const { return completed_; }
  int total() const { return total_; }

 private:
  int signal_, completed_, total_;
};

}  // namespace chunkflow
