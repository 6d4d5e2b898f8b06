#pragma once
// StepPlan: the DAG of ops that a policy emits and both executors (sim/, hw/) run.
// Dependencies include lane order (each lane is FIFO, like a CUDA stream), so the graph alone
// says what may start when. Ops appear in `ops` in issue order; ids are indices into `ops`.
#include <boost/container/small_vector.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <string>
#include <utility>
#include <vector>

#include "model/workload.hpp"
#include "runtime/plan_vocabulary.hpp"

namespace chunkflow {

/// An op's dependency ids, in order: up to four held in the op itself, more on the heap
/// (Boost.Container's small_vector). Nearly every op has at most four, so building a plan of n ops
/// allocates nothing per op for them (two heap blocks per op as std::vector).
using OpIds = boost::container::small_vector<int, 4>;

struct PlanOp {
  int id = 0;
  std::string name;            ///< "s<step>.b<block>.<stage>" or "s1.b03.h2d.c2"
  OpKind kind = OpKind::compute;
  Lane lane = Lane::compute;
  int rank = 0;
  int step = 0;
  int block = -1;
  int stage = -1;              ///< index into BlockCost::stages (compute and collective ops)
  int chunk = -1;              ///< chunk index within the block's offloaded bytes (h2d ops)
  int slot = -1;               ///< chunk slot the h2d op fills (h2d ops)
  double flop = 0;
  double bytes = 0;            ///< h2d: chunk bytes; collective: per-rank all-to-all buffer
  double src_offset_bytes = 0; ///< h2d: offset of the chunk in the block's flat weight layout
  int collective_group = -1;   ///< ops of one collective across ranks share it
  double alloc_bytes = 0;      ///< memory allocated when the op starts (h2d: the chunk)
  double free_bytes = 0;       ///< memory released when the op ends (last reader of chunks)
  /// h2d: the most this copy may take of its route, in bytes/s (0 = no cap: the copy engine's
  /// own rate). The planner caps a copy that overlaps a collective so that the collective keeps
  /// its rate (shared/DESIGN.md "Policies"); the simulator executes it as the flow's bound in the
  /// max-min solver, the hardware harness by pacing sub-chunks.
  double rate_cap_bytes_per_s = 0;
  OpIds deps;       ///< all predecessors, lane order included
  OpIds data_deps;  ///< the subset that is not lane order (what the op waits on)
};

/// Whether ops `a` and `b` agree in every field the executors and validate read besides their id,
/// name, rank and dependency lists: kind, lane, step, block, stage, chunk, slot, bytes, source
/// offset, collective group, alloc and free bytes and rate cap (exact double comparison).
bool same_op_fields(const PlanOp& a, const PlanOp& b);

/// How messages name an op: its name, or, for a plan built without names (build_plan_from_schedule
/// with op_names false: the grid and sweep rows read none), "op <id> (rank r, step s, block b)".
std::string op_label(const PlanOp& op);

/// Resolved policy parameters of a plan (what the executors and reports need).
struct PlanInfo {
  std::string policy;          ///< a registered policy name (runtime/policy.hpp)
  int steps = 0;               ///< forwards simulated (PolicyConfig::steps, `--simulated-steps`)
  int ranks = 0;               ///< executed ranks
  // --- The generation (model/workload.hpp; filled by the plan builder) ---
  int denoising_steps = 0;     ///< `--steps`, resolved (model default when not given)
  int forwards_per_step = 1;   ///< per GPU group: 2 with sequential CFG, else 1
  std::string cfg;             ///< resolved CFG: "none", "sequential" or "parallel"
  double text_encode_time_s = 0;  ///< once per generation, one GPU (model/generation.hpp)
  double vae_decode_time_s = 0;   ///< once per generation, one GPU (model/generation.hpp)
  int lookahead = 0;
  double chunk_bytes = 0;      ///< 0 for no-offload; the block size for layerwise
  double resident_fraction = 1;///< resolved (auto → number)
  bool resident_fraction_auto = false;
  int slot_count = 0;          ///< chunk slots per rank
  double slot_bytes = 0;       ///< bytes of one slot
  double resident_weight_bytes = 0;  ///< per rank, incl. the non-block part
  double activation_bytes = 0;       ///< per rank, allocated for the whole run
  double offloaded_bytes_per_step = 0; ///< per rank
  // --- What the policy decided (reported with every row; empty/0 for policies that do not) ---
  std::string residency;             ///< where resident bytes sit: "all", "none", "strided-blocks", "prefix", "balanced"
  double memory_budget_bytes = 0;    ///< the per-GPU budget planned to (0 = none given)
  double share_cap_bytes_per_s = 0;  ///< cap of copies that share a collective window (0 = none)
  int windows_yield = 0;             ///< collective windows of the last step with no copy in them
  int windows_share = 0;             ///< ... with rate-capped copies
  int windows_ignore = 0;            ///< ... with uncapped copies
  double estimated_step_time_s = 0;  ///< the planner's own closed-loop estimate (0 = none)
};

struct StepPlan {
  /// Compressed sparse row: built in one pass from the edge list, the cheapest Boost graph to
  /// run algorithms on for a DAG this size (~10^4 vertices) that is not edited afterwards.
  using Graph = boost::compressed_sparse_row_graph<boost::directedS>;
  PlanInfo info;
  Workload workload;
  ForwardCost cost;            ///< per-rank costs of one forward (stages referenced by ops)
  std::vector<PlanOp> ops;     ///< ops[i].deps are the edges of the DAG (the one source of truth)

  /// The dependency DAG as a Boost graph, built from the ops' deps: vertex i = ops[i], edge u→v
  /// when v depends on u. Used for graph algorithms (validation's topological sort).
  Graph dependency_graph() const;

  /// Adds an op (assigns its id) and returns it. `deps` may hold lane-order predecessors only;
  /// data_deps are merged into deps: data_deps keeps the first occurrence of each id, in order, and
  /// deps becomes the lane predecessors so filtered followed by the data deps not among them.
  /// O(d log d) in the list lengths d. Every dependency must already be in the plan (ops are added
  /// in a topological order). Throws std::logic_error otherwise, the plan unchanged (the rvalue
  /// form's argument then holds its id and merged deps). The rvalue form moves the op in once (a
  /// 1 MiB-chunk plan adds ~10^5 ops of ~200 bytes).
  int add(PlanOp&& op);
  int add(const PlanOp& op) { return add(PlanOp(op)); }
  /// Adds a data dependency `before` → `after` (to data_deps and deps). Duplicates ignored.
  void depend(int after, int before);
  /// The stage an op runs (compute / collective ops). Throws std::logic_error otherwise.
  const StageCost& stage_of(const PlanOp& op) const;
};

/// Byte range [lo, hi) of a block's flat weight layout that stage `s` reads, in bytes: its
/// linear's weights and bias; the block's last linear also reads the layout's tail (non-linear
/// parameters such as norm scales), so every byte of a block has a reader. Non-linear stages
/// read nothing ({0, 0}). With FSDP (BlockCost::weights_gathered) the all-gather stage reads the
/// whole shard [0, weight_bytes) and the linears nothing. Throws std::out_of_range for a bad stage index.
std::pair<double, double> stage_weight_range(const BlockCost& block, int s);

/// Checks a plan before execution; throws std::logic_error naming the first violation:
///  - the graph is acyclic and matches each op's deps;
///  - lane order: within a (rank, lane), each op depends on the one before it;
///  - every compute op of a linear whose weights are offloaded depends on every h2d chunk that
///    holds part of those weights (for its step and block);
///  - memory balances: per rank, Σ alloc_bytes == Σ free_bytes, and no slot is refilled before
///    the ops that free its previous chunk have run (h2d depends on them);
///  - every collective group has one op per executed rank.
/// A plan whose ranks run copies of rank 0's ops (the plan builder's: every field validate reads
/// equal, ids and dependencies shifted by rank × ops per rank) passes when rank 0's ops pass as a
/// one-rank plan, and is checked op by op otherwise (step_plan.cpp validate); the verdict and the
/// message are those of the check over every op either way (tests/test_policy.cpp compares them).
/// Returns K > 0 when it found the plan's ops to be plan.info.ranks ≥ 2 such copies of its first K
/// ops (what a caller may hand to simulate, SimOptions::rank_copy_ops, for this plan unchanged), else
/// 0 (one rank, another layout, or set_validate_exhaustive).
int validate(const StepPlan& plan);

/// Set (for tests), this thread's validate checks every op of every plan; unset (the default), a
/// plan whose ranks copy rank 0's ops is judged from rank 0's (validate above).
void set_validate_exhaustive(bool on);

/// The plan's identity: 64-bit FNV-1a (model/fnv1a.hpp) as "0x" + 16 hex digits, over what the
/// executors act on: the model id, executed ranks, simulated steps, slot count and slot bytes, the
/// non-block weight bytes; per block its weight bytes and FSDP flag and per stage its kind, linear
/// index, GEMM and attention shapes, collective kind and group size, dtype, weight range and
/// collective buffer (hw/lowering.cpp sizes kernels and weight pieces from them); and per op in id
/// order its kind, lane, rank, step, block, stage, chunk, slot, collective group, bytes, source
/// offset, alloc and free bytes, rate cap and both dependency lists. Op names, FLOPs and the
/// stages' times and efficiencies are left out (labels, and costs the node prices); byte counts
/// are hashed as integers and the rate cap to 9 significant digits, so a plan re-built on another
/// machine (another libm) gets the same digest. Recorded by `chunkflow simulate --json` and chunkflow-hw summaries
/// (/plan/fnv1a64); `validate --measured` compares it with the plan it re-builds (sim/validate.hpp).
std::string plan_fnv1a64(const StepPlan& plan);

}  // namespace chunkflow
