// Plan limits from the inputs; see runtime/plan_limits.hpp.
#include "runtime/plan_limits.hpp"

#include <algorithm>
#include <cmath>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "model/limits.hpp"

namespace chunkflow {

double plan_ops_per_step(const Workload& w, const ForwardCost& cost, const NodeSpec& node, const PolicyConfig& config) {
  const int ranks = executed_ranks(w, node);
  double stages = 0, chunks = 0;
  for (const BlockCost& b : cost.blocks) stages += double(b.stages.size());
  if (is_baseline_policy(config.policy)) {
    const double n = double(cost.blocks.size());
    chunks = n - double(std::lround(config.resident_fraction.value_or(0.0) * n));
  } else if (config.policy == "chunkflow") {
    // auto tries fractions from 0 up: count its largest plan. The planner also cuts a chunk at a
    // collective window's edge, at most one extra piece per all-to-all.
    const double r = config.resident_fraction.value_or(0.0);
    for (const BlockCost& b : cost.blocks)
      for (const auto& st : b.stages) chunks += st.stage.kind == BlockStage::Kind::all_to_all ? 1.0 : 0.0;
    const double elem = w.dtype_bytes;
    for (const BlockCost& b : cost.blocks) {
      const double offloaded = b.weight_bytes - std::min(b.weight_bytes, std::floor(r * b.weight_bytes / elem) * elem);
      // Chunks are cut on tensor edges: at most one more per linear than the bytes alone need.
      int linears = 0;
      for (const auto& st : b.stages) linears += st.stage.kind == BlockStage::Kind::linear ? 1 : 0;
      chunks += offloaded > 0 ? std::ceil(offloaded / config.chunk_bytes) + linears : 0.0;
    }
  }
  return double(ranks) * (stages + chunks);
}

void check_plan_limits(const Workload& w, const ForwardCost& cost, const NodeSpec& node, const PolicyConfig& config,
                       const PlanLimitFields& f) {
  check_range(config.chunk_bytes / kMiB, "/policy/chunk_mib", f.file, f.chunk);
  if (config.resident_fraction) check_range(*config.resident_fraction, "/policy/resident_fraction", f.file, f.resident_fraction);
  check_range(config.lookahead, "/policy/lookahead", f.file, f.lookahead);
  check_range(config.steps, "/policy/simulated_steps", f.file, f.steps);
  const int blocks = int(cost.blocks.size());
  if (config.lookahead > blocks)
    throw InputError(f.file, f.lookahead,
                     "expected at most the model's " + std::to_string(blocks) +
                         " blocks (a lookahead beyond the block count prefetches nothing more), got " +
                         std::to_string(config.lookahead));
  check_plan_size(plan_ops_per_step(w, cost, node, config), config.steps, f.file, f.chunk, f.steps);
}

void check_grid_limits(const Workload& w, const NodeSpec& node, const std::vector<PolicyConfig>& configs) {
  PlanLimitFields fields;
  fields.chunk = "--chunk-mib-list";
  fields.resident_fraction = "--resident-fractions";
  fields.lookahead = "--lookahead";
  fields.steps = "--simulated-steps";
  const ForwardCost cost = forward_cost(w);
  for (const PolicyConfig& c : configs) check_plan_limits(w, cost, node, c, fields);
}

}  // namespace chunkflow
