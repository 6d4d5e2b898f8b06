#include "sim/sweep.hpp"

#include <omp.h>

#include <cstdio>
#include <exception>
#include <sstream>

#include "model/error.hpp"

namespace chunkflow {

std::vector<PolicyConfig> sweep_configs(const SweepGrid& grid) {
  std::vector<PolicyConfig> out;
  auto base = [&](const std::string& policy) {
    PolicyConfig p;
    p.policy = policy;
    p.lookahead = grid.lookahead;
    p.steps = grid.steps;
    return p;
  };
  for (const auto& policy : grid.policies) {
    if (policy == "no-offload") {
      out.push_back(base(policy));
    } else if (policy == "layerwise") {
      for (const auto& r : grid.resident_fractions)
        if (r) {
          PolicyConfig p = base(policy);
          p.resident_fraction = r;
          out.push_back(p);
        }
    } else {
      for (double c : grid.chunk_mib)
        for (const auto& r : grid.resident_fractions) {
          PolicyConfig p = base(policy);
          p.chunk_bytes = c * kMiB;
          p.resident_fraction = r;
          out.push_back(p);
        }
    }
  }
  return out;
}

std::pair<int, int> parse_shard(const std::string& text) {
  int i = -1, n = -1;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || i < 0 || i >= n)
    throw InputError("", "--shard", "expected I/N with 0 ≤ I < N, got \"" + text + "\"");
  return {i, n};
}

std::vector<SweepRow> run_sweep(const Scenario& scenario, const std::vector<PolicyConfig>& configs, int shard_index,
                                int shard_count) {
  std::vector<int> mine;
  for (int k = 0; k < int(configs.size()); ++k)
    if (k % shard_count == shard_index) mine.push_back(k);
  std::vector<SweepRow> rows(mine.size());
  std::vector<std::exception_ptr> errors(mine.size());
  SimOptions options;
  options.record_links = false;
  options.record_memory = false;
#pragma omp parallel for schedule(dynamic, 1)
  for (int i = 0; i < int(mine.size()); ++i) {
    try {
      const PolicyConfig& config = configs[mine[i]];
      const StepPlan plan = build_plan(scenario.workload, scenario.node, config);
      const SimResult r = simulate(plan, scenario.node, options);
      rows[i] = {mine[i], config, plan.info, r.summary, r.events, plan.ops.size()};
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return rows;
}

std::string sweep_csv(const Scenario& scenario, const std::vector<SweepRow>& rows) {
  std::ostringstream out;
  out.precision(17);
  out << "config_index,scenario,model,node,height,width,frames,batch,ulysses_degree,policy,chunk_mib,"
         "resident_fraction,resident_fraction_auto,lookahead,step_time_s,peak_memory_bytes,compute_time_s,"
         "h2d_time_s,prefetch_stall_s,collective_time_s,h2d_bytes,offloaded_bytes_per_step,ops,events\n";
  const Workload& w = scenario.workload;
  for (const auto& r : rows) {
    const StepSummary& m = r.summary;
    out << r.config_index << ',' << scenario.name << ',' << w.model << ',' << scenario.node.id << ',' << w.height << ','
        << w.width << ',' << w.frames << ',' << w.batch << ',' << w.ulysses_degree << ',' << r.plan.policy << ','
        << (r.plan.policy == "chunkflow" ? r.plan.chunk_bytes / kMiB : 0.0) << ',' << r.plan.resident_fraction << ','
        << (r.plan.resident_fraction_auto ? 1 : 0) << ',' << r.plan.lookahead << ',' << m.step_time_s << ','
        << m.peak_memory_bytes << ',' << m.compute_time_s << ',' << m.h2d_time_s << ',' << m.prefetch_stall_s << ','
        << m.collective_time_s << ',' << m.h2d_bytes << ',' << r.plan.offloaded_bytes_per_step << ',' << r.ops << ','
        << r.events << '\n';
  }
  return out.str();
}

}  // namespace chunkflow
