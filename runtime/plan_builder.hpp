#pragma once
// The one place that turns a policy's decisions into a StepPlan (shared/DESIGN.md "Policies"): the
// program of every rank (compute and collective ops of `steps` forwards) and the copy lane's H2D
// ops with their dependencies (slot reuse, the op a copy must wait for) and memory effects.
// A policy decides only WHAT moves (the copy pieces, in copy-lane order), how fast (a rate cap per
// copy), after which program op it may start, and how many slots it may fill at once.
#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "model/node.hpp"
#include "model/workload.hpp"
#include "runtime/step_plan.hpp"

namespace chunkflow {

/// The per-rank program: every (step, block, stage) in issue order. Global position
/// g = step · positions_per_step + p, with p the flattened (block, stage) index within a forward.
class ProgramLayout {
 public:
  struct Position {
    int block = 0;
    int stage = 0;
    bool collective = false;
    double lo_bytes = 0, hi_bytes = 0;  ///< weight byte range read ({0,0} for non-linear stages)
  };
  explicit ProgramLayout(const ForwardCost& cost);
  int positions_per_step() const { return int(positions_.size()); }
  const Position& at(int p) const { return positions_[p]; }
  /// First and last position (within a step) whose stage reads any byte of [lo, hi) of `block`;
  /// {-1, -1} when none does.
  std::pair<int, int> readers(int block, double lo_bytes, double hi_bytes) const;
  /// Units of a block's layout: the byte ranges stage_weight_range() gives each linear (the last one
  /// with the layout's tail), sorted by offset; they tile [0, weight_bytes). Tensor-aligned chunks
  /// and residency cut only at their edges, so no linear needs a gather it could avoid.
  const std::vector<std::pair<double, double>>& units(int block) const { return units_[block]; }

 private:
  std::vector<Position> positions_;
  std::vector<int> block_begin_;  ///< first position of each block
  /// The positions whose range ends past 0 (hi_bytes > 0), in position order, as (lo, hi, p), and
  /// the first of each block's: readers() scans these alone for a query range [lo, hi) with
  /// lo ≥ 0, which no other position can meet (meeting needs hi_bytes > lo). The non-linear
  /// stages' {0, 0} are the positions left out.
  struct Weighted {
    double lo_bytes, hi_bytes;
    int position;
  };
  std::vector<Weighted> weighted_;
  std::vector<int> weighted_begin_;
  std::vector<std::vector<std::pair<double, double>>> units_;
};

inline constexpr int kNoPosition = INT_MIN;

/// One H2D op of the plan before it becomes an op: a byte range of one block of one step.
struct CopyPiece {
  int step = 0;
  int block = 0;
  int chunk = 0;                     ///< index within (step, block), for the op's name
  double offset_bytes = 0;           ///< in the block's flat layout
  double bytes = 0;
  double rate_cap_bytes_per_s = 0;   ///< 0 = none (PlanOp::rate_cap_bytes_per_s)
  /// Global program position whose op must end before the copy starts (kNoPosition = none).
  int after_position = kNoPosition;
};

/// Everything a policy decides; PlanInfo's policy-specific fields are filled by the policy.
struct CopySchedule {
  std::vector<CopyPiece> pieces;     ///< copy-lane order, every step (identical on every rank)
  int slot_count = 0;                ///< pieces in flight at most; piece j refills slot j mod count
  double slot_bytes = 0;             ///< ≥ every piece's bytes
  bool whole_block_names = false;    ///< "s1.b03.h2d" (layerwise) instead of "s1.b03.h2d.c0"
};

/// What a policy decides for one configuration: its copy schedule and the PlanInfo fields it fills
/// (policy, lookahead, chunk_bytes, resident fraction, residency, windows, estimate, budget); the
/// plan is build_plan_from_schedule(w, node, steps, schedule, info), a function of the schedule
/// alone but for those info fields.
struct PlanDecision {
  CopySchedule schedule;
  PlanInfo info;
};

/// The PlanInfo fields build_plan_from_schedule fills (listed below), from the schedule, the
/// workload's forward cost `cost` (= forward_cost(w)) and the node: the builder calls it, and a
/// caller that has the plan of an equal schedule already can call it instead of building again.
/// Throws std::logic_error when a piece exceeds the slot size or pieces come without slots.
void fill_schedule_info(const Workload& w, const NodeSpec& node, int steps, const CopySchedule& schedule,
                        const ForwardCost& cost, PlanInfo& info);

/// Builds the plan of `steps` forwards of `w` on `node` for every executed rank from `schedule`;
/// fills (fill_schedule_info) info.steps, ranks, the generation (denoising_steps, forwards_per_step,
/// cfg, text encode and VAE decode times), slot_count, slot_bytes, resident_weight_bytes (every byte
/// no piece of the last step covers is resident), activation_bytes, offloaded_bytes_per_step. Throws
/// std::logic_error when the schedule cannot run: a compute op reads a byte whose piece could not be
/// issued yet (its slot is only freed later, or it waits for a later op), or a piece exceeds a slot.
/// With `op_names` false the ops' names are left empty (messages name ops by op_label): the plan
/// is otherwise the same, field for field, and a multi-rank plan's names are about half of the
/// heap blocks it holds (a compute op's name outgrows std::string's inline buffer).
StepPlan build_plan_from_schedule(const Workload& w, const NodeSpec& node, int steps, const CopySchedule& schedule,
                                  PlanInfo info, bool op_names = true);

/// Set (for tests), this thread's build_plan_from_schedule runs its per-rank loop for every rank;
/// unset (the default), it builds rank 0's ops and gives every other rank a copy of them with the
/// rank set and ids and dependencies shifted by rank × (ops per rank): the same plan, op for op
/// (the loop reads the rank for op.rank alone; tests/test_fast_paths.cpp compares the two).
void set_plan_builder_exhaustive(bool on);

}  // namespace chunkflow
