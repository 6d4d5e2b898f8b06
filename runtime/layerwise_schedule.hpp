#pragma once
// The whole-block copy schedule of the layerwise baselines (runtime/policy_layerwise.cpp,
// runtime/policy_layerwise_comm_aware.cpp).
#include "runtime/plan_builder.hpp"
#include "runtime/policy.hpp"

namespace chunkflow {

/// Layerwise (SGLang-style, systems-and-hardware.md §1): resident blocks strided (round(R·n) of n);
/// every other block moves whole, one H2D op each, through min(L+1, what the budget holds) block
/// slots, in block order, the next one as soon as a slot frees. R = config's, or with "auto" the
/// largest the budget allows (0 without a budget). With `comm_aware`, a copy whose slot frees right
/// before an all-to-all waits for the end of that all-to-all instead of starting inside it (the
/// comm-aware prefetch proposed for SGLang, systems-and-hardware.md §1). Throws InputError
/// (field "/policy/memory_budget_gib") when the budget holds no block slot.
PlanDecision layerwise_decision(const Workload& w, const NodeSpec& node, const PolicyConfig& config, bool comm_aware);

}  // namespace chunkflow
