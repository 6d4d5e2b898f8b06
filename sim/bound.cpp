// The step-time lower bound; derivation in bound.hpp.
#include "sim/bound.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <span>
#include <stdexcept>

#include "model/analytical.hpp"
#include "sim/flows.hpp"
#include "sim/maxmin.hpp"
#include "sim/sort_runs.hpp"
#include "sim/symmetry.hpp"
#include "sim/topology.hpp"

namespace chunkflow {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
/// Set (set_step_bound_exhaustive, for tests): this thread's step_bound takes no shortcut.
thread_local bool bound_exhaustive = false;
}  // namespace

void set_step_bound_exhaustive(bool on) { bound_exhaustive = on; }

double duplex_link_s(double bytes, double reverse_bytes, double capacity_bytes_per_s, double under_duplex_bytes_per_s,
                     double reverse_capacity_bytes_per_s, double reverse_under_duplex_bytes_per_s) {
  // min over a ≥ 0 of a + max(0, (W − C_u·a)/C) + max(0, (W̄ − C̄_u·a)/C̄): convex and piecewise
  // linear in a, its kinks at W/C_u and W̄/C̄_u, slope 1 beyond both; so the minimum is at 0 or a kink.
  const double W = std::max(bytes, 0.0), Wr = std::max(reverse_bytes, 0.0);
  auto total_s = [&](double a) {
    return a + std::max(0.0, (W - under_duplex_bytes_per_s * a) / capacity_bytes_per_s) +
           std::max(0.0, (Wr - reverse_under_duplex_bytes_per_s * a) / reverse_capacity_bytes_per_s);
  };
  double best = total_s(0);
  if (under_duplex_bytes_per_s > 0) best = std::min(best, total_s(W / under_duplex_bytes_per_s));
  if (reverse_under_duplex_bytes_per_s > 0) best = std::min(best, total_s(Wr / reverse_under_duplex_bytes_per_s));
  return best;
}

namespace {
/// duplex_link_s for direction d and its reverse rev (a direction without an under-duplex
/// capacity passes its capacity as it).
double pair_lp_s(const LinkDirection& d, const LinkDirection& rev, double bytes, double reverse_bytes) {
  const double cu = d.under_duplex_bytes_per_s > 0 ? d.under_duplex_bytes_per_s : d.capacity_bytes_per_s;
  const double cu_rev = rev.under_duplex_bytes_per_s > 0 ? rev.under_duplex_bytes_per_s : rev.capacity_bytes_per_s;
  return duplex_link_s(bytes, reverse_bytes, d.capacity_bytes_per_s, cu, rev.capacity_bytes_per_s, cu_rev);
}
}  // namespace

StepBound step_bound(const StepPlan& plan, const NodeSpec& node, double previous_step_end_s,
                     const RankSymmetry* symmetry) {
  MaxMinSolver solver;
  const std::shared_ptr<const Topology> shared_topology = Topology::shared(node);  // memoised per node
  const Topology& topology = *shared_topology;
  topology.register_resources(solver);
  CollectiveFlowCache flow_cache(plan, node, topology);  // collective_flows per (kind, bytes)
  // Per collective flow list (the groups of one kind and buffer share one: flow_cache), its
  // coefficient × bytes per route entry, in flow then route-entry order, made once: a sum over them
  // adds the same products in the same order as a walk over the flows. Few lists per plan.
  using Uses = std::vector<std::pair<int, double>>;  // (resource, bytes)
  std::deque<std::pair<const std::vector<FlowSpec>*, Uses>> flow_uses;  // stable references
  auto uses_of = [&](const std::vector<FlowSpec>& flows) -> const Uses& {
    for (const auto& [list, uses] : flow_uses)
      if (list == &flows) return uses;
    Uses uses;
    for (const FlowSpec& f : flows)
      for (auto [res, coeff] : *f.route) uses.push_back({res, coeff * f.bytes});
    return flow_uses.emplace_back(&flows, std::move(uses)).second;
  };
  const int s = plan.info.steps - 1;
  const int ranks = plan.info.ranks;

  const int op_count = int(plan.ops.size());

  // One pass over every op gathers what the terms below read of the whole plan (a 1 MiB-chunk
  // plan's ops are tens of MB, so each pass streams them from memory): per rank its step-s op
  // count, its last compute op of each step and whether it copies; the first op of step s; the
  // collective group ids in use and each one's members in step s; whether every rank keeps its
  // copies on one lane and its collectives on one lane. A second pass, over the ops from the
  // first of step s on, files the ops of step s.
  std::vector<std::size_t> count(static_cast<std::size_t>(ranks), 0);  // per rank, ops of step s
  int first_of_step = op_count;
  int group_end = 0;                // collective group ids are in [0, group_end) (validate())
  std::vector<int> group_members;   // per group id, its members in step s
  std::vector<int> last_compute_id(std::size_t(ranks) * std::size_t(std::max(plan.info.steps, 0)), -1);
  std::vector<char> copies(static_cast<std::size_t>(ranks), 0);  // the rank has an H2D op
  bool single_lanes = true;
  std::vector<int> h2d_lane(static_cast<std::size_t>(ranks), -1), comm_lane(static_cast<std::size_t>(ranks), -1);
  for (const PlanOp& op : plan.ops) {
    const std::size_t q = std::size_t(op.rank);
    if (op.step == s) ++count[q], first_of_step = std::min(first_of_step, op.id);
    if (op.kind == OpKind::compute) {
      last_compute_id[q * std::size_t(plan.info.steps) + std::size_t(op.step)] = op.id;
      continue;
    }
    if (op.kind == OpKind::collective) {
      if (op.collective_group < 0) throw std::logic_error("step_bound: " + op_label(op) + " belongs to no collective group");
      group_end = std::max(group_end, op.collective_group + 1);
      if (op.step == s) {
        if (group_members.size() <= std::size_t(op.collective_group)) group_members.resize(std::size_t(op.collective_group) + 1, 0);
        ++group_members[std::size_t(op.collective_group)];
      }
    } else {
      copies[q] = 1;
    }
    int& lane = (op.kind == OpKind::h2d ? h2d_lane : comm_lane)[q];
    if (lane < 0) lane = int(op.lane);
    else if (lane != int(op.lane)) single_lanes = false;
  }
  group_members.resize(std::size_t(group_end), 0);

  // Per rank: the step's ops in issue order (ids ascend within a rank's program).
  std::vector<std::vector<const PlanOp*>> ops(ranks);
  for (int r = 0; r < ranks; ++r) ops[std::size_t(r)].reserve(count[std::size_t(r)]);
  for (int i = first_of_step; i < op_count; ++i)
    if (plan.ops[std::size_t(i)].step == s) ops[plan.ops[std::size_t(i)].rank].push_back(&plan.ops[std::size_t(i)]);

  // Uncontended duration of a collective: its flows alone, max-min rates, plus the latency.
  std::map<std::pair<int, double>, double> alone_s;  // by kind and buffer bytes (same flows)
  auto collective_alone_s = [&](const PlanOp& op) {
    const std::pair<int, double> key{op.stage >= 0 ? int(plan.stage_of(op).collective) : -1, op.bytes};
    auto it = alone_s.find(key);
    if (it != alone_s.end()) return it->second;
    // Its flows alone, run to completion as the executor runs them: max-min rates, a direction at
    // its under-duplex capacity while its reverse carries a flow, re-solved as flows finish.
    solver.clear_flows();
    struct Alone {
      int id;
      double left_bytes;
      const Topology::Route* route;
    };
    std::vector<Alone> flows;
    std::vector<int> on_resource(solver.resource_count(), 0);
    for (const FlowSpec& f : flow_cache.flows(op)) {
      flows.push_back({solver.add_flow(*f.route, f.bound_bytes_per_s, f.weight), f.bytes, f.route});
      for (const auto& [res, coeff] : *f.route) on_resource[res] += 1;
    }
    double t = 0;
    while (!flows.empty()) {
      topology.apply_under_duplex(solver, on_resource);
      solver.solve();
      double dt = kInf;
      std::vector<double> rate(flows.size());
      for (std::size_t k = 0; k < flows.size(); ++k) {
        rate[k] = solver.rate(flows[k].id);
        dt = std::min(dt, flows[k].left_bytes / rate[k]);
      }
      if (!(dt < kInf)) throw std::logic_error("step_bound: a collective flow has no rate");
      t += dt;
      for (std::size_t k = 0; k < flows.size();) {
        const double moved = rate[k] * dt;
        flows[k].left_bytes -= moved;
        if (flows[k].left_bytes <= 1e-9 * std::max(1.0, flows[k].left_bytes + moved)) {
          solver.remove_flow(flows[k].id);
          for (const auto& [res, coeff] : *flows[k].route) on_resource[res] -= 1;
          flows[k] = flows.back();
          rate[k] = rate.back();
          flows.pop_back();
          rate.pop_back();
        } else {
          ++k;
        }
      }
    }
    topology.apply_under_duplex(solver, on_resource);  // every count 0: one-way capacities again
    solver.clear_flows();
    return alone_s[key] = node.collective_latency_s + t;
  };

  // Compute time per (block, stage), evaluated once: every rank runs the same stages.
  std::vector<std::size_t> stage_offset{0};
  for (const BlockCost& bc : plan.cost.blocks) stage_offset.push_back(stage_offset.back() + bc.stages.size());
  std::vector<double> stage_s(stage_offset.back(), -1.0);
  auto stage_time_s = [&](const PlanOp& op) {
    const StageCost& stage = plan.stage_of(op);  // validates the indices
    double& t = stage_s[stage_offset[std::size_t(op.block)] + std::size_t(op.stage)];
    if (t < 0) t = stage_compute_time_s(stage, node);
    return t;
  };

  // Minimum duration of an op: compute its stage time, a collective its time alone, a copy its
  // latency plus its bytes at the fastest rate its flow can have (copy engine or the plan's cap,
  // its route's narrowest capacity); the executor runs a copy lane's copies one at a time.
  // With a rank symmetry (sim/symmetry.hpp), the ranks of one orbit have the same minimum
  // durations and tails, position by position, bit for bit: the same stages, collectives of the
  // same flows, copies on routes the symmetry maps onto each other (the same capacities and
  // coefficients, so the same narrowest rate), and the same dependencies, taken in the same order.
  // rep_op[id]: the op at id's position on its rank's representative; those alone are evaluated.
  std::vector<int> rep_op;
  if (symmetry && std::size_t(symmetry->ranks) * std::size_t(symmetry->ops_per_rank) == plan.ops.size()) {
    rep_op.resize(plan.ops.size());
    const std::size_t m = std::size_t(symmetry->ops_per_rank);
    for (std::size_t j = 0; j < std::size_t(symmetry->ranks); ++j)
      for (std::size_t k = 0; k < m; ++k)
        rep_op[std::size_t(symmetry->ops_of_rank[j * m + k])] =
            symmetry->ops_of_rank[std::size_t(symmetry->representative[j]) * m + k];
  }
  std::vector<double> min_s(static_cast<std::size_t>(op_count), -1.0);
  auto min_duration_s = [&](const PlanOp& of) {
    const PlanOp& op = rep_op.empty() ? of : plan.ops[std::size_t(rep_op[std::size_t(of.id)])];
    double& t = min_s[std::size_t(op.id)];
    if (t >= 0) return t;
    if (op.kind == OpKind::compute) {
      t = op.stage >= 0 ? stage_time_s(op) : 0.0;
    } else if (op.kind == OpKind::collective) {
      t = collective_alone_s(op);
    } else {
      const FlowSpec f = h2d_flow(op, node, topology);
      double rate = f.bound_bytes_per_s > 0 ? f.bound_bytes_per_s : kInf;
      for (auto [res, coeff] : *f.route) rate = std::min(rate, solver.capacity(res) / coeff);
      t = node.h2d_latency_s + op.bytes / rate;
    }
    return t;
  };

  // Tail of every op of step s: the longest dependency chain from its end to the end of a compute
  // op of step s (each ends by E(s)); −∞ when no compute op of step s follows it. Successors have
  // larger ids, and every successor of a step-s op is a step-s op (s is the last step).
  std::vector<double> tail(static_cast<std::size_t>(op_count), -kInf);
  for (const std::vector<const PlanOp*>& rank_ops : ops)
    for (const PlanOp* op : rank_ops)
      if (op->kind == OpKind::compute) tail[std::size_t(op->id)] = 0;
  for (int i = op_count - 1; i >= first_of_step; --i) {
    const PlanOp& op = plan.ops[i];
    if (op.step != s || tail[std::size_t(i)] == -kInf || (!rep_op.empty() && rep_op[std::size_t(i)] != i)) continue;
    const double through = min_duration_s(op) + tail[std::size_t(i)];
    for (int d : op.deps)
      if (plan.ops[d].step == s) tail[std::size_t(d)] = std::max(tail[std::size_t(d)], through);
  }
  if (!rep_op.empty())  // the other ranks' ops (their dependencies are ops of their own rank)
    for (int i = first_of_step; i < op_count; ++i) tail[std::size_t(i)] = tail[std::size_t(rep_op[std::size_t(i)])];

  // The collectives of step s by group (members share the flows, started when the last arrives),
  // groups in ascending id, members in op order, and the flows of each, once (flows_of_group, into
  // flow_cache: stable references). Flat arrays: a plan has hundreds of groups, and a map of
  // vectors cost two heap blocks each.
  std::vector<int> group_index(static_cast<std::size_t>(group_end), -1);  // id → index, −1: none in step s
  std::vector<int> member_begin(1, 0), member_ids;  // index k's members: member_ids[member_begin[k] ..)
  {
    for (int g = 0; g < group_end; ++g)
      if (group_members[std::size_t(g)] > 0) {
        group_index[std::size_t(g)] = int(member_begin.size()) - 1;
        member_begin.push_back(member_begin.back() + group_members[std::size_t(g)]);
      }
    member_ids.resize(std::size_t(member_begin.back()));
    std::vector<int> next(member_begin.begin(), member_begin.end() - 1);
    for (int i = first_of_step; i < op_count; ++i) {  // the members in op order
      const PlanOp& op = plan.ops[std::size_t(i)];
      if (op.step == s && op.kind == OpKind::collective)
        member_ids[std::size_t(next[std::size_t(group_index[std::size_t(op.collective_group)])]++)] = op.id;
    }
  }
  const std::size_t groups = member_begin.size() - 1;
  auto members_of = [&](std::size_t k) {
    return std::span<const int>(member_ids.data() + member_begin[k], member_ids.data() + member_begin[k + 1]);
  };
  std::vector<const std::vector<FlowSpec>*> flows_of_group(groups);
  for (std::size_t k = 0; k < groups; ++k) flows_of_group[k] = &flow_cache.flows(plan.ops[std::size_t(member_ids[std::size_t(member_begin[k])])]);

  // Per rank r (r* below), independent of the anchor: its last compute op of step s, its H2D bytes
  // less its carry (the old volume form of (b)) and its copy lane (c).
  std::vector<int> last_compute(ranks, -1);
  std::vector<double> h2d_after_carry(ranks, 0.0);
  std::vector<const Topology::Route*> h2d_route(ranks, nullptr);
  double copy_lane_s = 0;
  std::vector<char> read_early(plan.ops.size(), 0);  // per rank below; the entries set are cleared after it
  std::vector<int> read_early_set;
  for (int r = 0; r < ranks; ++r) {
    for (int d : read_early_set) read_early[std::size_t(d)] = 0;
    read_early_set.clear();
    int first_compute = -1, first_collective = -1;
    for (std::size_t i = 0; i < ops[r].size(); ++i) {
      const PlanOp& op = *ops[r][i];
      if (op.kind == OpKind::compute) {
        if (first_compute < 0) first_compute = int(i);
        last_compute[r] = op.id;
      } else if (op.kind == OpKind::collective) {
        if (first_collective < 0 && first_compute >= 0) first_collective = int(i);
      }
    }
    if (first_compute < 0) throw std::logic_error("step_bound: the last step has no compute op on rank " + std::to_string(r));
    // H2D bytes of this rank's step, less what it can hold before E(s−1): its slots and the copies
    // read by its ops before its first collective.
    if (first_collective >= 0)
      for (int i = first_compute; i < first_collective; ++i)
        for (int d : ops[r][i]->data_deps)
          if (plan.ops[d].kind == OpKind::h2d) read_early[d] = 1, read_early_set.push_back(d);
    double h2d_bytes = 0, early_bytes = 0, min_rate = kInf;
    int h2d_ops = 0, early_ops = 0;
    for (const PlanOp* op : ops[r]) {
      if (op->kind != OpKind::h2d) continue;
      if (!h2d_route[r]) h2d_route[r] = h2d_flow(*op, node, topology).route;  // the rank's H2D route (sim/flows.hpp)
      h2d_bytes += op->bytes;
      ++h2d_ops;
      if (read_early[op->id]) early_bytes += op->bytes, ++early_ops;
    }
    if (h2d_ops == 0) continue;
    const double carry = std::min(h2d_bytes, plan.info.slot_count * plan.info.slot_bytes + early_bytes);
    h2d_after_carry[r] = h2d_bytes - carry;
    for (auto [res, coeff] : *h2d_route[r]) min_rate = std::min(min_rate, solver.capacity(res) / coeff);
    min_rate = std::min(min_rate, node.copy_engine_bytes_per_s);
    const double lane = (h2d_bytes - carry) / min_rate +
                        node.h2d_latency_s * std::max(0, h2d_ops - plan.info.slot_count - early_ops);
    copy_lane_s = std::max(copy_lane_s, lane);
  }

  // (d) Cumulative form: everything of steps 0..s must cross before E(s), so
  //     step_time ≥ (bytes of steps 0..s over ρ) / C_ρ − E(s−1), and per rank
  //     step_time ≥ Σ over its H2D ops of steps 0..s of (latency + bytes / rate) − E(s−1).
  std::vector<double> cumulative_bytes(solver.resource_count(), 0.0);
  std::vector<double> cumulative_raw_bytes;  // (d) before E(s−1)·C is subtracted, for (f)
  if (previous_step_end_s >= 0) {
    std::vector<double> lane_s(ranks, 0.0);
    // Per rank: its H2D route (every copy of a rank takes it, sim/flows.hpp h2d_flow) and the fastest
    // rate a copy has on it, evaluated at its first copy.
    std::vector<const Topology::Route*> rank_route(static_cast<std::size_t>(ranks), nullptr);
    std::vector<double> rank_rate(static_cast<std::size_t>(ranks), 0.0);
    for (const PlanOp& op : plan.ops) {
      if (op.step > s) continue;
      if (op.kind == OpKind::h2d) {
        const std::size_t q = std::size_t(op.rank);
        if (!rank_route[q]) {
          rank_route[q] = h2d_flow(op, node, topology).route;
          double rate = node.copy_engine_bytes_per_s;
          for (auto [res, coeff] : *rank_route[q]) rate = std::min(rate, solver.capacity(res) / coeff);
          rank_rate[q] = rate;
        }
        for (auto [res, coeff] : *rank_route[q]) cumulative_bytes[res] += coeff * op.bytes;
        lane_s[op.rank] += node.h2d_latency_s + op.bytes / rank_rate[q];
      } else if (op.kind == OpKind::collective && op.rank == 0 &&
                 op.id < last_compute_id[std::size_t(op.rank) * plan.info.steps + op.step]) {
        for (const auto& [res, bytes] : uses_of(flow_cache.flows(op))) cumulative_bytes[res] += bytes;
      }
    }
    cumulative_raw_bytes = cumulative_bytes;
    for (int res = 0; res < int(cumulative_bytes.size()); ++res)
      cumulative_bytes[res] = std::max(0.0, cumulative_bytes[res] - previous_step_end_s * solver.capacity(res));
    for (double l : lane_s) copy_lane_s = std::max(copy_lane_s, l - previous_step_end_s);
  }

  // Per rank, the H2D ops of step s in issue order with their minimum durations (the route is the
  // rank's, h2d_route); and per resource, where its items of (e) come from, in the order they are
  // built: the ranks whose H2D route crosses it (with the coefficient; rank, then issue order, then
  // route entry), then the collective groups crossing it (group; one item per group, below). None of
  // this depends on the anchor.
  struct H2dOp {
    std::size_t id;
    double bytes, min_s;
  };
  std::vector<std::vector<H2dOp>> h2d_ops(static_cast<std::size_t>(ranks));
  for (int q = 0; q < ranks; ++q) h2d_ops[std::size_t(q)].reserve(ops[std::size_t(q)].size());
  for (int q = 0; q < ranks; ++q)
    for (const PlanOp* op : ops[q])
      if (op->kind == OpKind::h2d) h2d_ops[std::size_t(q)].push_back({std::size_t(op->id), op->bytes, min_duration_s(*op)});
  const int resources = int(solver.resource_count());
  struct RankEntry {
    int rank;
    double coeff;
  };
  struct GroupEntry {
    std::size_t group;  // index in flows_of_group
    double work_bytes;  // Σ coefficient × bytes over the group's flows' entries on the resource (below)
  };
  std::vector<std::vector<RankEntry>> rank_entries(static_cast<std::size_t>(resources));
  std::vector<std::vector<GroupEntry>> group_entries(static_cast<std::size_t>(resources));
  for (int q = 0; q < ranks; ++q)
    if (h2d_route[q] && !h2d_ops[std::size_t(q)].empty())
      for (auto [res, coeff] : *h2d_route[q]) rank_entries[std::size_t(res)].push_back({q, coeff});
  // A group's flows share their release and tail (the group's), so on a resource they are one
  // item of (e) and (f), their works summed (flow, then route entry): with every work ≥ 0, a scan's
  // prefix that holds some of them is worth no more than the longer prefix to the end of their run
  // of equal release and tail, which holds them all (the same release and tail terms, more work),
  // so each scan's largest value is the same. A negative work (routes.cpp makes none) stays an
  // item of its own. Summed once per flow list (merged_uses_of), in that order.
  std::deque<std::pair<const std::vector<FlowSpec>*, Uses>> merged_uses;  // stable references
  std::vector<int> last_use(static_cast<std::size_t>(resources), -1);     // per resource, its entry
  auto merged_uses_of = [&](const std::vector<FlowSpec>& flows) -> const Uses& {
    for (const auto& [list, uses] : merged_uses)
      if (list == &flows) return uses;
    Uses merged;
    for (const auto& [res, work] : uses_of(flows)) {
      int& at = last_use[std::size_t(res)];
      if (at >= 0 && merged[std::size_t(at)].second >= 0 && work >= 0)
        merged[std::size_t(at)].second += work;
      else
        at = int(merged.size()), merged.push_back({res, work});
    }
    for (const auto& [res, work] : merged) last_use[std::size_t(res)] = -1;
    return merged_uses.emplace_back(&flows, std::move(merged)).second;
  };
  for (std::size_t k = 0; k < groups; ++k)
    for (const auto& [res, work] : merged_uses_of(*flows_of_group[k])) group_entries[std::size_t(res)].push_back({k, work});
  // The anchor of each candidate r*: its last compute op of step s−1.
  std::vector<int> anchor_of(static_cast<std::size_t>(ranks), -1);
  if (s > 0)
    for (int q = 0; q < ranks; ++q) anchor_of[std::size_t(q)] = last_compute_id[std::size_t(q) * std::size_t(plan.info.steps) + std::size_t(s - 1)];

  // (h) inputs independent of r* (sim/bound.hpp (h)). The term needs one copy at a time per rank
  // and one collective group at a time: every rank's copies on one lane, and every rank's
  // collectives on one lane (every group has an op on every rank, validate()).
  const std::vector<LinkDirection>& directions = topology.link_directions();
  std::vector<int> direction_of(static_cast<std::size_t>(resources), -1);
  for (int k = 0; k < int(directions.size()); ++k) direction_of[std::size_t(directions[std::size_t(k)].resource)] = k;
  // C_r^hi (the solver's capacity, one-way) and C_r^lo (the under-duplex capacity where switched).
  auto capacity_lo = [&](int res) {
    const int k = direction_of[std::size_t(res)];
    if (k >= 0 && directions[std::size_t(k)].under_duplex_bytes_per_s > 0)
      return std::min(solver.capacity(res), directions[std::size_t(k)].under_duplex_bytes_per_s);
    return solver.capacity(res);
  };
  // lanes_on[ρ]: Σ over the ranks with a copy in the plan of their H2D route's coefficient on ρ
  // (at most one copy per rank crosses at a time).
  std::vector<double> lanes_on(static_cast<std::size_t>(resources), 0.0);
  for (int q = 0; q < ranks; ++q)
    if (copies[std::size_t(q)])
      for (auto [res, coeff] : topology.h2d_route(q)) lanes_on[std::size_t(res)] += coeff;
  // Per rank: its step-s copies' classes (by flow cap: the copy engine or the plan's lower cap),
  // each with v = the fastest it can move (cap, route's narrowest capacity per coefficient).
  struct CopyClass {
    double cap_bytes_per_s, v_bytes_per_s;
  };
  std::vector<std::vector<CopyClass>> classes(static_cast<std::size_t>(ranks));
  std::vector<int> class_of(static_cast<std::size_t>(op_count), -1);
  for (int q = 0; q < ranks; ++q)
    for (const H2dOp& h : h2d_ops[std::size_t(q)]) {
      const FlowSpec f = h2d_flow(plan.ops[h.id], node, topology);
      std::vector<CopyClass>& cl = classes[std::size_t(q)];
      std::size_t c = 0;
      while (c < cl.size() && cl[c].cap_bytes_per_s != f.bound_bytes_per_s) ++c;
      if (c == cl.size()) {
        double v = f.bound_bytes_per_s;
        for (auto [res, coeff] : *f.route) v = std::min(v, solver.capacity(res) / coeff);
        cl.push_back({f.bound_bytes_per_s, v});
      }
      class_of[h.id] = int(c);
    }
  // The (rank q, resource ρ) pairs of (h): ρ on q's H2D route and on no other rank's.
  struct LanePair {
    int rank, res;
    double coeff;  // a_qρ
  };
  std::vector<LanePair> lane_pairs;
  if (single_lanes)
    for (int q = 0; q < ranks; ++q)
      if (h2d_route[q])
        for (auto [res, coeff] : *h2d_route[q])
          if (std::abs(lanes_on[std::size_t(res)] - coeff) <= 1e-12 * coeff) lane_pairs.push_back({q, res, coeff});
  // Per (pair, group): B_j (the group's bytes on ρ), x_hi (the most its flows on ρ carry together),
  // a'_j (its flows' time alone), and per class of the pair's rank: u (the most a copy moves while
  // the group's flows on ρ run) and p = 1 − X_ov / x_hi (X_ov: the most the group's flows on ρ
  // carry beside that copy). Groups with the same kind and buffer have the same flows: cached.
  struct GroupOnPair {
    double bytes = 0, x_hi = 0, alone_flows_s = 0;
    std::vector<double> u, p;
  };
  std::map<std::tuple<int, int, double>, GroupOnPair> group_on_pair;  // (pair, kind, bytes)
  auto group_on = [&](int pair, const PlanOp& op, const std::vector<FlowSpec>& flows) -> const GroupOnPair& {
    const LanePair& lp = lane_pairs[std::size_t(pair)];
    const std::tuple<int, int, double> key{pair, op.stage >= 0 ? int(plan.stage_of(op).collective) : -1, op.bytes};
    auto it = group_on_pair.find(key);
    if (it != group_on_pair.end()) return it->second;
    GroupOnPair& g = group_on_pair[key];
    const int rho = lp.res;
    const double c_hi = solver.capacity(rho);
    // D_r: Σ coefficients of the flows that may cross r at once beside this group: every copy
    // lane on r and the group's own flows.
    std::map<int, double> d;
    for (const FlowSpec& f : flows)
      for (auto [res, coeff] : *f.route) d[res] += coeff;
    auto denominator = [&](int res) {
      auto e = d.find(res);
      return lanes_on[std::size_t(res)] + (e == d.end() ? 0.0 : e->second);
    };
    // G: the least one of its flows on ρ carries there (a_kρ·x_k). Weighted filling gives flow k at
    // least w_k·C_r / Σ_{flows on r} a·w ≥ w_k·C_r / D_r (every weight ≤ 1: copies 1, SM reads less).
    double guaranteed_group = kInf;
    for (const FlowSpec& f : flows) {
      double a = 0;
      for (auto [res, coeff] : *f.route)
        if (res == rho) a += coeff;
      if (!(a > 0)) continue;
      g.bytes += a * f.bytes;
      double fastest = f.bound_bytes_per_s > 0 ? f.bound_bytes_per_s : kInf, level = fastest;
      for (auto [res, coeff] : *f.route) {
        fastest = std::min(fastest, solver.capacity(res) / coeff);
        level = std::min(level, (res == rho ? c_hi : capacity_lo(res)) / denominator(res));
      }
      g.x_hi += a * fastest;
      // The denominators D_r count coefficients: the argument needs every weight ≤ 1 (routes.cpp).
      if (!(f.weight > 0 && f.weight <= 1)) throw std::logic_error("step_bound: a flow weight outside (0, 1]");
      guaranteed_group = std::min(guaranteed_group, a * f.weight * level);
    }
    g.x_hi = std::min(g.x_hi, c_hi);
    if (!(g.bytes > 0) || !(g.x_hi > 0)) {
      g.bytes = 0;  // nothing of it crosses ρ (or nothing can): not in H
      return g;
    }
    g.alone_flows_s = min_duration_s(op) - node.collective_latency_s;
    for (const CopyClass& cl : classes[std::size_t(lp.rank)]) {
      double level = cl.cap_bytes_per_s;  // the least the copy moves beside the group
      for (auto [res, coeff] : topology.h2d_route(lp.rank)) level = std::min(level, (res == rho ? c_hi : capacity_lo(res)) / denominator(res));
      const double x_ov = std::min(g.x_hi, c_hi - lp.coeff * level);
      g.u.push_back(std::min(cl.v_bytes_per_s, (c_hi - guaranteed_group) / lp.coeff));
      g.p.push_back(std::clamp(1.0 - x_ov / g.x_hi, 0.0, 1.0));
    }
    return g;
  };
  std::vector<int> chain_groups;  // r*'s critical chain's collective groups of step s
  std::vector<char> on_chain(static_cast<std::size_t>(group_end), 0);  // by group id

  // (h) for the candidate whose dist and anchor are given: the largest over the (rank, resource)
  // pairs, 0 where it has nothing to add (derivation in sim/bound.hpp (h); symbols as there).
  struct Good {  // an item of the fractional knapsack G(η): per second of room in H
    double e, k, room_s;
  };
  std::vector<Good> goods;
  std::vector<double> etas, class_bytes, u, p;
  auto chain_lane_term_s = [&](const std::vector<double>& dist, int anchor) -> double {
    // r*'s critical chain: back from the last compute op with the largest dist, each op through
    // the dependency that sets its dist, to the anchor (or, for one step, an op with none). Its
    // length is dist of its end (the same additions); its collective groups of step s are J.
    int end_op = -1;
    for (int q = 0; q < ranks; ++q)
      if (end_op < 0 || dist[std::size_t(last_compute[q])] > dist[std::size_t(end_op)]) end_op = last_compute[q];
    if (end_op < 0 || dist[std::size_t(end_op)] == -kInf) return 0.0;
    const double chain_s = dist[std::size_t(end_op)];
    chain_groups.clear();
    for (int i = end_op; i >= 0 && i != anchor;) {
      const PlanOp& op = plan.ops[std::size_t(i)];
      if (op.kind == OpKind::collective && op.step == s && !on_chain[std::size_t(op.collective_group)]) {
        on_chain[std::size_t(op.collective_group)] = 1;
        chain_groups.push_back(op.collective_group);
      }
      int prev = -1;
      for (int d : op.deps)
        if (d >= 0 && d >= anchor && dist[std::size_t(d)] != -kInf && (prev < 0 || dist[std::size_t(d)] > dist[std::size_t(prev)]))
          prev = d;
      i = prev;
    }
    for (int g : chain_groups) on_chain[std::size_t(g)] = 0;
    double term = 0;
    for (int pair = 0; pair < int(lane_pairs.size()); ++pair) {
      const int q = lane_pairs[std::size_t(pair)].rank;
      const std::vector<CopyClass>& cl = classes[std::size_t(q)];
      // The window's copies of rank q (they wait for the anchor and precede a compute op of step
      // s): their bytes per class W_c and their count n.
      class_bytes.assign(cl.size(), 0.0);
      int n = 0;
      for (const H2dOp& h : h2d_ops[std::size_t(q)])
        if (dist[h.id] != -kInf && tail[h.id] != -kInf) class_bytes[std::size_t(class_of[h.id])] += h.bytes, ++n;
      if (n == 0) continue;
      // The chain's groups with bytes on ρ: H0 = Σ B_j / x_hi, A = Σ a'_j, and per class the
      // largest u and the least p over them.
      double h0_s = 0, alone_s_sum = 0;
      u.assign(cl.size(), 0.0), p.assign(cl.size(), 1.0);
      for (int g : chain_groups) {
        const std::size_t k = std::size_t(group_index[std::size_t(g)]);
        const GroupOnPair& gp = group_on(pair, plan.ops[std::size_t(member_ids[std::size_t(member_begin[k])])], *flows_of_group[k]);
        if (!(gp.bytes > 0)) continue;
        h0_s += gp.bytes / gp.x_hi, alone_s_sum += gp.alone_flows_s;
        for (std::size_t k = 0; k < cl.size(); ++k) u[k] = std::max(u[k], gp.u[k]), p[k] = std::min(p[k], gp.p[k]);
      }
      const double sigma_s = alone_s_sum - h0_s;
      double lane_full_s = h0_s + n * node.h2d_latency_s;  // L
      for (std::size_t k = 0; k < cl.size(); ++k) lane_full_s += class_bytes[k] / cl[k].v_bytes_per_s;
      // Goods: the latencies (e = 1, k = 0) and each class's overlap with the chain's groups.
      goods.clear();
      if (h0_s > 0) {
        goods.push_back({1.0, 0.0, n * node.h2d_latency_s});
        for (std::size_t k = 0; k < cl.size(); ++k)
          if (class_bytes[k] > 0 && p[k] < 1 && u[k] > 0)
            goods.push_back({(u[k] / cl[k].v_bytes_per_s - p[k]) / (1 - p[k]), p[k] / (1 - p[k]),
                             (1 - p[k]) * class_bytes[k] / u[k]});
      }
      // η: 0, where a good's value e − η·k crosses 0, and where two goods' values cross (the
      // breakpoints of G; between them the bound is linear-fractional in η, so monotone). Every η
      // gives a bound: with more than 16 goods (copy caps of many values) the crossings of two
      // goods are skipped, which can only lower the term.
      etas.assign(1, 0.0);
      for (std::size_t a = 0; a < goods.size(); ++a) {
        if (goods[a].k > 0 && goods[a].e > 0) etas.push_back(goods[a].e / goods[a].k);
        for (std::size_t b2 = a + 1; goods.size() <= 16 && b2 < goods.size(); ++b2)
          if (goods[a].k != goods[b2].k) {
            const double eta = (goods[a].e - goods[b2].e) / (goods[a].k - goods[b2].k);
            if (eta > 0) etas.push_back(eta);
          }
      }
      for (double eta : etas) {
        // G(η): the room H0 filled with the goods of largest positive value first.
        std::sort(goods.begin(), goods.end(),
                  [eta](const Good& x, const Good& y) { return x.e - eta * x.k > y.e - eta * y.k; });
        double room_s = h0_s, gain_s = 0;
        for (const Good& gd : goods) {
          const double value = gd.e - eta * gd.k;
          if (!(value > 0) || !(room_s > 0)) break;
          const double take_s = std::min(room_s, gd.room_s);
          gain_s += value * take_s, room_s -= take_s;
        }
        term = std::max(term, (lane_full_s + eta * (chain_s - sigma_s) - gain_s) / (1 + eta));
      }
    }
    return term;
  };

  // r* (the rank whose step s−1 ends last, at E(s−1)) is unknown: the bound is the smallest over
  // the ranks of what each would imply. Without a step s−1 (one step) every rank starts at 0.
  struct Item {
    double release_s, tail_s, work_bytes;
  };
  struct Side {  // an Item of a direction pair ((f)), on the reverse direction or not
    double release_s, tail_s, work_bytes;
    bool reverse;
  };
  std::vector<Side> sides;
  const int candidates = s > 0 ? ranks : 1;
  StepBound b;
  b.bound_step_time_s = kInf;
  std::vector<double> dist(static_cast<std::size_t>(op_count));
  std::vector<std::vector<Item>> items(static_cast<std::size_t>(resources));
  std::vector<double> volume_bytes(static_cast<std::size_t>(resources)), volume_s(static_cast<std::size_t>(resources));
  // Per resource, for the shortcut below: the largest release and tail of its items and Σ |work|.
  std::vector<double> max_release_s(static_cast<std::size_t>(resources)), max_tail_s(static_cast<std::size_t>(resources)),
      abs_work_bytes(static_cast<std::size_t>(resources));
  std::vector<double> link_t(static_cast<std::size_t>(resources));  // (b)/(d)/(e) of a resource, where evaluated
  // 0: items as built; 1: (e) evaluated (sorted by release, then by tail); 2: sorted so without (e)'s scans.
  std::vector<char> state(static_cast<std::size_t>(resources));
  std::vector<std::pair<double, int>> by_upper;  // (upper bound of link_t, resource), largest first
  // (e)'s two orders of a resource's items, from the order build_items leaves them in: by release
  // (descending) into items_by_release, and by tail (descending) in place, the order (f) relies on;
  // with `scan`, also (e)'s scans, returning the term. Each order is total over the fields read
  // (release, tail, work), so the sorted list is unique: sort_by_runs (sim/sort_runs.hpp) leaves
  // what std::sort would, and a list sorted without the scans is the one (e) would have left. It
  // merges the runs the build order holds: a rank's copies in issue order have growing releases
  // and shrinking tails (each waits for the one before it on its lane), and so do the collective
  // groups' items in program order. Ties in release go by tail, descending, so that each prefix
  // the scan takes within them is a set {release ≥ τ, tail ≥ q} of (e)'s (and ties in tail by
  // release).
  std::vector<std::vector<Item>> items_by_release(static_cast<std::size_t>(resources));
  std::vector<Item> item_buffer;
  std::vector<std::size_t> run_edges;
  auto by_release = [](const Item& x, const Item& y) {
    if (x.release_s != y.release_s) return x.release_s > y.release_s;
    if (x.tail_s != y.tail_s) return x.tail_s > y.tail_s;
    return x.work_bytes > y.work_bytes;
  };
  auto by_tail = [](const Item& x, const Item& y) {
    if (x.tail_s != y.tail_s) return x.tail_s > y.tail_s;
    if (x.release_s != y.release_s) return x.release_s > y.release_s;
    return x.work_bytes > y.work_bytes;
  };
  auto sort_items_s = [&](int res, bool scan) {
    const double capacity = solver.capacity(res);
    double release_s = 0;
    std::vector<Item>& v = items[std::size_t(res)];
    std::vector<Item>& r = items_by_release[std::size_t(res)];
    r = v;
    if (v.empty()) return release_s;
    sort_by_runs(r, item_buffer, run_edges, by_release);
    double work = 0, min_tail = kInf;
    if (scan)
      for (const Item& it : r) {
        work += it.work_bytes, min_tail = std::min(min_tail, it.tail_s);
        release_s = std::max(release_s, it.release_s + work / capacity + min_tail);
      }
    sort_by_runs(v, item_buffer, run_edges, by_tail);
    work = 0;
    double min_release = kInf;
    if (scan)
      for (const Item& it : v) {
        work += it.work_bytes, min_release = std::min(min_release, it.release_s);
        release_s = std::max(release_s, min_release + work / capacity + it.tail_s);
      }
    return release_s;
  };
  struct RankItems {  // a rank's copies that are items, or a collective group's flows
    double max_release_s, max_tail_s, abs_bytes;
    bool any;
  };
  std::vector<RankItems> rank_items(static_cast<std::size_t>(ranks)), group_items(flows_of_group.size());
  std::vector<char> has_items(static_cast<std::size_t>(resources));
  // The items of resource res for the candidate whose dist is current, in the order (e) defines:
  // its ranks' copies (rank, issue order, route entry), then the groups (group order).
  auto build_items = [&](int res) {
    std::vector<Item>& v = items[std::size_t(res)];
    v.clear();
    const std::vector<RankEntry>& entries = rank_entries[std::size_t(res)];
    {  // at most every entry's rank's copies and every group entry: one allocation
      std::size_t most = group_entries[std::size_t(res)].size();
      for (const RankEntry& e : entries) most += h2d_ops[std::size_t(e.rank)].size();
      v.reserve(most);
    }
    for (std::size_t e = 0; e < entries.size();) {
      std::size_t end = e;  // a route crossing res more than once: one item per entry, per copy
      while (end < entries.size() && entries[end].rank == entries[e].rank) ++end;
      for (const H2dOp& h : h2d_ops[std::size_t(entries[e].rank)]) {
        if (dist[h.id] == -kInf || tail[h.id] == -kInf) continue;
        for (std::size_t k = e; k < end; ++k) v.push_back({dist[h.id] - h.min_s, tail[h.id], entries[k].coeff * h.bytes});
      }
      e = end;
    }
    for (const GroupEntry& e : group_entries[std::size_t(res)]) {
      const RankItems& gi = group_items[e.group];
      if (gi.any) v.push_back({gi.max_release_s, gi.max_tail_s, e.work_bytes});
    }
  };
  const bool shortcuts = !bound_exhaustive;
  bool volumes_summed = false;                           // volume_bytes holds some candidate's sums ...
  std::vector<char> summed_groups(flows_of_group.size());  // ... with these groups as items
  for (int r = 0; r < candidates; ++r) {
    if (symmetry && symmetry->representative[std::size_t(r)] != r) continue;  // its representative's terms
    // (a) dist[i]: a lower bound on op i's end after E(s−1), −∞ when i need not wait for the anchor
    // (rank r's last compute op of step s−1; for one step the run's start). Dependencies include
    // lane order, so a copy lane's copies chain one after another.
    const int anchor = anchor_of[std::size_t(r)];
    std::fill(dist.begin(), dist.end(), -kInf);
    if (anchor >= 0) dist[std::size_t(anchor)] = 0;
    for (int i = anchor + 1; i < op_count; ++i) {
      const PlanOp& op = plan.ops[i];
      double after = anchor >= 0 ? -kInf : 0.0;
      for (int d : op.deps)
        if (d >= anchor && d >= 0) after = std::max(after, dist[std::size_t(d)]);
      if (after == -kInf) continue;
      dist[std::size_t(i)] = after + min_duration_s(op);
    }
    StepBound c;
    c.copy_lane_s = copy_lane_s;
    c.critical_path_s = 0;
    for (int q = 0; q < ranks; ++q) c.critical_path_s = std::max(c.critical_path_s, dist[std::size_t(last_compute[q])]);

    // (b) and (e): the flows each resource must carry inside [E(s−1), E(s)]: every copy and
    // collective of step s that waits for the anchor and precedes a compute op of step s. A copy
    // is an item (release, tail, work) of every resource its route crosses, a collective group's
    // flows items of theirs; the items of a resource are built only where (e) or (f) reads them.
    // Per rank, over its copies that are items: the largest release and tail, Σ |bytes|.
    for (int q = 0; q < ranks; ++q) {
      RankItems& ri = rank_items[std::size_t(q)];
      ri = {-kInf, -kInf, 0.0, false};
      for (const H2dOp& h : h2d_ops[std::size_t(q)]) {
        if (dist[h.id] == -kInf || tail[h.id] == -kInf) continue;
        ri.max_release_s = std::max(ri.max_release_s, dist[h.id] - h.min_s);
        ri.max_tail_s = std::max(ri.max_tail_s, tail[h.id]);
        ri.abs_bytes += std::abs(h.bytes);
        ri.any = true;
      }
    }
    {
      for (std::size_t gi = 0; gi < groups; ++gi) {
        double release = -kInf, tail_s = -kInf;
        for (int m : members_of(gi)) {
          if (dist[std::size_t(m)] != -kInf)
            release = std::max(release, dist[std::size_t(m)] - min_duration_s(plan.ops[m]));
          tail_s = std::max(tail_s, tail[std::size_t(m)]);
        }
        const bool valid = !(release == -kInf || tail_s == -kInf);
        group_items[gi] = {release, tail_s, 0.0, valid};
      }
    }
    // The volumes: the ranks' copies less their carry, then the flows of the groups that are
    // items. They depend on the candidate only through which groups are items, so a candidate
    // with the same groups as the last one summed has the same sums (same terms, same order).
    bool same_groups = volumes_summed;
    for (std::size_t gi = 0; gi < group_items.size() && same_groups; ++gi) same_groups = summed_groups[gi] == group_items[gi].any;
    if (!same_groups || !shortcuts) {
      std::fill(volume_bytes.begin(), volume_bytes.end(), 0.0);
      for (int q = 0; q < ranks; ++q)
        if (h2d_route[q])
          for (auto [res, coeff] : *h2d_route[q]) volume_bytes[res] += coeff * h2d_after_carry[q];
      for (std::size_t gi = 0; gi < group_items.size(); ++gi) {
        summed_groups[gi] = group_items[gi].any;
        if (!group_items[gi].any) continue;
        for (const auto& [res, bytes] : uses_of(*flows_of_group[gi])) volume_bytes[res] += bytes;
      }
      volumes_summed = true;
    }
    // The candidate's bound is at least `lower` (every resource's term is at least its volume).
    double lower = std::max(c.critical_path_s, c.copy_lane_s), largest_link_s = 0;
    for (int res = 0; res < resources; ++res) {
      volume_s[std::size_t(res)] = std::max(volume_bytes[res], cumulative_bytes[res]) / solver.capacity(res);
      c.link_volume_s = std::max(c.link_volume_s, volume_s[std::size_t(res)]);
      largest_link_s = std::max(largest_link_s, volume_s[std::size_t(res)]);
    }
    lower = std::max(lower, largest_link_s);
    // Shortcut: a candidate whose bound cannot fall below the best so far is not kept (the strict
    // `<` below), so it needs no more work.
    if (shortcuts && lower >= b.bound_step_time_s) continue;
    // Per resource: whether it has items, their largest release and tail, and Σ |work|.
    std::fill(state.begin(), state.end(), 0);
    for (int res = 0; res < resources; ++res) {
      const std::size_t k = std::size_t(res);
      double max_rel = -kInf, max_tail = -kInf, abs_work = 0;
      bool any = false;
      for (const RankEntry& e : rank_entries[k]) {
        const RankItems& ri = rank_items[std::size_t(e.rank)];
        if (!ri.any) continue;
        max_rel = std::max(max_rel, ri.max_release_s), max_tail = std::max(max_tail, ri.max_tail_s);
        abs_work += std::abs(e.coeff) * ri.abs_bytes, any = true;
      }
      for (const GroupEntry& e : group_entries[k]) {
        const RankItems& gi = group_items[e.group];
        if (!gi.any) continue;
        max_rel = std::max(max_rel, gi.max_release_s), max_tail = std::max(max_tail, gi.max_tail_s);
        abs_work += std::abs(e.work_bytes), any = true;
      }
      has_items[k] = any, max_release_s[k] = max_rel, max_tail_s[k] = max_tail, abs_work_bytes[k] = abs_work;
    }
    // (e) A link direction is one machine that flows share: the flows released at or after τ
    // (their earliest start after E(s−1), from (a)) all cross after τ, and each is followed by
    // at least its tail before E(s). So step_time ≥ τ + Σ work / C + min tail over that set, and
    // symmetrically for the flows whose tail is at least q (Jackson's preemptive one-machine
    // bound with release and delivery times). The resource's term is max(volume, that).
    // Shortcut: every set's value is at most max release + Σ |work| / C + max tail, so a resource
    // whose upper bound (with a 1e-9 relative margin for the rounding of the sums) is below the
    // largest term already evaluated can neither be the largest nor tie with it: link_s and
    // link_resource (the first resource, in resource order, with the largest term) are the same
    // without it. Resources are evaluated largest upper bound first.
    by_upper.clear();
    for (int res = 0; res < resources; ++res) {
      const std::size_t k = std::size_t(res);
      if (!has_items[k]) continue;
      const double work_s = abs_work_bytes[k] / solver.capacity(res);
      const double upper = max_release_s[k] + work_s + max_tail_s[k];
      const double margin = 1e-9 * (std::abs(max_release_s[k]) + work_s + std::abs(max_tail_s[k]));
      const double bound = std::max(volume_s[k], upper + margin);
      by_upper.push_back({std::isnan(bound) ? kInf : bound, res});
    }
    if (shortcuts)
      std::sort(by_upper.begin(), by_upper.end(),
                [](const auto& x, const auto& y) { return x.first > y.first || (x.first == y.first && x.second < y.second); });
    bool lost = false;
    for (const auto& [upper, res] : by_upper) {
      if (shortcuts && !(upper >= largest_link_s)) break;  // every resource left is below the largest
      if (shortcuts && std::max(lower, largest_link_s) >= b.bound_step_time_s) {
        lost = true;  // the candidate's bound is at least the best so far: not kept
        break;
      }
      build_items(res);
      const double t = std::max(volume_s[std::size_t(res)], sort_items_s(res, true));
      link_t[std::size_t(res)] = t;
      state[std::size_t(res)] = 1;
      largest_link_s = std::max(largest_link_s, t);
    }
    if (lost) continue;
    for (int res = 0; res < resources; ++res) {
      const std::size_t k = std::size_t(res);
      // Not evaluated: no items (its term is its volume) or below the largest (cannot be picked).
      const double t = state[k] == 1 ? link_t[k] : !has_items[k] ? std::max(volume_s[k], 0.0) : -kInf;
      if (t > c.link_s) c.link_s = t, c.link_resource = solver.resource_name(res);
    }
    // (f) Duplex form of (b), (d) and (e): a duplex-switched direction ρ runs at its under-duplex
    // capacity while its reverse ρ̄ carries a flow too (the executor's rule, sim/topology.hpp), so
    // the bytes both must carry over an interval take at least duplex_link_s of it.
    std::vector<int> scan_pairs;  // directions whose pair has flows of (e) on both sides
    for (int k = 0; k < int(topology.link_directions().size()); ++k) {
      const LinkDirection& d = topology.link_directions()[std::size_t(k)];
      if (!(d.under_duplex_bytes_per_s > 0) || d.reverse < 0) continue;
      const LinkDirection& rev = topology.link_directions()[std::size_t(d.reverse)];
      // Over [E(s−1), E(s)] ((b)'s volumes) and over [0, E(s)] ((d)'s totals, less E(s−1)).
      double t = pair_lp_s(d, rev, volume_bytes[d.resource], volume_bytes[rev.resource]);
      if (!cumulative_raw_bytes.empty())
        t = std::max(t, pair_lp_s(d, rev, cumulative_raw_bytes[d.resource], cumulative_raw_bytes[rev.resource]) -
                            previous_step_end_s);
      c.link_duplex_s = std::max(c.link_duplex_s, t);
      if (t > c.link_s) c.link_s = t, c.link_resource = solver.resource_name(d.resource) + "+" + solver.resource_name(rev.resource);
      if (has_items[std::size_t(d.resource)] && has_items[std::size_t(rev.resource)]) scan_pairs.push_back(k);  // else (e) is as tight
    }
    // (e)'s sets on both directions: the flows of either released at or after τ cross inside
    // [τ, E(s) − their least tail], and likewise the flows whose tail is at least q after their
    // earliest release; so step_time ≥ τ + duplex_link_s(their bytes) + least tail. Only for a
    // candidate r* that may still give the smallest bound (the terms only raise it).
    if (std::max({c.critical_path_s, c.link_s, c.copy_lane_s}) < b.bound_step_time_s)
      for (int k : scan_pairs) {
        const LinkDirection& d = topology.link_directions()[std::size_t(k)];
        const LinkDirection& rev = topology.link_directions()[std::size_t(d.reverse)];
        // Both lists are sorted by tail, descending, by (e)'s sorts (run here where (e) skipped
        // the resource): merged in that order.
        for (int res : {d.resource, rev.resource})
          if (state[std::size_t(res)] == 0) build_items(res), sort_items_s(res, false), state[std::size_t(res)] = 2;
        sides.clear();
        std::size_t i0 = 0, i1 = 0;
        const std::vector<Item>&v0 = items[d.resource], &v1 = items[rev.resource];
        while (i0 < v0.size() || i1 < v1.size()) {
          if (i1 >= v1.size() || (i0 < v0.size() && v0[i0].tail_s >= v1[i1].tail_s))
            sides.push_back({v0[i0].release_s, v0[i0].tail_s, v0[i0].work_bytes, false}), ++i0;
          else
            sides.push_back({v1[i1].release_s, v1[i1].tail_s, v1[i1].work_bytes, true}), ++i1;
        }
        double t = 0, work[2] = {0, 0}, min_release = kInf;
        // duplex_link_s is at most its value at a = 0, W/C + W̄/C̄ (here within 1e-12 of it, by
        // reciprocals): a value that with it, plus a 1e-9 relative margin for the rounding of the
        // sums, stays below t cannot raise t, and duplex_link_s is not evaluated for it.
        const double inv_c = 1.0 / d.capacity_bytes_per_s, inv_c_rev = 1.0 / rev.capacity_bytes_per_s;
        auto may_raise = [&](double release_s, double tail_s) {
          const double most_s = (std::max(work[0], 0.0) * inv_c + std::max(work[1], 0.0) * inv_c_rev) * (1 + 1e-12);
          return !(release_s + most_s + tail_s + 1e-9 * (std::abs(release_s) + most_s + std::abs(tail_s)) < t);
        };
        for (const Side& it : sides) {
          work[it.reverse] += it.work_bytes, min_release = std::min(min_release, it.release_s);
          if (may_raise(min_release, it.tail_s)) t = std::max(t, min_release + pair_lp_s(d, rev, work[0], work[1]) + it.tail_s);
        }
        // The same flows by release (descending; ties by tail, then ρ's first, then by work): the
        // two directions' lists in that order, merged.
        sides.clear();
        const std::vector<Item>&r0 = items_by_release[d.resource], &r1 = items_by_release[rev.resource];
        for (i0 = 0, i1 = 0; i0 < r0.size() || i1 < r1.size();) {
          if (i1 >= r1.size() || (i0 < r0.size() && (r0[i0].release_s != r1[i1].release_s ? r0[i0].release_s > r1[i1].release_s
                                                     : r0[i0].tail_s != r1[i1].tail_s     ? r0[i0].tail_s > r1[i1].tail_s
                                                                                          : true)))
            sides.push_back({r0[i0].release_s, r0[i0].tail_s, r0[i0].work_bytes, false}), ++i0;
          else
            sides.push_back({r1[i1].release_s, r1[i1].tail_s, r1[i1].work_bytes, true}), ++i1;
        }
        work[0] = work[1] = 0;
        double min_tail = kInf;
        for (const Side& it : sides) {
          work[it.reverse] += it.work_bytes, min_tail = std::min(min_tail, it.tail_s);
          if (may_raise(it.release_s, min_tail)) t = std::max(t, it.release_s + pair_lp_s(d, rev, work[0], work[1]) + min_tail);
        }
        c.link_duplex_s = std::max(c.link_duplex_s, t);
        if (t > c.link_s) c.link_s = t, c.link_resource = solver.resource_name(d.resource) + "+" + solver.resource_name(rev.resource);
      }
    // (h) The copy lane coupled with the critical chain through the executor's max-min sharing:
    // for each (rank q, resource ρ) pair, the least T any multiplier η gives (sim/bound.hpp (h)).
    if (!lane_pairs.empty() && std::max({c.critical_path_s, c.link_s, c.copy_lane_s}) < b.bound_step_time_s)
      c.chain_lane_s = chain_lane_term_s(dist, anchor);
    c.bound_step_time_s = std::max({c.critical_path_s, c.link_s, c.copy_lane_s, c.chain_lane_s});
    if (c.bound_step_time_s < b.bound_step_time_s) b = c;
  }
  b.binding = b.bound_step_time_s == b.critical_path_s ? "critical-path"
              : b.bound_step_time_s == b.link_s        ? "link"
              : b.bound_step_time_s == b.copy_lane_s   ? "copy-lane"
                                                       : "chain-lane";
  return b;
}

}  // namespace chunkflow
