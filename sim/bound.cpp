// The step-time lower bound; derivation in bound.hpp.
#include "sim/bound.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

#include "model/analytical.hpp"
#include "sim/flows.hpp"
#include "sim/maxmin.hpp"
#include "sim/topology.hpp"

namespace chunkflow {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

StepBound step_bound(const StepPlan& plan, const NodeSpec& node, double previous_step_end_s) {
  MaxMinSolver solver;
  const std::shared_ptr<const Topology> shared_topology = Topology::shared(node);  // memoised per node
  const Topology& topology = *shared_topology;
  topology.register_resources(solver);
  const int s = plan.info.steps - 1;
  const int ranks = plan.info.ranks;

  // Per rank: the step's ops in issue order (ids ascend within a rank's program).
  std::vector<std::vector<const PlanOp*>> ops(ranks);
  for (const PlanOp& op : plan.ops)
    if (op.step == s) ops[op.rank].push_back(&op);

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
    for (const FlowSpec& f : collective_flows(op, plan, node, topology)) {
      flows.push_back({solver.add_flow(*f.route, f.bound_bytes_per_s), f.bytes, f.route});
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

  StepBound b;
  b.critical_path_s = kInf;
  std::vector<double> resource_bytes(solver.resource_count(), 0.0);
  std::vector<int> done_groups;
  for (int r = 0; r < ranks; ++r) {
    int first_compute = -1, last_compute = -1, first_collective = -1;
    for (std::size_t i = 0; i < ops[r].size(); ++i) {
      const PlanOp& op = *ops[r][i];
      if (op.kind == OpKind::compute) {
        if (first_compute < 0) first_compute = int(i);
        last_compute = int(i);
      } else if (op.kind == OpKind::collective) {
        if (first_collective < 0 && first_compute >= 0) first_collective = int(i);
      }
    }
    if (first_compute < 0) throw std::logic_error("step_bound: the last step has no compute op on rank " + std::to_string(r));

    // (a) The longest dependency chain from E(s−1) to E(s): every op that depends, transitively, on
    // rank r's last compute op of step s−1 (the anchor, ending at E(s−1); for one step the run's
    // start) starts after it; compute ops and collectives take at least their uncontended time,
    // copies at least 0. Ops that need not wait for the anchor (FSDP's all-gathers, copies issued
    // early) add nothing unless a dependency puts them on the chain; an overlapped collective (ring
    // attention's K/V pass beside the attention) counts as the longer of the two branches.
    const int last_id = ops[r][last_compute]->id;
    int anchor = -1;
    if (s > 0)
      for (const PlanOp& op : plan.ops)
        if (op.rank == r && op.step == s - 1 && op.kind == OpKind::compute) anchor = std::max(anchor, op.id);
    std::vector<double> dist(std::size_t(last_id + 1), -kInf);  // end after E(s−1), −∞: not after the anchor
    if (anchor >= 0) dist[anchor] = 0;
    for (int i = anchor + 1; i <= last_id; ++i) {
      const PlanOp& op = plan.ops[i];
      double after = anchor >= 0 ? -kInf : 0.0;
      for (int d : op.deps)
        if (d >= anchor && d >= 0) after = std::max(after, dist[d]);
      if (after == -kInf) continue;
      const double dur = op.kind == OpKind::compute    ? (op.stage >= 0 ? stage_time_s(op) : 0.0)
                         : op.kind == OpKind::collective ? collective_alone_s(op)
                                                         : 0.0;
      dist[i] = after + dur;
    }
    b.critical_path_s = std::min(b.critical_path_s, dist[last_id]);

    // Collective bytes (once per group, from the op of the lowest rank) between two compute ops.
    if (r == 0)
      for (int i = first_compute + 1; i < last_compute; ++i) {
        const PlanOp& op = *ops[r][i];
        if (op.kind != OpKind::collective) continue;
        if (dist[op.id] == -kInf) continue;  // may run before E(s−1) (FSDP's all-gathers)
        for (const FlowSpec& f : collective_flows(op, plan, node, topology))
          for (auto [res, coeff] : *f.route) resource_bytes[res] += coeff * f.bytes;
      }

    // H2D bytes of this rank's step, less what it can hold before E(s−1).
    std::vector<char> read_early(plan.ops.size(), 0);  // h2d ops read before the first collective
    if (first_collective >= 0)
      for (int i = first_compute; i < first_collective; ++i)
        for (int d : ops[r][i]->data_deps)
          if (plan.ops[d].kind == OpKind::h2d) read_early[d] = 1;
    double h2d_bytes = 0, early_bytes = 0, min_rate = kInf;
    int h2d_ops = 0, early_ops = 0;
    const Topology::Route* route = nullptr;
    for (const PlanOp* op : ops[r]) {
      if (op->kind != OpKind::h2d) continue;
      route = h2d_flow(*op, node, topology).route;
      h2d_bytes += op->bytes;
      ++h2d_ops;
      if (read_early[op->id]) early_bytes += op->bytes, ++early_ops;
    }
    if (h2d_ops == 0) continue;
    const double carry = std::min(h2d_bytes, plan.info.slot_count * plan.info.slot_bytes + early_bytes);
    for (auto [res, coeff] : *route) {
      resource_bytes[res] += coeff * (h2d_bytes - carry);
      min_rate = std::min(min_rate, solver.capacity(res) / coeff);
    }
    min_rate = std::min(min_rate, node.copy_engine_bytes_per_s);
    const double lane = (h2d_bytes - carry) / min_rate +
                        node.h2d_latency_s * std::max(0, h2d_ops - plan.info.slot_count - early_ops);
    b.copy_lane_s = std::max(b.copy_lane_s, lane);
  }
  // (d) Cumulative form: everything of steps 0..s must cross before E(s), so
  //     step_time ≥ (bytes of steps 0..s over ρ) / C_ρ − E(s−1), and per rank
  //     step_time ≥ Σ over its H2D ops of steps 0..s of (latency + bytes / rate) − E(s−1).
  if (previous_step_end_s >= 0) {
    std::vector<double> total_bytes(solver.resource_count(), 0.0);
    std::vector<double> lane_s(ranks, 0.0);
    std::vector<int> last_compute_id(std::size_t(ranks) * plan.info.steps, -1);
    for (const PlanOp& op : plan.ops)
      if (op.kind == OpKind::compute) last_compute_id[std::size_t(op.rank) * plan.info.steps + op.step] = op.id;
    for (const PlanOp& op : plan.ops) {
      if (op.step > s) continue;
      if (op.kind == OpKind::h2d) {
        double rate = node.copy_engine_bytes_per_s;
        for (auto [res, coeff] : *h2d_flow(op, node, topology).route) {
          total_bytes[res] += coeff * op.bytes;
          rate = std::min(rate, solver.capacity(res) / coeff);
        }
        lane_s[op.rank] += node.h2d_latency_s + op.bytes / rate;
      } else if (op.kind == OpKind::collective && op.rank == 0 &&
                 op.id < last_compute_id[std::size_t(op.rank) * plan.info.steps + op.step]) {
        for (const FlowSpec& f : collective_flows(op, plan, node, topology))
          for (auto [res, coeff] : *f.route) total_bytes[res] += coeff * f.bytes;
      }
    }
    for (int res = 0; res < int(total_bytes.size()); ++res)
      resource_bytes[res] = std::max(resource_bytes[res], total_bytes[res] - previous_step_end_s * solver.capacity(res));
    for (double l : lane_s) b.copy_lane_s = std::max(b.copy_lane_s, l - previous_step_end_s);
  }
  for (int res = 0; res < int(resource_bytes.size()); ++res) {
    if (!(resource_bytes[res] > 0)) continue;
    const double t = resource_bytes[res] / solver.capacity(res);
    if (t > b.link_s) b.link_s = t, b.link_resource = solver.resource_name(res);
  }
  b.bound_step_time_s = std::max({b.critical_path_s, b.link_s, b.copy_lane_s});
  b.binding = b.bound_step_time_s == b.critical_path_s ? "critical-path"
              : b.bound_step_time_s == b.link_s        ? "link"
                                                       : "copy-lane";
  return b;
}

}  // namespace chunkflow
