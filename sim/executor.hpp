#pragma once
// The simulator executor: runs a StepPlan in virtual time on a NodeSpec and returns the same
// Timeline type the hardware harness measures (shared/DESIGN.md "One plan, two executors").
//
// Model (shared/DESIGN.md "The physics the simulator models"; systems-and-hardware.md §3, §5):
//  - Each (rank, lane) is serial: the plan's lane-order dependencies make it so.
//  - An op starts when all its dependencies have ended; a collective starts when every rank's op
//    of its group can start (a barrier), as NCCL's all-to-all does.
//  - Compute op time: model/analytical.hpp stage_compute_time_s (FLOPs / (η · peak), HBM bound for
//    small GEMMs, plus a launch cost), × (1 + compute_slowdown_h2d) when an H2D op of its rank is
//    in flight at its start and + compute_slowdown_collective when a collective is (calibrated,
//    model/calibration.hpp; both 0 by default).
//  - H2D op: h2d_latency_s, then one flow host→gpu<rank> capped at copy_engine_bytes_per_s, or at
//    the op's rate_cap_bytes_per_s when the plan sets a lower one.
//  - All-to-all (per-rank buffer S, degree P): collective_latency_s, then per-peer flows: routed:
//    S/P bytes from every rank (GPU r) to every other rank, on the path and at the per-flow cap of
//    the transport NCCL would pick for the pair (sim/topology.hpp Topology::peer_path: P2P over
//    NVLink or a PCIe switch, else staged through host memory at collective_flow_bytes_per_s);
//    pcie_proxy: (P−1)/P·S out to the host and (P−1)/P·S back at collective_flow_bytes_per_s.
//    It ends with its last flow.
//  - A link direction with an under-duplex capacity runs at it while its reverse direction
//    carries a flow (asymmetric concurrent H2D + D2H, gpu-catalogue.md §2.2).
//  - Flows share link directions (and duplex constraints) max-min fairly (sim/maxmin.hpp), with
//    rates recomputed at every flow start and end; flows a GPU's SMs read from host memory have a
//    weight below 1 and a resource of their own that copies into that GPU load too (model/routes.hpp
//    sm_read_weight, sm_read_copy_cost; measured on H100).
//  - Events are ordered by (time, sequence number): identical input gives identical output.
//  - Memory per rank: resident weights + activations, + alloc_bytes at an op's start, − free_bytes
//    at its end; sampled at every change.
#include <cstdint>

#include "model/node.hpp"
#include "runtime/step_plan.hpp"
#include "sim/bound.hpp"
#include "traces/timeline.hpp"

namespace chunkflow {

struct SimOptions {
  bool record_links = true;   ///< per-link throughput samples for the trace (off in sweeps)
  bool record_memory = true;  ///< memory samples in the timeline (the summary's peak is exact either way)
  /// Op names in the timeline rows (off in sweeps: the summary, the bound and the events do not
  /// read them; every other row field is filled either way).
  bool record_op_names = true;
  /// Timeline rows (off in sweeps: their rows need the summary, the bound and the events only).
  /// Without rows, SimResult::timeline has none and the summary is computed from the plan's ops and
  /// their simulated times by the same code summarize() runs on rows (traces/summary_core.hpp), so
  /// it is the same bit for bit; memory and link samples follow their own options.
  bool record_rows = true;
  /// K > 0: the caller has found, on this very plan (unchanged since), that its ops are
  /// plan.info.ranks copies of its first K ops, as validate() returns it (runtime/step_plan.hpp);
  /// the rank-symmetry detection (sim/symmetry.hpp) then takes rank uniformity from it instead of
  /// comparing every rank's ops with rank 0's again (~4 % of the default sweep's instructions).
  /// A value that is not the plan's op count over its ranks is ignored. 0: unknown, checked.
  int rank_copy_ops = 0;
};

struct SimResult {
  Timeline timeline;
  StepSummary summary;
  /// Events processed: op starts, event-queue pops (op ends, the start of an H2D op's or a
  /// collective's flows) and instants at which flows complete (several flows may end at once).
  uint64_t events = 0;
  /// The plan's step-time lower bound on this node, with the cumulative terms for this run's
  /// E(s−1) (sim/bound.hpp): summary.step_time_s ≥ it.
  StepBound bound;
  /// Whether the run simulated one representative rank per rank orbit (a rank-symmetric plan and
  /// node, sim/symmetry.hpp; see set_simulate_symmetric): every other rank's times are its
  /// representative's.
  bool rank_symmetric = false;
};

/// Simulates `plan` on `node`. The plan must be valid (runtime validate()); throws
/// std::logic_error if execution deadlocks (a plan bug).
SimResult simulate(const StepPlan& plan, const NodeSpec& node, const SimOptions& options = {});

/// For tests: while set, this thread's simulate() solves the max-min rates at every event and adds
/// every flow to the solver by its route's uses (MaxMinSolver::add_flow; unset, once per route as
/// a shape, MaxMinSolver::add_shape / add_flow_shaped, which gives the solver the same uses). Unset
/// (the default), a simulation without link samples (SimOptions::record_links false) keeps the
/// rates of every set of active flows it solved, keyed by each flow's route and cap in the solver's
/// order, and reuses them when the same set recurs: the solve is a function of exactly that (the
/// under-duplex capacities follow from the routes), so the rates are the same bit for bit.
void set_simulate_exhaustive(bool on);

/// Set (the default), a simulation without link and memory samples (SimOptions::record_links and
/// record_memory false) of a rank-symmetric plan on a node (sim/symmetry.hpp
/// detect_rank_symmetry: rank-uniform ops, and rank permutations that map every flow's route onto
/// its image's) simulates one representative rank per rank orbit: every rank's k-th op gets its
/// representative's k-th op's times, the H2D copies and collective flows of an orbit run as one
/// flow with their summed route uses, and SimResult::events counts every rank's events as the full
/// simulation does. Max-min fairness is invariant under the symmetry, so this is the full
/// simulation's result up to the rounding of summed equal terms (tests/test_fast_paths.cpp
/// compares them within 1e-9 relative). Unset (for tests), every simulation runs every rank.
void set_simulate_symmetric(bool on);

}  // namespace chunkflow
