// Max-min fair sharing by progressive filling; the math is in maxmin.hpp.
// Source: shared/reference/systems-and-hardware.md §5.
#include "sim/maxmin.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace chunkflow {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void check_capacity(double capacity_bytes_per_s, const std::string& name) {
  if (!(capacity_bytes_per_s >= 0))  // also rejects NaN
    throw std::invalid_argument("MaxMinSolver: resource '" + name +
                                "': capacity must be >= 0 bytes/s (may be +inf), got " +
                                std::to_string(capacity_bytes_per_s));
}

void check_flow_parameters(const std::vector<std::pair<int, double>>& uses, std::size_t resource_count,
                           double bound_bytes_per_s, double weight, const char* who) {
  for (const auto& [r, a] : uses) {
    if (r < 0 || static_cast<std::size_t>(r) >= resource_count)
      throw std::out_of_range(std::string(who) + ": unknown resource id " + std::to_string(r) + " (" +
                              std::to_string(resource_count) + " resources)");
    if (!(a >= 0) || std::isinf(a))
      throw std::invalid_argument(std::string(who) + ": coefficient on resource " + std::to_string(r) +
                                  " must be finite and >= 0, got " + std::to_string(a));
  }
  if (!(bound_bytes_per_s > 0))
    throw std::invalid_argument(std::string(who) + ": flow bound must be > 0 bytes/s (+inf = none), got " +
                                std::to_string(bound_bytes_per_s));
  if (!(weight > 0) || std::isinf(weight))
    throw std::invalid_argument(std::string(who) + ": flow weight must be finite and > 0, got " +
                                std::to_string(weight));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// MaxMinSolver
// ---------------------------------------------------------------------------------------------

int MaxMinSolver::add_resource(double capacity_bytes_per_s, std::string name) {
  if (name.empty()) name = "resource" + std::to_string(resources_.size());
  check_capacity(capacity_bytes_per_s, name);
  resources_.push_back(Resource{capacity_bytes_per_s, std::move(name)});
  const std::size_t n = resources_.size();
  remaining_.resize(n);
  denom_.resize(n);
  unfixed_users_.resize(n);
  load_.resize(n, 0.0);
  saturated_.resize(n);
  in_use_.resize(n, 0);
  dirty_ = true;
  return static_cast<int>(n - 1);
}

void MaxMinSolver::set_capacity(int resource, double capacity_bytes_per_s) {
  check_resource(resource);
  check_capacity(capacity_bytes_per_s, resources_[resource].name);
  resources_[resource].capacity_bytes_per_s = capacity_bytes_per_s;
  dirty_ = true;
}

void MaxMinSolver::merge_uses(const std::vector<std::pair<int, double>>& uses, std::vector<std::pair<int, double>>& out) {
  out.reserve(uses.size());
  for (const auto& [r, a] : uses) {
    if (a == 0) continue;
    auto it = std::find_if(out.begin(), out.end(), [r = r](const auto& u) { return u.first == r; });
    if (it != out.end())
      it->second += a;
    else
      out.emplace_back(r, a);
  }
}

int MaxMinSolver::add_active_flow(const std::vector<std::pair<int, double>>& uses, bool merged,
                                  double bound_bytes_per_s, double weight) {
  Flow f;
  if (merged) {  // a shape's list, read in place
    f.uses_begin = uses.data(), f.uses_end = uses.data() + uses.size();
  } else {
    if (!spare_uses_.empty()) {  // an emptied buffer of a removed flow: the same contents as a fresh one
      f.own_uses = std::move(spare_uses_.back());
      spare_uses_.pop_back();
    }
    merge_uses(uses, f.own_uses);
    f.uses_begin = f.own_uses.data(), f.uses_end = f.own_uses.data() + f.own_uses.size();
  }
  f.bound_bytes_per_s = bound_bytes_per_s;
  f.weight = weight;
  f.active_pos = static_cast<int>(active_.size());
  const int id = static_cast<int>(flows_.size());
  flows_.push_back(std::move(f));
  active_.push_back(id);
  dirty_ = true;
  return id;
}

int MaxMinSolver::add_flow(const std::vector<std::pair<int, double>>& uses, double bound_bytes_per_s,
                           double weight) {
  check_flow_parameters(uses, resources_.size(), bound_bytes_per_s, weight, "MaxMinSolver::add_flow");
  return add_active_flow(uses, false, bound_bytes_per_s, weight);
}

int MaxMinSolver::add_shape(const std::vector<std::pair<int, double>>& uses) {
  check_flow_parameters(uses, resources_.size(), INFINITY, 1.0, "MaxMinSolver::add_shape");
  std::vector<std::pair<int, double>> merged;
  merge_uses(uses, merged);
  shapes_.push_back(std::move(merged));
  return static_cast<int>(shapes_.size() - 1);
}

int MaxMinSolver::add_flow_shaped(int shape, double bound_bytes_per_s, double weight) {
  if (shape < 0 || static_cast<std::size_t>(shape) >= shapes_.size())
    throw std::out_of_range("MaxMinSolver::add_flow_shaped: unknown shape id " + std::to_string(shape) + " (" +
                            std::to_string(shapes_.size()) + " shapes)");
  check_flow_parameters({}, resources_.size(), bound_bytes_per_s, weight, "MaxMinSolver::add_flow_shaped");
  return add_active_flow(shapes_[static_cast<std::size_t>(shape)], true, bound_bytes_per_s, weight);
}

void MaxMinSolver::remove_flow(int flow) {
  check_flow(flow);
  Flow& f = flows_[flow];
  if (f.active_pos < 0)
    throw std::logic_error("MaxMinSolver::remove_flow: flow " + std::to_string(flow) + " already removed");
  // Swap-and-pop from the active list.
  const int last = active_.back();
  active_[f.active_pos] = last;
  flows_[last].active_pos = f.active_pos;
  active_.pop_back();
  f.active_pos = -1;
  f.rate_bytes_per_s = 0;
  f.uses_begin = f.uses_end = nullptr;
  if (f.own_uses.capacity() > 0) {  // ids are never reused: its buffer goes to the next add_flow
    f.own_uses.clear();
    spare_uses_.push_back(std::move(f.own_uses));
    std::vector<std::pair<int, double>>().swap(f.own_uses);
  }
  dirty_ = true;
}

void MaxMinSolver::clear_flows() {
  for (int id : active_) {
    Flow& f = flows_[id];
    f.active_pos = -1;
    f.rate_bytes_per_s = 0;
    f.uses_begin = f.uses_end = nullptr;
    std::vector<std::pair<int, double>>().swap(f.own_uses);
  }
  active_.clear();
  dirty_ = true;
}

void MaxMinSolver::solve() {
  if (!dirty_) return;
  // Only the resources some active flow uses take part (a node has tens of link directions, a
  // moment a handful of flows): the same arithmetic in the same flow order as over every resource,
  // so the rates are the same bit for bit; loads of the others read 0.
  for (int r : used_) load_[r] = 0, in_use_[r] = 0;
  used_.clear();
  for (int id : active_)
    for (const auto& [r, a] : uses_of(flows_[id]))
      if (!in_use_[r]) in_use_[r] = 1, used_.push_back(r);
  for (int r : used_) remaining_[r] = resources_[r].capacity_bytes_per_s;
  unfixed_.assign(active_.begin(), active_.end());  // no allocation once capacity suffices
  int rounds = 0;

  while (!unfixed_.empty()) {
    ++rounds;
    // Σ a·w per resource over the unfixed flows, recomputed each round (no drift from subtraction).
    for (int r : used_) denom_[r] = 0.0, unfixed_users_[r] = 0;
    double level = kInf;
    for (int id : unfixed_) {
      const Flow& f = flows_[id];
      for (const auto& [r, a] : uses_of(f)) {
        denom_[r] += a * f.weight;
        ++unfixed_users_[r];
      }
      if (f.bound_bytes_per_s < kInf) level = std::min(level, f.bound_bytes_per_s / f.weight);
    }
    for (int r : used_) {
      if (unfixed_users_[r] > 0 && denom_[r] > 0)
        level = std::min(level, std::max(remaining_[r], 0.0) / denom_[r]);
    }
    if (level == kInf) {  // nothing constrains the rest: no finite resource, no bound
      for (int id : unfixed_) {
        Flow& f = flows_[id];
        f.rate_bytes_per_s = kInf;
        for (const auto& [r, a] : uses_of(f)) load_[r] = kInf;
      }
      unfixed_.clear();
      break;
    }
    const double threshold = level * (1 + kLevelTieRelTol);
    for (int r : used_)
      saturated_[r] = unfixed_users_[r] > 0 && denom_[r] > 0 &&
                      std::max(remaining_[r], 0.0) / denom_[r] <= threshold;

    // Fix the flows on a bottleneck resource (at w·level) or at their bound; compact the rest.
    std::size_t kept = 0;
    for (int id : unfixed_) {
      Flow& f = flows_[id];
      double x = -1;
      for (const auto& [r, a] : uses_of(f)) {
        if (saturated_[r]) {
          x = std::min(f.weight * level, f.bound_bytes_per_s);
          break;
        }
      }
      if (x < 0 && f.bound_bytes_per_s / f.weight <= threshold) x = f.bound_bytes_per_s;
      if (x < 0) {
        unfixed_[kept++] = id;
        continue;
      }
      f.rate_bytes_per_s = x;
      for (const auto& [r, a] : uses_of(f)) {
        remaining_[r] -= a * x;
        load_[r] += a * x;
      }
    }
    unfixed_.resize(kept);
  }
  last_rounds_ = rounds;
  dirty_ = false;
}

double MaxMinSolver::load(int resource) const {
  check_resource(resource);
  check_solved();
  return load_[resource];
}

const std::string& MaxMinSolver::resource_name(int resource) const {
  check_resource(resource);
  return resources_[resource].name;
}

bool MaxMinSolver::is_active(int flow) const {
  check_flow(flow);
  return flows_[flow].active_pos >= 0;
}

void MaxMinSolver::check_resource(int resource) const {
  if (resource < 0 || static_cast<std::size_t>(resource) >= resources_.size())
    throw std::out_of_range("MaxMinSolver: unknown resource id " + std::to_string(resource) + " (" +
                            std::to_string(resources_.size()) + " resources)");
}

void MaxMinSolver::check_flow(int flow) const {
  if (flow < 0 || static_cast<std::size_t>(flow) >= flows_.size())
    throw std::out_of_range("MaxMinSolver: unknown flow id " + std::to_string(flow) + " (" +
                            std::to_string(flows_.size()) + " flows issued)");
}

void MaxMinSolver::check_solved() const {
  if (dirty_)
    throw std::logic_error("MaxMinSolver: rates are stale: call solve() after add_flow/remove_flow/"
                           "set_capacity before reading rate() or load()");
}

// ---------------------------------------------------------------------------------------------
// Reference oracle: deliberately naive, one constraint fixed per round, everything recomputed.
// ---------------------------------------------------------------------------------------------

std::vector<double> maxmin_reference(const std::vector<double>& capacities,
                                     const std::vector<std::vector<std::pair<int, double>>>& flow_uses,
                                     const std::vector<double>& bounds,
                                     const std::vector<double>& weights) {
  const std::size_t n_flows = flow_uses.size();
  const std::size_t n_res = capacities.size();
  if (!bounds.empty() && bounds.size() != n_flows)
    throw std::invalid_argument("maxmin_reference: " + std::to_string(bounds.size()) + " bounds for " +
                                std::to_string(n_flows) + " flows");
  if (!weights.empty() && weights.size() != n_flows)
    throw std::invalid_argument("maxmin_reference: " + std::to_string(weights.size()) + " weights for " +
                                std::to_string(n_flows) + " flows");
  for (std::size_t r = 0; r < n_res; ++r) check_capacity(capacities[r], "resource" + std::to_string(r));
  auto bound = [&](std::size_t f) { return bounds.empty() ? kInf : bounds[f]; };
  auto weight = [&](std::size_t f) { return weights.empty() ? 1.0 : weights[f]; };
  for (std::size_t f = 0; f < n_flows; ++f)
    check_flow_parameters(flow_uses[f], n_res, bound(f), weight(f), "maxmin_reference");

  std::vector<double> rate(n_flows, 0.0);
  std::vector<bool> fixed(n_flows, false);
  std::size_t n_fixed = 0;
  while (n_fixed < n_flows) {
    double best = kInf;
    bool best_is_resource = false;
    std::size_t best_index = 0;
    for (std::size_t r = 0; r < n_res; ++r) {
      double used = 0, denom = 0;
      for (std::size_t f = 0; f < n_flows; ++f)
        for (const auto& [fr, a] : flow_uses[f]) {
          if (static_cast<std::size_t>(fr) != r || a == 0) continue;
          if (fixed[f])
            used += a * rate[f];
          else
            denom += a * weight(f);
        }
      if (denom == 0) continue;
      const double remaining = std::max(capacities[r] - used, 0.0);
      const double level = remaining / denom;
      if (level < best) {
        best = level;
        best_is_resource = true;
        best_index = r;
      }
    }
    for (std::size_t f = 0; f < n_flows; ++f) {
      if (fixed[f]) continue;
      const double level = bound(f) / weight(f);
      if (level < best) {
        best = level;
        best_is_resource = false;
        best_index = f;
      }
    }
    if (best == kInf) {  // the rest are unconstrained
      for (std::size_t f = 0; f < n_flows; ++f)
        if (!fixed[f]) rate[f] = kInf;
      break;
    }
    if (best_is_resource) {
      for (std::size_t f = 0; f < n_flows; ++f) {
        if (fixed[f]) continue;
        bool uses_it = false;
        for (const auto& [fr, a] : flow_uses[f])
          if (static_cast<std::size_t>(fr) == best_index && a > 0) uses_it = true;
        if (!uses_it) continue;
        rate[f] = weight(f) * best;
        fixed[f] = true;
        ++n_fixed;
      }
    } else {
      rate[best_index] = bound(best_index);
      fixed[best_index] = true;
      ++n_fixed;
    }
  }
  return rate;
}

}  // namespace chunkflow
