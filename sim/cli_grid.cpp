// `chunkflow sweep --grid FILE`: the command-line side of grid sweeps (sim/grid.hpp, sim/grid_run.hpp).
#include <iostream>

#include "model/limits.hpp"
#include "sim/cli.hpp"
#include "sim/grid.hpp"
#include "sim/grid_run.hpp"
#include "sim/report.hpp"

namespace chunkflow {

int run_grid_sweep(const CliContext& context, const std::string& grid_file, const std::string& out_dir, int threads,
                   bool resume) {
  check_range(threads, "--threads", "", "--threads");
  const Grid grid = load_grid(grid_file);  // every input error before any rank starts or a file opens
  const std::unique_ptr<GridComm> comm = make_grid_comm();
  const bool root = comm->rank() == 0;
  GridRunOptions o;
  o.out_dir = out_dir.empty() ? "." : out_dir;
  o.threads = threads;
  o.resume = resume;
  o.command_line = context.command_line;
  if (root) {
    const GridCounts counts = count_grid(grid);
    std::cout << "grid " << grid.file << " (" << grid.name << "): " << counts.configurations << " configurations of "
              << grid.product_size << " in the product (" << grid.workloads.size() << " workload combinations × "
              << grid.policies.size() << " policy combinations; " << grid.collapsed << " collapsed: an axis that does not apply to the policy";
    if (counts.invalid > 0) std::cout << "; " << counts.invalid << " invalid, the first: " << counts.first_invalid_reason;
    std::cout << ")\n" << std::flush;
  }
  const GridRunResult r = run_grid(grid, o, *comm);
  if (!root) return 0;
  if (r.already_complete) {
    std::cout << "nothing to resume: " << r.csv_path << " and " << r.jsonl_path << " are complete\n";
    return 0;
  }
  if (r.left_out > 0)
    std::cout << r.left_out << " configuration" << (r.left_out == 1 ? "" : "s")
              << " left out: the memory budget cannot hold any plan of them; the first: " << r.first_left_out << "\n";
  std::cout << "wrote " << r.csv_path << ", " << r.jsonl_path << " (" << r.rows << " rows; configurations "
            << r.resumed_from << ".." << r.counts.configurations - 1 << " in " << fixed(r.wall_s, 2) << " s on "
            << r.threads << " thread" << (r.threads == 1 ? "" : "s") << " × " << r.ranks << " rank"
            << (r.ranks == 1 ? "" : "s") << ")\n";
  return 0;
}

}  // namespace chunkflow
