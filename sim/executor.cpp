#include "sim/executor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/analytical.hpp"
#include "sim/flows.hpp"
#include "sim/maxmin.hpp"
#include "sim/symmetry.hpp"
#include "sim/topology.hpp"
#include "traces/summary_core.hpp"

namespace chunkflow {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// A flow with fewer bytes left than this is complete (absorbs rounding of rate × time).
constexpr double kFlowDoneBytes = 1e-3;
/// Set (set_simulate_exhaustive, for tests): this thread's simulations solve at every event.
thread_local bool simulate_exhaustive = false;
/// Unset (set_simulate_symmetric, for tests): this thread's simulations run every rank.
thread_local bool simulate_symmetric = true;

enum class EventKind { op_end, flows_start };

struct Event {
  double time_s;
  uint64_t seq;
  EventKind kind;
  int target;  ///< op id (op_end, h2d flows_start) or collective group (flows_start of a group)
  bool group;
  bool operator>(const Event& o) const { return time_s != o.time_s ? time_s > o.time_s : seq > o.seq; }
};

/// A plan's ops with their simulated times, as the rows detail::summarize_rows reads (the values
/// result() puts in the timeline rows: op id, kind, lane, rank, step, times, bytes, data deps).
struct PlanRows {
  const StepPlan& plan;
  const std::vector<double>& start_s_of;
  const std::vector<double>& end_s_of;
  std::size_t size() const { return plan.ops.size(); }
  int op_id(std::size_t i) const { return plan.ops[i].id; }
  std::string name(std::size_t i) const { return op_label(plan.ops[i]); }
  OpKind kind(std::size_t i) const { return plan.ops[i].kind; }
  Lane lane(std::size_t i) const { return plan.ops[i].lane; }
  int rank(std::size_t i) const { return plan.ops[i].rank; }
  int step(std::size_t i) const { return plan.ops[i].step; }
  double start_s(std::size_t i) const { return start_s_of[std::size_t(plan.ops[i].id)]; }
  double end_s(std::size_t i) const { return end_s_of[std::size_t(plan.ops[i].id)]; }
  double bytes(std::size_t i) const { return plan.ops[i].bytes; }
  const OpIds& deps(std::size_t i) const { return plan.ops[i].data_deps; }
};

struct ActiveFlow {
  int solver_id;
  double remaining_bytes;
  int owner;   ///< op id or group id
  bool group;  ///< owner is a collective group
  const Topology::Route* route;  ///< the resources it uses (owned by the Topology)
  double rate = 0;               ///< bytes/s, the solver's rate since the last solve
};

class Simulation {
 public:
  Simulation(const StepPlan& plan, const NodeSpec& node, const SimOptions& options)
      : plan_(plan), node_(node), options_(options), topology_holder_(Topology::shared(node)), topology_(*topology_holder_) {
    topology_.register_resources(solver_);
    // Rank symmetry (sim/symmetry.hpp): one rank per orbit is simulated, each of its events
    // standing for its orbit's ranks'; not with link or memory samples, which are per resource and
    // per rank.
    if (simulate_symmetric && !options.record_links && !options.record_memory)
      symmetry_ = detect_rank_symmetry(plan, node, topology_, collective_flows_, options.rank_copy_ops);
    simulated_ops_ = symmetry_ ? int(symmetry_->simulated_ops.size()) : int(plan.ops.size());
    const int n = static_cast<int>(plan.ops.size());
    pending_deps_.resize(n);
    start_s_.assign(n, -1.0);
    end_s_.assign(n, -1.0);
    // Successors in compressed rows (one allocation, not one per op), each row in plan order.
    successor_begin_.assign(std::size_t(n) + 1, 0);
    for (int k = 0; k < simulated_ops_; ++k)
      for (int d : simulated_op(k).deps) ++successor_begin_[std::size_t(d) + 1];
    for (int i = 0; i < n; ++i) successor_begin_[std::size_t(i) + 1] += successor_begin_[std::size_t(i)];
    successors_.resize(std::size_t(successor_begin_[std::size_t(n)]));
    std::vector<int> fill(successor_begin_.begin(), successor_begin_.end() - 1);
    for (int k = 0; k < simulated_ops_; ++k) {
      const PlanOp& op = simulated_op(k);
      pending_deps_[op.id] = static_cast<int>(op.deps.size());
      for (int d : op.deps) successors_[std::size_t(fill[std::size_t(d)]++)] = op.id;
      if (op.kind == OpKind::collective) {
        if (op.collective_group >= int(groups_.size())) groups_.resize(op.collective_group + 1);
        groups_[op.collective_group].members.push_back(op.id);
      }
    }
    memory_.assign(plan.info.ranks, plan.info.resident_weight_bytes + plan.info.activation_bytes);
    in_flight_h2d_.assign(plan.info.ranks, 0);
    in_flight_collective_.assign(plan.info.ranks, 0);
    peak_ = *std::max_element(memory_.begin(), memory_.end());
    for (const auto& dir : topology_.link_directions()) {
      link_names_.push_back(solver_.resource_name(dir.resource));  // "pcie.gpu0.h2d", ...
      link_resources_.push_back(dir.resource);
    }
    link_rate_.assign(link_resources_.size(), 0.0);
    // Compute time per (block, stage), filled on first use: a pure function of the stage and the
    // node, so every rank and step of a stage shares one evaluation.
    stage_offset_.reserve(plan.cost.blocks.size() + 1);
    stage_offset_.push_back(0);
    for (const BlockCost& b : plan.cost.blocks) stage_offset_.push_back(stage_offset_.back() + int(b.stages.size()));
    stage_time_s_.assign(std::size_t(stage_offset_.back()), -1.0);
    link_since_.assign(link_resources_.size(), 0.0);
    flows_on_resource_.assign(solver_.resource_count(), 0);
  }

  SimResult run() {
    for (int r = 0; r < plan_.info.ranks; ++r) sample_memory(r);
    for (int k = 0; k < simulated_ops_; ++k)
      if (pending_deps_[simulated_op(k).id] == 0) make_ready(simulated_op(k).id);
    while (!events_.empty() || !flows_.empty()) {
      const double event_t = events_.empty() ? kInf : events_.top().time_s;
      double flow_t = kInf;
      for (const auto& f : flows_)
        if (f.rate > 0) flow_t = std::min(flow_t, now_ + f.remaining_bytes / f.rate);
      if (event_t == kInf && flow_t == kInf) throw std::logic_error("simulate: flows with zero rate and no events");
      if (flow_t < event_t) {
        advance_flows(flow_t);
        finish_flows();
      } else {
        advance_flows(event_t);
        Event e = events_.top();
        events_.pop();
        event_count_ += e.group ? 1 : rank_weight(plan_.ops[std::size_t(e.target)]);  // a group's flows start once
        if (e.kind == EventKind::op_end) end_op(e.target);
        else start_flows(e.target, e.group);
      }
    }
    if (symmetry_) {  // every rank's k-th op runs when its representative's does
      const std::size_t m = std::size_t(symmetry_->ops_per_rank);
      const std::vector<int>& ids = symmetry_->ops_of_rank;
      for (std::size_t j = 0; j < std::size_t(symmetry_->ranks); ++j) {
        const std::size_t rep = std::size_t(symmetry_->representative[j]);
        if (rep == j) continue;
        for (std::size_t k = 0; k < m; ++k) {
          start_s_[std::size_t(ids[j * m + k])] = start_s_[std::size_t(ids[rep * m + k])];
          end_s_[std::size_t(ids[j * m + k])] = end_s_[std::size_t(ids[rep * m + k])];
        }
      }
    }
    for (std::size_t i = 0; i < end_s_.size(); ++i)
      if (end_s_[i] < 0) throw std::logic_error("simulate: deadlock, " + op_label(plan_.ops[i]) + " never ran");
    close_links();
    return result();
  }

  /// The rank symmetry simulated under (sim/symmetry.hpp), handed over; nullptr: every rank was
  /// simulated.
  std::unique_ptr<const RankSymmetry> take_symmetry() { return std::move(symmetry_); }

  /// E(s−1): the last compute end of the step before the reported one, over ranks (0 for one
  /// step), from the op times of the run. Under rank symmetry every rank's times are its
  /// representative's, so the simulated ops' maximum is every op's.
  double previous_step_end_s() const {
    double previous_end_s = 0;
    for (int k = 0; k < simulated_ops_; ++k) {
      const PlanOp& op = simulated_op(k);
      if (op.kind == OpKind::compute && op.step == plan_.info.steps - 2) previous_end_s = std::max(previous_end_s, end_s_[op.id]);
    }
    return previous_end_s;
  }

 private:
  struct Group {
    std::vector<int> members;
    int ready = 0;
    int open_flows = 0;
  };

  /// The k-th op simulated: under rank symmetry the k-th op of a representative rank (id order),
  /// else plan.ops[k].
  const PlanOp& simulated_op(int k) const {
    return plan_.ops[symmetry_ ? std::size_t(symmetry_->simulated_ops[std::size_t(k)]) : std::size_t(k)];
  }
  /// The ranks an op's start or end stands for: its rank orbit's size under rank symmetry, else 1.
  uint64_t rank_weight(const PlanOp& op) const {
    return symmetry_ ? uint64_t(symmetry_->orbit_size[std::size_t(op.rank)]) : 1;
  }

  void push(double t, EventKind kind, int target, bool group) { events_.push({t, seq_++, kind, target, group}); }

  void make_ready(int id) {
    const PlanOp& op = plan_.ops[id];
    if (op.kind == OpKind::collective) {
      Group& g = groups_[op.collective_group];
      if (++g.ready < int(g.members.size())) return;
      for (int m : g.members) start_op(m);
      push(now_ + node_.collective_latency_s, EventKind::flows_start, op.collective_group, true);
      return;
    }
    start_op(id);
    if (op.kind == OpKind::compute) {
      double d = op.stage >= 0 ? stage_time_s(op) : 0.0;
      // Calibrated interference (NodeSpec::compute_slowdown_*): a compute op that starts while an
      // H2D copy or a collective of its rank is in flight runs (1 + s) × longer. First order: the
      // state at the op's start decides, it is not re-evaluated while the op runs.
      d *= 1.0 + (in_flight_h2d_[op.rank] > 0 ? node_.compute_slowdown_h2d : 0.0) +
           (in_flight_collective_[op.rank] > 0 ? node_.compute_slowdown_collective : 0.0);
      push(now_ + d, EventKind::op_end, id, false);
    } else {
      push(now_ + node_.h2d_latency_s, EventKind::flows_start, id, false);
    }
  }

  /// stage_compute_time_s(plan.stage_of(op), node), evaluated once per (block, stage).
  double stage_time_s(const PlanOp& op) {
    const StageCost& stage = plan_.stage_of(op);  // validates the indices
    double& t = stage_time_s_[std::size_t(stage_offset_[op.block] + op.stage)];
    if (t < 0) t = stage_compute_time_s(stage, node_);
    return t;
  }

  void start_op(int id) {
    const PlanOp& op = plan_.ops[id];
    start_s_[id] = now_;
    event_count_ += rank_weight(op);
    if (op.kind == OpKind::h2d) ++in_flight_h2d_[op.rank];
    if (op.kind == OpKind::collective) ++in_flight_collective_[op.rank];
    if (op.alloc_bytes > 0) {
      memory_[op.rank] += op.alloc_bytes;
      peak_ = std::max(peak_, memory_[op.rank]);
      sample_memory(op.rank);
    }
  }

  void end_op(int id) {
    const PlanOp& op = plan_.ops[id];
    end_s_[id] = now_;
    if (op.kind == OpKind::h2d) --in_flight_h2d_[op.rank];
    if (op.kind == OpKind::collective) --in_flight_collective_[op.rank];
    if (op.free_bytes > 0) {
      memory_[op.rank] -= op.free_bytes;
      sample_memory(op.rank);
    }
    for (int k = successor_begin_[std::size_t(id)]; k < successor_begin_[std::size_t(id) + 1]; ++k)
      if (--pending_deps_[successors_[std::size_t(k)]] == 0) make_ready(successors_[std::size_t(k)]);
  }

  /// `shape`: the route's solver shape (MaxMinSolver::add_shape), or −1 to add it by its uses.
  void add_flow(const Topology::Route& route, int shape, double bytes, double bound, double weight, int owner,
                bool group) {
    const int id = shape >= 0 ? solver_.add_flow_shaped(shape, bound, weight) : solver_.add_flow(route, bound, weight);
    if (std::size_t(id) >= flow_key_.size()) flow_key_.resize(std::size_t(id) + 1), rate_of_id_.resize(std::size_t(id) + 1);
    flow_key_[std::size_t(id)] = {&route, bound, weight};
    flows_.push_back({id, bytes, owner, group, &route, 0.0});
    count_route(route, +1);
  }

  /// Flows per resource, kept only to switch under-duplex capacities (NodeSpec LinkSpec
  /// *_under_duplex_bytes_per_s): a direction runs at its under-duplex capacity while its reverse
  /// direction carries a flow (sim/topology.hpp).
  void count_route(const Topology::Route& route, int delta) {
    if (topology_.duplex_switched_directions().empty()) return;
    for (const auto& [r, a] : route) flows_on_resource_[r] += delta;
  }

  // Owned by the nodes helper (issue 9): how each op becomes flows on the topology's routes.
  void start_flows(int target, bool group) {
    if (!group) {
      const PlanOp& op = plan_.ops[target];
      const FlowSpec f = h2d_flow(op, node_, topology_);
      // Under rank symmetry, one flow for the copies of the rank's orbit: their summed uses.
      const Topology::Route& route = symmetry_ ? symmetry_->h2d_routes[std::size_t(op.rank)] : *f.route;
      add_flow(route, shape_of(route, h2d_shapes_[std::size_t(op.rank)]), f.bytes, f.bound_bytes_per_s, f.weight, target,
               false);
    } else {
      Group& g = groups_[target];
      const std::vector<FlowSpec>& all_flows = collective_flows_.flows(plan_.ops[g.members.front()]);
      // Under rank symmetry, one flow per orbit of the collective's flows, with their summed uses.
      const std::vector<FlowSpec>& flows = symmetry_ ? symmetry_->orbit_flows(all_flows) : all_flows;
      std::vector<Shape>* shapes = nullptr;  // the shapes of this vector's flows (one per flow)
      for (auto& [of, s] : collective_shapes_)
        if (of == &flows) shapes = &s;
      if (!shapes) shapes = &collective_shapes_.emplace_back(&flows, std::vector<Shape>(flows.size())).second;
      for (std::size_t k = 0; k < flows.size(); ++k) {
        const FlowSpec& f = flows[k];
        add_flow(*f.route, shape_of(*f.route, (*shapes)[k]), f.bytes, f.bound_bytes_per_s, f.weight, target, true);
        ++g.open_flows;
      }
      if (g.open_flows == 0) {  // P == 1 never plans a collective; kept for robustness
        for (int m : g.members) end_op(m);
        return;
      }
    }
    resolve();
  }

  /// A route's solver shape, registered on first use and kept in `slot` (the route it was made
  /// for kept beside it); −1 under set_simulate_exhaustive, which adds every flow by its uses.
  struct Shape {
    const Topology::Route* route = nullptr;
    int id = -1;
  };
  int shape_of(const Topology::Route& route, Shape& slot) {
    if (simulate_exhaustive) return -1;
    if (slot.route != &route) slot = {&route, solver_.add_shape(route)};
    return slot.id;
  }

  void advance_flows(double t) {
    const double dt = t - now_;
    if (dt > 0)
      for (auto& f : flows_) f.remaining_bytes -= f.rate * dt;
    now_ = t;
  }

  void finish_flows() {
    // Every flow whose bytes are (numerically) done completes now.
    std::vector<ActiveFlow>& done = done_;  // reused: no allocation once grown
    done.clear();
    double min_left = kInf;
    std::size_t min_i = 0;
    for (std::size_t i = 0; i < flows_.size(); ++i)
      if (flows_[i].remaining_bytes < min_left) min_left = flows_[i].remaining_bytes, min_i = i;
    flows_[min_i].remaining_bytes = 0;  // the flow that defined this instant, exactly
    for (std::size_t i = 0; i < flows_.size();) {
      if (flows_[i].remaining_bytes <= kFlowDoneBytes) {
        done.push_back(flows_[i]);
        solver_.remove_flow(flows_[i].solver_id);
        count_route(*flows_[i].route, -1);
        flows_[i] = flows_.back();
        flows_.pop_back();
      } else {
        ++i;
      }
    }
    ++event_count_;
    resolve();
    for (const auto& f : done) {
      if (!f.group) {
        end_op(f.owner);
      } else if (--groups_[f.owner].open_flows == 0) {
        for (int m : groups_[f.owner].members) end_op(m);
      }
    }
  }

  void resolve() {
    if (memo_rates_) {
      // The solve reads the active flows in the solver's order, each flow's uses (its route's), weight and
      // bound, and the capacities, which apply_under_duplex sets from the routes: a set seen before
      // has the rates it had then.
      const std::vector<int>& active = solver_.active_flow_ids();
      key_.clear();
      uint64_t hash = active.size();
      for (int id : active) {
        const FlowKey& k = flow_key_[std::size_t(id)];
        key_.push_back(k);
        uint64_t route_bits = reinterpret_cast<std::uintptr_t>(k.route), bound_bits, weight_bits;
        std::memcpy(&bound_bits, &k.bound, sizeof bound_bits);
        std::memcpy(&weight_bits, &k.weight, sizeof weight_bits);
        hash = (hash ^ route_bits) * 0x9E3779B97F4A7C15ull;
        hash = (hash ^ bound_bits ^ (hash >> 29)) * 0xBF58476D1CE4E5B9ull;
        hash = (hash ^ weight_bits ^ (hash >> 31)) * 0x94D049BB133111EBull;
      }
      // Sets with this hash, newest first; a set matches when its keys are equal, entry for entry
      // (route pointer, the bound's and the weight's bits, as the byte-string key compared before).
      auto head = memo_head_.find(hash);
      for (std::size_t e = head == memo_head_.end() ? kNoEntry : head->second; e != kNoEntry; e = memo_[e].next) {
        const MemoEntry& m = memo_[e];
        if (m.count != key_.size() ||
            (!key_.empty() && std::memcmp(memo_keys_.data() + m.first, key_.data(), key_.size() * sizeof(FlowKey)) != 0))
          continue;
        for (std::size_t k = 0; k < active.size(); ++k) rate_of_id_[std::size_t(active[k])] = memo_rate_values_[m.first + k];
        for (auto& f : flows_) f.rate = rate_of_id_[std::size_t(f.solver_id)];
        return;
      }
      topology_.apply_under_duplex(solver_, flows_on_resource_);
      solver_.solve();
      const std::size_t entry = memo_.size();
      memo_.push_back({memo_keys_.size(), key_.size(), head == memo_head_.end() ? kNoEntry : head->second});
      memo_keys_.insert(memo_keys_.end(), key_.begin(), key_.end());
      for (int id : active) memo_rate_values_.push_back(solver_.rate(id));
      memo_head_[hash] = entry;
      for (auto& f : flows_) f.rate = solver_.rate(f.solver_id);
      return;
    }
    topology_.apply_under_duplex(solver_, flows_on_resource_);
    solver_.solve();
    for (auto& f : flows_) f.rate = solver_.rate(f.solver_id);  // read once per solve, not per event
    if (!options_.record_links) return;
    for (std::size_t i = 0; i < link_resources_.size(); ++i) {
      const double rate = solver_.load(link_resources_[i]);
      if (rate == link_rate_[i]) continue;
      if (link_rate_[i] > 0 && now_ > link_since_[i])
        links_.push_back({link_names_[i], link_since_[i], now_, link_rate_[i]});
      link_rate_[i] = rate;
      link_since_[i] = now_;
    }
  }

  void close_links() {
    if (!options_.record_links) return;
    for (std::size_t i = 0; i < link_resources_.size(); ++i)
      if (link_rate_[i] > 0 && now_ > link_since_[i]) links_.push_back({link_names_[i], link_since_[i], now_, link_rate_[i]});
  }

  void sample_memory(int rank) {
    if (options_.record_memory) samples_.push_back({rank, now_, memory_[rank]});
  }

  SimResult result() {
    SimResult r;
    Timeline& t = r.timeline;
    t.source = "simulator";
    t.steps = plan_.info.steps;
    t.ranks = plan_.info.ranks;
    if (options_.record_rows) {
      t.rows.reserve(plan_.ops.size());
      for (const auto& op : plan_.ops) {
        TimelineRow row;
        row.op_id = op.id;
        if (options_.record_op_names) row.name = op.name;
        row.kind = op.kind;
        row.lane = op.lane;
        row.rank = op.rank;
        row.step = op.step;
        row.block = op.block;
        row.start_s = start_s_[op.id];
        row.end_s = end_s_[op.id];
        row.bytes = op.bytes;
        row.flop = op.flop;
        row.deps.assign(op.data_deps.begin(), op.data_deps.end());
        t.rows.push_back(std::move(row));
      }
    }
    t.memory = std::move(samples_);
    t.links = std::move(links_);
    // Without rows, the same computation on the values the rows would hold (traces/summary_core.hpp).
    // Under rank symmetry, a rank's rows are its representative's (run() copied the times), so
    // only the representatives' are summed (summarize_rows' represented_by).
    r.summary = options_.record_rows ? summarize(t)
                                     : detail::summarize_rows(PlanRows{plan_, start_s_, end_s_}, t.steps,
                                                              symmetry_ ? &symmetry_->representative : nullptr);
    r.summary.peak_memory_bytes = peak_;  // tracked at every change, with or without samples
    r.events = event_count_;
    r.rank_symmetric = symmetry_ != nullptr;
    return r;
  }

  const StepPlan& plan_;
  const NodeSpec& node_;
  SimOptions options_;
  MaxMinSolver solver_;
  std::shared_ptr<const Topology> topology_holder_;  ///< memoised per node (Topology::shared)
  const Topology& topology_;
  CollectiveFlowCache collective_flows_{plan_, node_, topology_};  ///< collective_flows per (kind, bytes)
  std::unique_ptr<const RankSymmetry> symmetry_;  ///< set: one rank per rank orbit is simulated (sim/symmetry.hpp)
  int simulated_ops_ = 0;     ///< ops simulated (simulated_op(0 .. simulated_ops_ − 1))
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  uint64_t event_count_ = 0;
  double now_ = 0;
  std::vector<int> stage_offset_;      ///< first (block, stage) slot of each block
  std::vector<double> stage_time_s_;   ///< per (block, stage), s; < 0 until first used
  std::vector<int> pending_deps_;
  std::vector<int> successor_begin_;   ///< successors of op i: successors_[begin[i] .. begin[i+1])
  std::vector<int> successors_;
  std::vector<double> start_s_, end_s_;
  std::vector<Group> groups_;
  std::vector<ActiveFlow> flows_;
  std::vector<ActiveFlow> done_;
  std::vector<Shape> h2d_shapes_ = std::vector<Shape>(std::size_t(std::max(plan_.info.ranks, 0)));  ///< per rank
  /// Per collective flow vector (CollectiveFlowCache keeps each at one address), its flows' shapes.
  std::vector<std::pair<const std::vector<FlowSpec>*, std::vector<Shape>>> collective_shapes_;
  std::vector<int> flows_on_resource_;  ///< active flows per solver resource (under-duplex switching)
  std::vector<double> memory_;
  std::vector<int> in_flight_h2d_, in_flight_collective_;  ///< per rank, ops started and not ended
  double peak_ = 0;
  std::vector<MemorySample> samples_;
  std::vector<std::string> link_names_;
  std::vector<int> link_resources_;
  std::vector<double> link_rate_, link_since_;
  std::vector<LinkSample> links_;
  // The rates of each set of active flows solved (resolve): without link samples, and unless
  // set_simulate_exhaustive.
  struct FlowKey {
    const Topology::Route* route = nullptr;
    double bound = 0;
    double weight = 1;
  };
  static_assert(sizeof(FlowKey) == sizeof(const Topology::Route*) + 2 * sizeof(double), "compared as bytes: no padding");
  const bool memo_rates_ = !options_.record_links && !simulate_exhaustive;
  std::vector<FlowKey> flow_key_;     ///< per solver flow id
  std::vector<double> rate_of_id_;    ///< per solver flow id, filled from a memo hit
  std::vector<FlowKey> key_;          ///< the active flows' keys in solver order (reused)
  /// A set of active flows solved: its keys at memo_keys_[first, first + count), its rates (solver
  /// order) at memo_rate_values_[first, ...), the next older set with the same hash.
  struct MemoEntry {
    std::size_t first, count, next;
  };
  static constexpr std::size_t kNoEntry = ~std::size_t(0);
  std::vector<MemoEntry> memo_;
  std::vector<FlowKey> memo_keys_;
  std::vector<double> memo_rate_values_;
  std::unordered_map<uint64_t, std::size_t> memo_head_;  ///< hash of a key list -> its newest set
};

}  // namespace

void set_simulate_exhaustive(bool on) { simulate_exhaustive = on; }

void set_simulate_symmetric(bool on) { simulate_symmetric = on; }

SimResult simulate(const StepPlan& plan, const NodeSpec& node, const SimOptions& options) {
  SimResult r;
  double previous_step_end_s = 0;
  std::unique_ptr<const RankSymmetry> symmetry;
  {
    Simulation simulation(plan, node, options);
    r = simulation.run();
    previous_step_end_s = simulation.previous_step_end_s();
    symmetry = simulation.take_symmetry();
  }  // the run's arrays (per op, per flow) are freed before the bound makes its own: a lower peak
  r.bound = step_bound(plan, node, previous_step_end_s, symmetry.get());
  return r;
}

}  // namespace chunkflow
