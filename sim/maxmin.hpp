#pragma once
// Max-min fair bandwidth sharing by progressive filling (SimGrid lmm style).
// Source: shared/reference/systems-and-hardware.md §5 (SimGrid docs/source/Models.rst and
// src/kernel/lmm/maxmin.cpp describe the model; this is an independent implementation).
//
// The math
// --------
// Resources r = 0..R-1 have capacities C_r ≥ 0 (bytes/s; +∞ allowed). Flows f have
//   - uses U_f = {(r, a_fr)}: flow f at rate x_f consumes a_fr · x_f of resource r (a_fr > 0);
//   - a bound B_f ∈ (0, +∞] (e.g. a copy engine's own limit), bytes/s;
//   - a weight w_f > 0 (its share is proportional to w_f).
// A feasible allocation satisfies  Σ_f a_fr · x_f ≤ C_r  for every r, and  0 ≤ x_f ≤ B_f.
// The max-min fair allocation is the feasible one whose vector of normalised rates x_f / w_f,
// sorted ascending, is lexicographically largest. It is unique and found by progressive filling:
//
//   F ← all flows (unfixed);  rem_r ← C_r
//   while F ≠ ∅:
//     for each r with unfixed users:  λ_r = max(rem_r, 0) / Σ_{f∈F, r∈U_f} a_fr · w_f
//     for each f ∈ F with B_f < ∞:    λ_f = B_f / w_f
//     λ* = min over all λ_r, λ_f                   (the tightest constraint, a common "level")
//     if λ* = ∞: every f ∈ F is unconstrained, x_f = ∞; stop
//     fix every f ∈ F that uses a resource with λ_r = λ*  at  x_f = w_f · λ*,
//     fix every f ∈ F with λ_f = λ*                    at  x_f = B_f,
//     rem_r ← rem_r − a_fr · x_f for each newly fixed f and r ∈ U_f;  F ← F \ fixed
//
// Properties the tests check (tests/test_maxmin.cpp): no resource is over capacity, and every
// flow is bottlenecked: it sits at its bound, or it uses a saturated resource on which its
// x_f / w_f is the largest. Closed forms: one flow alone gets min(C_r / a_fr over its path, B_f);
// n equal flows on one resource get C / n each.
//
// Degenerate inputs: a zero-capacity resource gives its flows rate 0 (never NaN); a flow with no
// resources and no bound is unconstrained and gets rate +∞ (callers should not create one: a
// transfer of B bytes at +∞ takes 0 s). Negative or NaN capacities, coefficients, bounds and
// non-positive weights are rejected with std::invalid_argument.
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace chunkflow {

/// Incremental max-min fair solver: resources are registered once, flows come and go, and
/// solve() recomputes every active flow's rate. Sized for the simulator's use (≲ 30 resources,
/// ≲ 50 concurrent flows, ~10^5 solves per sweep): solve() allocates nothing once its buffers
/// have grown, and does nothing when no flow or capacity changed since the last call.
/// Not thread-safe; use one solver per simulation.
class MaxMinSolver {
 public:
  MaxMinSolver() = default;
  /// Not copyable: a flow reads its uses in place (its own buffer or its shape's list), so a copy
  /// would read the original's. Movable: a moved vector keeps its elements where they are.
  MaxMinSolver(const MaxMinSolver&) = delete;
  MaxMinSolver& operator=(const MaxMinSolver&) = delete;
  MaxMinSolver(MaxMinSolver&&) = default;
  MaxMinSolver& operator=(MaxMinSolver&&) = default;

  /// Registers a resource (one link direction, a duplex coupling, ...) with capacity
  /// `capacity_bytes_per_s` ≥ 0 (may be +∞) and an optional name for traces and error messages.
  /// Returns its id (0, 1, 2, ... in registration order). Throws std::invalid_argument for a
  /// negative or NaN capacity.
  int add_resource(double capacity_bytes_per_s, std::string name = {});

  /// Changes a resource's capacity (bytes/s, ≥ 0, may be +∞); takes effect at the next solve().
  /// Throws std::out_of_range for an unknown id, std::invalid_argument for a bad capacity.
  void set_capacity(int resource, double capacity_bytes_per_s);

  /// Adds an active flow. `uses` lists (resource id, coefficient): the flow at rate x consumes
  /// coefficient · x bytes/s of that resource; coefficients must be ≥ 0 (0 entries are dropped,
  /// repeated resources are summed). `bound_bytes_per_s` > 0 caps the flow's own rate (copy-engine
  /// or SM-driven limit; +∞ = none). `weight` > 0 sets its share (rate ∝ weight among flows
  /// limited by the same resource). Returns the flow id; ids are never reused. The flow's rate is
  /// known after the next solve(). Throws std::out_of_range for an unknown resource id and
  /// std::invalid_argument for a negative/NaN coefficient, a non-positive/NaN bound or a
  /// non-positive/non-finite weight. Source: systems-and-hardware.md §5.
  int add_flow(const std::vector<std::pair<int, double>>& uses,
               double bound_bytes_per_s = INFINITY, double weight = 1.0);

  /// Registers a flow shape for add_flow_shaped: `uses` checked and merged exactly as add_flow
  /// checks and merges them (same errors: std::out_of_range for an unknown resource id,
  /// std::invalid_argument for a negative/NaN/infinite coefficient). Returns its id (0, 1, ... in
  /// registration order); shapes are kept until the solver is destroyed.
  int add_shape(const std::vector<std::pair<int, double>>& uses);

  /// add_flow(the uses `shape` was registered with, bound_bytes_per_s, weight): the same flow, its
  /// uses merged once by add_shape instead of at every flow (a simulator starts the same routes
  /// over and over). Throws std::out_of_range for an unknown shape, std::invalid_argument for a
  /// non-positive/NaN bound or a non-positive/non-finite weight, as add_flow.
  int add_flow_shaped(int shape, double bound_bytes_per_s = INFINITY, double weight = 1.0);

  /// Deactivates a flow (e.g. its transfer completed). Its rate reads 0 afterwards. Throws
  /// std::out_of_range for an id never returned by add_flow, std::logic_error if already removed.
  void remove_flow(int flow);

  /// Deactivates every flow (start of a new simulation); resources are kept. Flow ids continue.
  void clear_flows();

  /// Recomputes the max-min fair rate of every active flow by progressive filling (math above).
  /// O(iterations · (R + Σ|U_f|)), iterations ≤ number of distinct bottleneck levels.
  void solve();

  /// Rate of `flow` in bytes/s after the last solve(); 0 for a removed flow, +∞ for an
  /// unconstrained one (no resources, no bound). Throws std::out_of_range for an unknown id and
  /// std::logic_error if flows or capacities changed since the last solve() (stale rates).
  double rate(int flow) const {
    if (flow < 0 || static_cast<std::size_t>(flow) >= flows_.size()) check_flow(flow);  // throws
    if (dirty_) check_solved();                                                         // throws
    return flows_[static_cast<std::size_t>(flow)].rate_bytes_per_s;
  }

  /// Σ coefficient · rate over the active flows on `resource`, bytes/s, after the last solve().
  /// Throws like rate().
  double load(int resource) const;

  double capacity(int resource) const {  ///< bytes/s; std::out_of_range if unknown
    if (resource < 0 || static_cast<std::size_t>(resource) >= resources_.size()) check_resource(resource);  // throws
    return resources_[static_cast<std::size_t>(resource)].capacity_bytes_per_s;
  }
  const std::string& resource_name(int resource) const;  ///< std::out_of_range if unknown
  std::size_t resource_count() const { return resources_.size(); }
  std::size_t active_flows() const { return active_.size(); }
  bool is_active(int flow) const;  ///< false for removed flows; std::out_of_range if unknown
  /// The active flow ids, in no particular order (valid until the next add/remove).
  const std::vector<int>& active_flow_ids() const { return active_; }
  /// Number of progressive-filling rounds the last solve() took (for benchmarks and tests).
  int last_solve_rounds() const { return last_rounds_; }

  /// Relative tolerance under which two constraint levels count as the same bottleneck in
  /// solve(): grouping them fixes both in one round; rates differ from exact by at most this
  /// factor.
  static constexpr double kLevelTieRelTol = 1e-12;

 private:
  struct Resource {
    double capacity_bytes_per_s = 0;
    std::string name;
  };
  struct Flow {
    /// Its merged uses (coefficients > 0): [uses_begin, uses_end), in `own_uses` (add_flow) or in
    /// its shape's list (add_flow_shaped: shapes never change, and a vector's elements keep their
    /// address when the vector is moved, so neither the shapes' nor the flows' growth moves them).
    const std::pair<int, double>* uses_begin = nullptr;
    const std::pair<int, double>* uses_end = nullptr;
    std::vector<std::pair<int, double>> own_uses;
    double bound_bytes_per_s = INFINITY;
    double weight = 1.0;
    double rate_bytes_per_s = 0;
    int active_pos = -1;  // index in active_, -1 once removed
  };
  // flows_ grows by moving its Flows, which keeps each own_uses buffer (and so uses_begin) in
  // place; a Flow that could throw on moving would be copied instead, its pointers left on the old.
  static_assert(std::is_nothrow_move_constructible_v<Flow>, "a Flow must move without throwing");

  /// The uses of a flow as add_flow keeps them: coefficients of a repeated resource summed, in
  /// the order each resource first appears, zero coefficients dropped; appended to `out` (empty).
  static void merge_uses(const std::vector<std::pair<int, double>>& uses, std::vector<std::pair<int, double>>& out);
  /// Adds an active flow whose uses are `uses` merged by merge_uses (`merged` false) or `uses`
  /// themselves, already merged (`merged` true: a shape's list, which the flow reads in place, so it
  /// must outlive the flow: shapes_ does); parameters checked by the caller.
  int add_active_flow(const std::vector<std::pair<int, double>>& uses, bool merged, double bound_bytes_per_s,
                      double weight);
  /// A flow's merged uses (resource id, coefficient), where they are kept; empty once removed.
  static std::span<const std::pair<int, double>> uses_of(const Flow& f) { return {f.uses_begin, f.uses_end}; }
  void check_resource(int resource) const;
  void check_flow(int flow) const;
  void check_solved() const;

  std::vector<Resource> resources_;
  std::vector<Flow> flows_;  // indexed by flow id; removed flows keep a slot (uses released)
  std::vector<int> active_;  // active flow ids
  /// Emptied `own_uses` buffers of removed flows, kept for the next add_flow (no allocation per
  /// flow once a simulation's peak of flows has been reached).
  std::vector<std::vector<std::pair<int, double>>> spare_uses_;
  std::vector<std::vector<std::pair<int, double>>> shapes_;  // add_shape's merged uses, by shape id
  bool dirty_ = false;       // flows or capacities changed since the last solve()
  int last_rounds_ = 0;

  // Buffers reused across solve() calls (no allocation once grown).
  std::vector<double> remaining_;    // per resource: capacity left for unfixed flows
  std::vector<double> denom_;        // per resource: Σ a·w over unfixed flows
  std::vector<int> unfixed_users_;   // per resource: number of unfixed flows using it
  std::vector<double> load_;         // per resource: Σ a·rate after solve()
  std::vector<char> saturated_;      // per resource: bottleneck of the current round
  std::vector<int> unfixed_;         // active flows not yet fixed
  std::vector<int> used_;            // resources some active flow used at the last solve()
  std::vector<char> in_use_;         // per resource: in used_
};

/// Plain reference implementation of the same allocation, used as the test oracle: recomputes
/// every constraint level from scratch each round and fixes exactly one constraint per round
/// (the first tightest). `capacities[r]` in bytes/s; `flow_uses[f]` as in add_flow; `bounds[f]`
/// (+∞ = none) and `weights[f]` per flow (empty vectors mean +∞ and 1). Returns the rates in
/// bytes/s. Throws std::invalid_argument on size mismatch or the invalid values add_flow rejects.
/// Source: systems-and-hardware.md §5.
std::vector<double> maxmin_reference(const std::vector<double>& capacities,
                                     const std::vector<std::vector<std::pair<int, double>>>& flow_uses,
                                     const std::vector<double>& bounds,
                                     const std::vector<double>& weights);

}  // namespace chunkflow
