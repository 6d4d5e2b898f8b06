// layerwise: whole-block prefetch on one copy stream, blind to collectives (the weakest baseline).
#include <algorithm>
#include <cmath>

#include "model/error.hpp"
#include "runtime/layerwise_schedule.hpp"

namespace chunkflow {

PlanDecision layerwise_decision(const Workload& w, const NodeSpec& /*node*/, const PolicyConfig& config, bool comm_aware) {
  const ForwardCost cost = forward_cost(w);
  const int nblocks = int(cost.blocks.size());
  double max_block = 0;
  for (const auto& b : cost.blocks) max_block = std::max(max_block, b.weight_bytes);

  // Resident fraction: given, or the largest strided set the budget holds with its slots.
  auto resident_bytes = [&](double fraction) {
    const auto keep = strided_resident_blocks(nblocks, fraction);
    double r = cost.non_block_weight_bytes;
    for (int b = 0; b < nblocks; ++b) r += keep[b] ? cost.blocks[b].weight_bytes : 0.0;
    return r;
  };
  auto slots_for = [&](double fraction) {
    const auto keep = strided_resident_blocks(nblocks, fraction);
    const int offloaded = int(std::count(keep.begin(), keep.end(), false));
    const double left = buffer_bytes_left(config, resident_bytes(fraction), cost.activation_bytes);
    const double fit = std::isinf(left) ? 1e9 : std::floor(left / max_block);
    return int(std::min<double>({double(config.lookahead + 1), double(offloaded), fit}));
  };
  double fraction = config.resident_fraction.value_or(0.0);
  if (!config.resident_fraction && config.memory_budget_bytes) {
    for (int k = nblocks; k >= 0; --k) {  // the most resident blocks that still fit with ≥ 1 slot
      const double f = double(k) / nblocks;
      if (k == nblocks ? buffer_bytes_left(config, resident_bytes(f), cost.activation_bytes) >= 0 : slots_for(f) >= 1) {
        fraction = f;
        break;
      }
    }
  }
  const auto keep = strided_resident_blocks(nblocks, fraction);
  const bool offloads = std::count(keep.begin(), keep.end(), false) > 0;
  const int slots = offloads ? slots_for(fraction) : 0;
  if (offloads ? slots < 1 : buffer_bytes_left(config, resident_bytes(fraction), cost.activation_bytes) < 0)
    throw InputError("", "/policy/memory_budget_gib",
                     "the budget of " + std::to_string(config.memory_budget_bytes.value_or(0) / kGiB) +
                         " GiB holds the resident weights and activations but no block slot for resident fraction " +
                         std::to_string(fraction));

  const ProgramLayout layout(cost);
  const int n = layout.positions_per_step();
  CopySchedule sched;
  sched.whole_block_names = true;
  sched.slot_count = slots;
  sched.slot_bytes = offloads ? max_block : 0;
  for (int s = 0; s < config.steps; ++s)
    for (int b = 0; b < nblocks; ++b)
      if (!keep[b]) sched.pieces.push_back({s, b, 0, 0.0, cost.blocks[b].weight_bytes, 0.0, kNoPosition});
  if (comm_aware) {
    // A copy becomes ready when the last reader of its slot's previous block ends; if collectives
    // come right after that op, it waits for them to end rather than start inside their window.
    for (std::size_t j = std::size_t(slots); j < sched.pieces.size(); ++j) {
      const CopyPiece& prev = sched.pieces[j - slots];
      const auto [f, l] = layout.readers(prev.block, 0.0, prev.bytes);
      (void)f;
      int g = prev.step * n + l;
      int after = kNoPosition;
      while (g + 1 < config.steps * n && layout.at((g + 1) % n).collective) after = ++g;
      sched.pieces[j].after_position = after;
    }
  }
  PlanInfo info;
  info.lookahead = config.lookahead;
  info.resident_fraction = fraction;
  info.resident_fraction_auto = !config.resident_fraction.has_value();
  info.chunk_bytes = sched.slot_bytes;
  info.residency = offloads ? (fraction > 0 ? "strided-blocks" : "none") : "all";
  return {std::move(sched), std::move(info)};
}

namespace {

class LayerwisePolicy final : public OffloadPolicy {
 public:
  std::string name() const override { return "layerwise"; }
  std::string description() const override {
    return "whole-block prefetch, lookahead L, strided resident blocks, blind to collectives (SGLang)";
  }
  PlanDecision decide(const Workload& w, const NodeSpec& node, const PolicyConfig& config) const override {
    return layerwise_decision(w, node, config, false);
  }
};

}  // namespace

std::unique_ptr<OffloadPolicy> make_layerwise_policy() { return std::make_unique<LayerwisePolicy>(); }

}  // namespace chunkflow
