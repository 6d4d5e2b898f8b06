// no-offload: every weight resident; compute and collectives only (the memory upper bound).
#include "model/error.hpp"
#include "runtime/plan_builder.hpp"
#include "runtime/policy.hpp"

namespace chunkflow {

namespace {

class NoOffloadPolicy final : public OffloadPolicy {
 public:
  std::string name() const override { return "no-offload"; }
  std::string description() const override { return "every weight resident on the GPU (the memory upper bound)"; }
  PlanDecision decide(const Workload& w, const NodeSpec& /*node*/, const PolicyConfig& config) const override {
    const ForwardCost cost = forward_cost(w);
    if (buffer_bytes_left(config, cost.weight_bytes, cost.activation_bytes) < 0)
      throw InputError("", "/policy/memory_budget_gib",
                       "no-offload needs every weight and the activations on the GPU (" +
                           std::to_string((cost.weight_bytes + cost.activation_bytes) / kGiB) + " GiB), more than the budget");
    PlanInfo info;
    info.resident_fraction = 1.0;
    info.residency = "all";
    info.lookahead = config.lookahead;
    return {CopySchedule{}, info};
  }
};

}  // namespace

std::unique_ptr<OffloadPolicy> make_no_offload_policy() { return std::make_unique<NoOffloadPolicy>(); }

}  // namespace chunkflow
