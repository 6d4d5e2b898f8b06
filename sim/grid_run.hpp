#pragma once
// Running a grid (issue 12 §1, §3): configurations in blocks of consecutive indices, computed by a
// pool of threads on every process (MPI rank), each block owned by one rank (greedy: the next block
// goes to the rank with the least estimated cost so far, sim/grid.hpp GridConfig::cost), rows
// written by rank 0 in configuration order as soon as the blocks before them are in: a CSV and a
// JSON Lines file, each opening with the context block, streamed to `<out>/grid.{csv,jsonl}.partial`
// and renamed to `<out>/grid.{csv,jsonl}` when complete. The output is a function of the grid and
// the command line only: any thread count and any number of ranks write the same bytes.
//
// --resume: with partial files of the same grid (same digest and configuration count) present,
// keeps their rows up to the last one both files hold complete and continues after it.
// SIGINT/SIGTERM: stops starting configurations, writes every block completed in order, leaves the
// partial files for --resume and throws Interrupted (exit 128 + signal).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sim/grid.hpp"

namespace chunkflow {

/// The processes a grid runs on: one (no MPI), or the ranks of MPI_COMM_WORLD (sim/grid_mpi.cpp).
/// Only the calling (main) thread uses it.
class GridComm {
 public:
  virtual ~GridComm() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  /// Rank 0's value of `v` on every rank.
  virtual int64_t broadcast(int64_t v) { return v; }
  /// Sends one block's bytes to rank 0 (blocks go in the order the sender owns them).
  virtual void send_to_root(const std::string&) {}
  /// On rank 0: the next block from `from`; polls `stop` while waiting and returns false if it
  /// became true.
  virtual bool receive_from(int, std::string&, const std::function<bool()>&) { return false; }
  /// Ends every rank at once with `code` (an error or an interrupt on one rank).
  [[noreturn]] virtual void abort(int code);
};

/// The world this process runs in: MPI_COMM_WORLD when launched by mpirun (OMPI_COMM_WORLD_SIZE,
/// PMI_SIZE or PMIX_SIZE set) and the MPI plugin libchunkflow_mpi.so beside the program loads
/// (sim/mpi_plugin.hpp); else a single process. Throws std::runtime_error when launched by mpirun
/// with more than one rank and no usable plugin (every rank would write the same files), naming the
/// plugin's path and the loader's reason.
std::unique_ptr<GridComm> make_grid_comm();

struct GridRunOptions {
  std::string out_dir = "out";
  int threads = 0;               ///< 0 = every core (omp_get_max_threads)
  bool resume = false;
  bool progress = true;          ///< rate and ETA on stderr (a bar on a terminal, lines otherwise)
  std::string command_line;      ///< for the context block
};

struct GridRunResult {
  GridCounts counts;
  int64_t resumed_from = 0;      ///< first configuration index this run computed
  int64_t rows = 0;              ///< rows in the output (resumed ones included)
  int64_t left_out = 0;          ///< configurations this run found the budget cannot hold
  std::string first_left_out;
  double wall_s = 0;
  int threads = 1, ranks = 1;
  std::string csv_path, jsonl_path;  ///< written by rank 0 ("" elsewhere)
  bool already_complete = false; ///< --resume found the finished files
};

/// Runs `grid` on `comm`'s ranks and writes its outputs (rank 0). Throws InputError for an
/// unusable --resume state, Interrupted after SIGINT/SIGTERM, and what a configuration throws
/// (other than the budget's InputError, which leaves the configuration out).
GridRunResult run_grid(const Grid& grid, const GridRunOptions& options, GridComm& comm);

/// In-process, in order: calls `on_row` with each row's JSON line (grid_json_line) on the calling
/// thread; `threads` workers. For the Python module's sweep().
GridCounts for_each_grid_row(const Grid& grid, int threads, const std::function<void(const std::string&)>& on_row);

}  // namespace chunkflow
