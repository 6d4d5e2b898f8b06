// The policy registry and what the policies share; see policy.hpp.
#include "runtime/policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "model/error.hpp"
#include "runtime/plan_limits.hpp"

namespace chunkflow {

// One line per policy: its factory (defined in runtime/policy_<name>.cpp) and its place in the table.
std::unique_ptr<OffloadPolicy> make_no_offload_policy();
std::unique_ptr<OffloadPolicy> make_layerwise_policy();
std::unique_ptr<OffloadPolicy> make_layerwise_comm_aware_policy();
std::unique_ptr<OffloadPolicy> make_chunkflow_policy();

namespace {

const std::vector<std::unique_ptr<OffloadPolicy>>& registry() {
  static const std::vector<std::unique_ptr<OffloadPolicy>> policies = [] {
    std::vector<std::unique_ptr<OffloadPolicy>> v;
    v.push_back(make_no_offload_policy());
    v.push_back(make_layerwise_policy());
    v.push_back(make_layerwise_comm_aware_policy());
    v.push_back(make_chunkflow_policy());
    return v;
  }();
  return policies;
}

/// A number as a user wrote it ("0", "1.5", "-8"), for error messages.
std::string shown(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string known_names() {
  std::string s;
  for (const auto& n : policy_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const auto& p : registry()) names.push_back(p->name());
  return names;
}

const OffloadPolicy& find_policy(const std::string& name) {
  for (const auto& p : registry())
    if (p->name() == name) return *p;
  throw InputError("", "/policy/name", "expected one of " + known_names() + ", got \"" + name + "\"");
}

bool is_baseline_policy(const std::string& name) { return name.rfind("layerwise", 0) == 0; }

void validate(const PolicyConfig& p, const std::string& file, const std::string& prefix) {
  const auto names = policy_names();
  if (std::find(names.begin(), names.end(), p.policy) == names.end())
    throw InputError(file, prefix + "/name", "expected one of " + known_names() + ", got \"" + p.policy + "\"");
  if (!(p.chunk_bytes > 0) || !std::isfinite(p.chunk_bytes))
    throw InputError(file, prefix + "/chunk_mib", "expected a chunk size > 0 MiB, got " + shown(p.chunk_bytes / kMiB));
  if (p.resident_fraction && !(*p.resident_fraction >= 0.0 && *p.resident_fraction <= 1.0))
    throw InputError(file, prefix + "/resident_fraction",
                     "expected a number in [0, 1] or \"auto\", got " + shown(*p.resident_fraction));
  if (p.lookahead < 1)
    throw InputError(file, prefix + "/lookahead", "expected an integer ≥ 1, got " + std::to_string(p.lookahead));
  if (p.steps < 1) throw InputError(file, prefix + "/simulated_steps", "expected an integer ≥ 1, got " + std::to_string(p.steps));
  if (p.memory_budget_bytes && (!(*p.memory_budget_bytes > 0) || !std::isfinite(*p.memory_budget_bytes)))
    throw InputError(file, prefix + "/memory_budget_gib",
                     "expected a budget > 0 GiB, got " + shown(*p.memory_budget_bytes / kGiB));
}

StepPlan OffloadPolicy::plan(const Workload& w, const NodeSpec& node, const PolicyConfig& config) const {
  PlanDecision d = decide(w, node, config);
  return build_plan_from_schedule(w, node, config.steps, d.schedule, std::move(d.info));
}

PlanDecision decide_plan(const Workload& w, const NodeSpec& node, const PolicyConfig& config) {
  validate(w);
  validate(node);
  return decide_plan_validated(w, node, forward_cost(w), config);
}

PlanDecision decide_plan_validated(const Workload& w, const NodeSpec& node, const ForwardCost& cost,
                                   const PolicyConfig& config) {
  validate(config);
  check_plan_limits(w, cost, node, config);  // sizes bounded before allocating
  PlanDecision d = find_policy(config.policy).decide(w, node, config);
  d.info.policy = config.policy;  // the builder leaves both as they are
  d.info.memory_budget_bytes = config.memory_budget_bytes.value_or(0.0);
  return d;
}

StepPlan build_plan(const Workload& w, const NodeSpec& node, const PolicyConfig& config) {
  PlanDecision d = decide_plan(w, node, config);
  return build_plan_from_schedule(w, node, config.steps, d.schedule, std::move(d.info));
}

std::vector<bool> strided_resident_blocks(int n, double fraction) {
  const int keep = static_cast<int>(std::lround(fraction * n));
  std::vector<bool> resident(n, false);
  for (int b = 0; b < n; ++b)
    resident[b] = (static_cast<long>(b + 1) * keep) / n > (static_cast<long>(b) * keep) / n;
  return resident;
}

double buffer_bytes_left(const PolicyConfig& config, double resident_weight_bytes, double activation_bytes) {
  if (!config.memory_budget_bytes) return std::numeric_limits<double>::infinity();
  return *config.memory_budget_bytes - resident_weight_bytes - activation_bytes;
}

}  // namespace chunkflow
