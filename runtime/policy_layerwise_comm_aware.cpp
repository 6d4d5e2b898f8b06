// layerwise-comm-aware: layerwise whose block copies do not start inside an all-to-all window.
#include "runtime/layerwise_schedule.hpp"

namespace chunkflow {

namespace {

class LayerwiseCommAwarePolicy final : public OffloadPolicy {
 public:
  std::string name() const override { return "layerwise-comm-aware"; }
  std::string description() const override {
    return "layerwise whose block copies wait out an all-to-all that starts as their slot frees (SGLang proposal)";
  }
  PlanDecision decide(const Workload& w, const NodeSpec& node, const PolicyConfig& config) const override {
    return layerwise_decision(w, node, config, true);
  }
};

}  // namespace

std::unique_ptr<OffloadPolicy> make_layerwise_comm_aware_policy() {
  return std::make_unique<LayerwiseCommAwarePolicy>();
}

}  // namespace chunkflow
