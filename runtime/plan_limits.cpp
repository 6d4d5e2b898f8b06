// Plan limits from the inputs; see runtime/plan_limits.hpp.
#include "runtime/plan_limits.hpp"

#include <algorithm>
#include <cmath>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "model/limits.hpp"

namespace chunkflow {

PlanShape plan_shape(const Workload& w, const ForwardCost& cost, const NodeSpec& node) {
  PlanShape shape;
  shape.ranks = executed_ranks(w, node);
  shape.dtype_bytes = w.dtype_bytes;
  for (const BlockCost& b : cost.blocks) {
    PlanShape::Block block;
    block.weight_bytes = b.weight_bytes;
    shape.stages += double(b.stages.size());
    for (const auto& st : b.stages) {
      shape.all_to_alls += st.stage.kind == BlockStage::Kind::all_to_all ? 1.0 : 0.0;
      block.linears += st.stage.kind == BlockStage::Kind::linear ? 1 : 0;
    }
    shape.blocks.push_back(block);
  }
  return shape;
}

double plan_ops_per_step(const PlanShape& shape, const PolicyConfig& config) {
  double chunks = 0;
  if (is_baseline_policy(config.policy)) {
    const double n = double(shape.blocks.size());
    chunks = n - double(std::lround(config.resident_fraction.value_or(0.0) * n));
  } else if (config.policy == "chunkflow") {
    // auto tries fractions from 0 up: count its largest plan. The planner also cuts a chunk at a
    // collective window's edge, at most one extra piece per all-to-all.
    const double r = config.resident_fraction.value_or(0.0);
    chunks = shape.all_to_alls;
    const double elem = shape.dtype_bytes;
    for (const PlanShape::Block& b : shape.blocks) {
      const double offloaded = b.weight_bytes - std::min(b.weight_bytes, std::floor(r * b.weight_bytes / elem) * elem);
      // Chunks are cut on tensor edges: at most one more per linear than the bytes alone need.
      chunks += offloaded > 0 ? std::ceil(offloaded / config.chunk_bytes) + b.linears : 0.0;
    }
  }
  return double(shape.ranks) * (shape.stages + chunks);
}

double plan_ops_per_step(const Workload& w, const ForwardCost& cost, const NodeSpec& node, const PolicyConfig& config) {
  return plan_ops_per_step(plan_shape(w, cost, node), config);
}

void check_plan_limits(const PlanShape& shape, const PolicyConfig& config, const PlanLimitFields& f) {
  // The ranges are looked up once (model/limits.hpp input_range searches its table by name).
  static const InputRange& chunk_range = input_range("/policy/chunk_mib");
  static const InputRange& fraction_range = input_range("/policy/resident_fraction");
  static const InputRange& lookahead_range = input_range("/policy/lookahead");
  static const InputRange& steps_range = input_range("/policy/simulated_steps");
  check_range(config.chunk_bytes / kMiB, chunk_range, f.file, f.chunk);
  if (config.resident_fraction) check_range(*config.resident_fraction, fraction_range, f.file, f.resident_fraction);
  check_range(config.lookahead, lookahead_range, f.file, f.lookahead);
  check_range(config.steps, steps_range, f.file, f.steps);
  const int blocks = int(shape.blocks.size());
  if (config.lookahead > blocks)
    throw InputError(f.file, f.lookahead,
                     "expected at most the model's " + std::to_string(blocks) +
                         " blocks (a lookahead beyond the block count prefetches nothing more), got " +
                         std::to_string(config.lookahead));
  check_plan_size(plan_ops_per_step(shape, config), config.steps, f.file, f.chunk, f.steps);
}

void check_plan_limits(const Workload& w, const ForwardCost& cost, const NodeSpec& node, const PolicyConfig& config,
                       const PlanLimitFields& f) {
  check_plan_limits(plan_shape(w, cost, node), config, f);
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
