#pragma once
// The `chunkflow` command line (CLI11). Each group of commands registers itself on the app; the
// callbacks do the work. Library code throws; chunkflow_main.cpp maps errors to exit codes
// (InputError → 2).
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace chunkflow {

struct CliContext {
  std::string command_line;   ///< the whole command line, for context blocks
  std::string program_dir;    ///< folder of the executable (to find scripts/)
};

/// `model`, `simulate`, `sweep`, `bench`, and the main job (no subcommand).
void register_simulator_commands(CLI::App& app, const CliContext& context);

/// `calibrate`, `compare`, `validate` and `tune` (sim/cli_calibration.cpp).
void register_calibration_commands(CLI::App& app, const CliContext& context);

/// `node list`, `node show` and `node import` (sim/cli_node.cpp).
void register_node_commands(CLI::App& app, const CliContext& context);

/// The main job: the default sweep of the embedded default scenario, table on stdout, CSV, JSON
/// and PNG under `out_dir`.
int run_main_job(const CliContext& context, const std::string& out_dir);

/// `sweep --grid FILE [--out DIR] [--threads N] [--resume]` (sim/cli_grid.cpp): runs the grid on every
/// core, and on every rank under mpirun; rank 0 writes DIR/grid.csv and DIR/grid.jsonl and prints a
/// summary. Returns the exit code.
int run_grid_sweep(const CliContext& context, const std::string& grid_file, const std::string& out_dir, int threads,
                   bool resume);

/// Finds scripts/<name> (source tree recorded at build time, or beside the executable's parent).
/// Returns "" if not found.
std::string find_script(const CliContext& context, const std::string& name);


}  // namespace chunkflow
