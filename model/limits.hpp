#pragma once
// The documented range of every numeric input (scenario field, node override, command-line option),
// in one table, and the checks that enforce it. Everything that reads a number from a user goes
// through check_range(); --help texts and the scenario reference are generated from the same table
// (range_text()), so what is documented is what is enforced (issue 11 §1).
//
// Why the ranges are what they are:
//  - Workload shapes (height, width ≤ 16384 px, frames ≤ 4097, batch ≤ 1024) keep the token and row
//    counts of every shape exact in 64-bit integers and in doubles: at the caps the video tokens of
//    one forward are ((4097−1)/4+1)·(16384/16)² ≈ 1.07·10^9, times batch 1024 ≈ 1.1·10^12 < 2^53.
//    Inputs inside the ranges that cannot run on the GPU are answered, with fits = false
//    (sim/fit.hpp), not refused.
//  - Rates and efficiencies have lower bounds so that every simulated time stays finite and no flow
//    runs at a zero rate (a 1e-300 efficiency would give a step of 10^62 ms); upper bounds a decade
//    or more above any catalogued device (shared/reference/gpu-catalogue.md).
//  - Plan sizes are bounded before anything is allocated (check_plan_size below).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chunkflow {

/// One documented range. `pointer` is the scenario's JSON pointer ("/workload/frames"), `option`
/// the command-line option that sets the same value ("--frames", "" if none). Closed interval
/// [min, max] in `unit`; `integer` fields take integers only.
struct InputRange {
  std::string_view pointer;
  std::string_view option;
  double min = 0;
  double max = 0;
  std::string_view unit;
  bool integer = false;
  std::string_view why;
};

/// Every range, in documentation order (workload, policy, node, sweep/tune options).
const std::vector<InputRange>& input_ranges();

/// The range of `pointer_or_option` (either name). Throws std::out_of_range for an unknown name
/// (a programming error, not an input error).
const InputRange& input_range(std::string_view pointer_or_option);

/// "[1, 4097]" or "[0.0625, 1048576] MiB", for --help and messages.
std::string range_text(std::string_view pointer_or_option);

/// The table as Markdown rows "| `pointer` | `option` | range | why |", one per range, for the
/// README's scenario reference (a test checks that the README holds exactly these rows).
std::string ranges_markdown();

/// Throws InputError(file, field, "expected <range> (<why>), got <v>") when `v` is not finite or
/// outside the range of `name` (a pointer or option of the table), or not an integer where one is
/// required. `field` is what the message names (a pointer under another prefix, or an option).
void check_range(double v, std::string_view name, const std::string& file, const std::string& field);
/// check_range against a range already looked up (input_range): the same check and message.
void check_range(double v, const InputRange& range, const std::string& file, const std::string& field);

struct NodeSpec;

/// Checks every numeric field of a node (and each link's capacities) against its /node/... range.
/// Throws InputError(file, prefix + "/<field>") for the first one outside (links as
/// prefix + "/links/<i>/a_to_b_bytes_per_s" ...). Used after scenario overrides and calibrations.
void check_node_ranges(const NodeSpec& node, const std::string& file, const std::string& prefix = "/node");

/// Plan-size limits, checked from the inputs before a plan is built (runtime/policy.cpp
/// build_plan, via runtime/plan_limits.hpp). One op costs about kPlanOpBytes of memory in the plan
/// and the simulator together: measured on this project's 2-core machine (2026-11-23),
/// `simulate --chunk-mib 0.0625 --resident-fraction 0 --simulated-steps 4` (3,436,800 ops, 8.6 M events)
/// peaked at 2.43 GB resident and ran 20.8 s, ≈ 707 bytes and 6 µs per op. So no accepted input
/// makes one simulation allocate more than ≈ kMaxPlanOps · kPlanOpBytes ≈ 1.4 GB or run longer
/// than ≈ 12 s on that machine.
inline constexpr double kMaxOpsPerStep = 1e6;   ///< ops of one step, all ranks
inline constexpr double kMaxPlanOps = 2e6;      ///< ops of the whole plan (steps × ranks)
inline constexpr double kPlanOpBytes = 710;     ///< bytes per op, plan and simulator (measured above)

/// Checks the size of a plan before it is built: `ops_per_step` (all ranks) against kMaxOpsPerStep
/// and `ops_per_step · steps` against kMaxPlanOps. Throws InputError naming `file` and `field`
/// (the input that made the plan large: the chunk size or the steps), the count, the limit and why.
void check_plan_size(double ops_per_step, int steps, const std::string& file, const std::string& chunk_field,
                     const std::string& steps_field);

/// The thread cap of sweeps and tuning: 4 × std::thread::hardware_concurrency() (at least 4).
int max_threads();

}  // namespace chunkflow
