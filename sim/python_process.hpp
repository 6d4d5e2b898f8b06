#pragma once
// The plotting scripts (scripts/plot_*.py) run as child processes of /usr/bin/python3, started
// with posix_spawn (no shell: any path is passed through as it is). Importing matplotlib costs
// 0.3-0.4 s on the 2-core development machine (2026-11-25), longer than the whole default sweep
// (0.20 s on 2 threads), so the sweep's plot is started *before* the sweep: the child imports
// matplotlib while the sweep runs and draws once the parent tells it that the CSV is complete
// (PythonPlot below).
#include <string>
#include <vector>

namespace chunkflow {

/// The interpreter every plotting script runs under: Debian's, which has python3-matplotlib
/// (scripts/setup.sh installs it; the python3 first on PATH may be another interpreter).
inline constexpr const char* kPlotPython = "/usr/bin/python3";

/// Runs `/usr/bin/python3 script args...` and waits for it. Returns its exit status; 127 when the
/// interpreter cannot be started, 128 + N when signal N ended it. Standard streams are inherited.
/// A SIGINT or SIGTERM flagged while it runs (sim/interrupt.hpp) sends it SIGTERM; the caller
/// checks interrupt_signal() afterwards.
int run_python(const std::string& script, const std::vector<std::string>& args);

/// A plotting script started ahead of its input: `/usr/bin/python3 script --wait-for-go args...`
/// with a socket as its standard input. With --wait-for-go the script ignores SIGINT until it is
/// told to draw (a terminal's Ctrl-C during the sweep is chunkflow's to handle: sim/interrupt.hpp),
/// imports matplotlib, then reads one line from stdin: "go" draws; anything else (end of file
/// included) exits 0 without drawing, and a missing matplotlib is reported only on "go". The script
/// writes its image through a temporary file and a rename, and removes the temporary file on an
/// error, SIGINT or SIGTERM; only SIGKILL can leave OUT.tmp.PID.png behind.
///
/// Usage: `PythonPlot p(script, {csv, png});` ... write the CSV ... `int rc = p.draw();`.
/// Destroying a PythonPlot whose draw() was not called tells the child to exit and reaps it.
class PythonPlot {
 public:
  /// Starts the child. Never throws for a missing interpreter or a failed spawn: draw() then
  /// returns 127.
  PythonPlot(const std::string& script, const std::vector<std::string>& args);
  ~PythonPlot();
  PythonPlot(const PythonPlot&) = delete;
  PythonPlot& operator=(const PythonPlot&) = delete;

  /// Tells the child to draw and waits for it. Returns its exit status as run_python does (127
  /// when it could not be started); a signal flagged meanwhile terminates the child, as in
  /// run_python. Call at most once.
  int draw();

 private:
  /// Closes the parent's end of the socket and waits for the child; its exit status.
  int finish();
  int pid_ = -1;     ///< the child, or -1 when the spawn failed
  int socket_ = -1;  ///< the parent's end of the child's stdin
};

}  // namespace chunkflow
