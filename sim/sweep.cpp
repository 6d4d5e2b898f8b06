#include "sim/sweep.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <cstdio>
#include <exception>
#include <mutex>
#include <sstream>

#include "model/error.hpp"
#include "sim/decision_memo.hpp"
#include "sim/interrupt.hpp"

namespace chunkflow {

std::vector<PolicyConfig> sweep_configs(const SweepGrid& grid) {
  std::vector<PolicyConfig> out;
  auto base = [&](const std::string& policy) {
    PolicyConfig p;
    p.policy = policy;
    p.lookahead = grid.lookahead;
    p.steps = grid.steps;
    p.memory_budget_bytes = grid.memory_budget_bytes;
    return p;
  };
  for (const auto& policy : grid.policies) {
    if (policy == "no-offload") {
      out.push_back(base(policy));
    } else if (is_baseline_policy(policy)) {
      for (const auto& r : grid.resident_fractions)
        if (r || grid.memory_budget_bytes) {
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

namespace {

/// Splits "a,b,c".
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double parse_positive(const std::string& text, const std::string& field, const std::string& what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(v > 0) || !std::isfinite(v))
    throw InputError("", field, "expected " + what + ", got \"" + text + "\"");
  return v;
}

std::optional<double> parse_fraction(const std::string& text, const std::string& field) {
  if (text == "auto") return std::nullopt;
  std::size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(v >= 0 && v <= 1))
    throw InputError("", field, "expected numbers in [0, 1] or auto, got \"" + text + "\"");
  return v;
}

}  // namespace

SweepGrid parse_sweep_grid(const std::string& policies, const std::string& chunk_mib,
                           const std::string& resident_fractions, int lookahead, int steps) {
  SweepGrid g;
  g.policies = split_list(policies);
  const auto known = policy_names();
  if (g.policies.empty()) throw InputError("", "--policies", "expected a comma-separated list of policies");
  for (const auto& p : g.policies)
    if (std::find(known.begin(), known.end(), p) == known.end())
      throw InputError("", "--policies", "expected names among " + [&] {
        std::string k;
        for (const auto& n : known) k += (k.empty() ? "" : ", ") + n;
        return k;
      }() + ", got \"" + p + "\"");
  g.chunk_mib.clear();
  for (const auto& c : split_list(chunk_mib)) g.chunk_mib.push_back(parse_positive(c, "--chunk-mib-list", "chunk sizes > 0 MiB"));
  if (g.chunk_mib.empty()) throw InputError("", "--chunk-mib-list", "expected a comma-separated list of sizes > 0 MiB");
  g.resident_fractions.clear();
  for (const auto& r : split_list(resident_fractions)) g.resident_fractions.push_back(parse_fraction(r, "--resident-fractions"));
  if (g.resident_fractions.empty()) throw InputError("", "--resident-fractions", "expected a comma-separated list");
  if (lookahead < 1) throw InputError("", "--lookahead", "expected an integer ≥ 1, got " + std::to_string(lookahead));
  if (steps < 2)
    throw InputError("", "--simulated-steps",
                     "expected an integer ≥ 2 (the last step is the steady state), got " + std::to_string(steps));
  g.lookahead = lookahead;
  g.steps = steps;
  return g;
}

std::pair<int, int> parse_shard(const std::string& text) {
  int i = -1, n = -1;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d/%d%c", &i, &n, &tail) != 2 || n < 1 || i < 0 || i >= n)
    throw InputError("", "--shard", "expected I/N with 0 ≤ I < N, got \"" + text + "\"");
  return {i, n};
}

std::vector<SweepRow> run_sweep(const Scenario& scenario, const std::vector<PolicyConfig>& configs, int shard_index,
                                int shard_count, int* skipped) {
  std::vector<int> mine;
  for (int k = 0; k < int(configs.size()); ++k)
    if (k % shard_count == shard_index) mine.push_back(k);
  std::vector<SweepRow> rows(mine.size());
  std::vector<std::exception_ptr> errors(mine.size());
  std::vector<char> dropped(mine.size(), 0);
  SimOptions options;
  options.record_links = false;
  options.record_memory = false;
  options.record_op_names = false;  // rows need the summary, the bound and the events only
  options.record_rows = false;
  std::vector<char> done(mine.size(), 0);
  // Configurations whose decisions are equal (sim/decision_memo.hpp: "auto" resolving to a listed
  // fraction, a fraction of 1 at every chunk size) build, validate and simulate one plan.
  // The workload and node are validated and costed once (decide_plan_validated); where either is
  // bad, every configuration's decide_plan reports it below, before the cost is read.
  ForwardCost cost;
  bool validated = false;
  try {
    validate(scenario.workload);
    validate(scenario.node);
    cost = forward_cost(scenario.workload);
    validated = true;
  } catch (...) {  // reported per configuration, by decide_plan, as before
  }
  DecisionMemo memo;
  // A configuration whose decision another thread is simulating right now (the default sweep's
  // "auto" and 0 at 1 MiB are the first two configurations, and the costliest) is set aside rather
  // than waited for, and run after the others, when its outcome is kept: no thread sits idle.
  std::mutex deferred_mutex;
  std::vector<std::pair<int, PlanDecision>> deferred;
  auto run_one = [&](int i, std::optional<PlanDecision> decided) {
    if (interrupt_signal()) return;  // SIGINT/SIGTERM: start nothing more (sim/interrupt.hpp)
    try {
      const PolicyConfig& config = configs[mine[i]];
      PlanDecision d = decided     ? std::move(*decided)
                       : validated ? decide_plan_validated(scenario.workload, scenario.node, cost, config)
                                   : decide_plan(scenario.workload, scenario.node, config);
      std::optional<DecisionRun> run;
      if (decided) {
        run = run_decision(scenario.workload, scenario.node, cost, 0, config.steps, std::move(d), options, &memo);
      } else {
        run = run_decision_unless_busy(scenario.workload, scenario.node, cost, 0, config.steps, d, options, memo);
        if (!run) {
          std::lock_guard lock(deferred_mutex);
          deferred.emplace_back(i, std::move(d));
          return;
        }
      }
      const SimOutcome& o = run->outcome;
      rows[i] = {mine[i], config, std::move(run->info), o.summary, o.verdict, o.bound, o.events, o.ops};
      done[i] = 1;
    } catch (const InputError& e) {
      if (configs[mine[i]].memory_budget_bytes && e.field() == "/policy/memory_budget_gib")
        dropped[i] = 1;  // the budget cannot hold this configuration: no row
      else
        errors[i] = std::current_exception();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
#pragma omp parallel for schedule(dynamic, 1)
  for (int i = 0; i < int(mine.size()); ++i) run_one(i, std::nullopt);
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < int(deferred.size()); ++k) run_one(deferred[k].first, std::move(deferred[k].second));
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  if (const int sig = interrupt_signal()) {
    std::vector<SweepRow> completed;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (done[i]) completed.push_back(rows[i]);
    throw SweepInterrupted(sig, std::move(completed), int(rows.size()));
  }
  std::vector<SweepRow> kept;
  kept.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!dropped[i]) kept.push_back(std::move(rows[i]));
  if (skipped) *skipped = int(rows.size() - kept.size());
  return kept;
}

std::string sweep_csv(const Scenario& scenario, const std::vector<SweepRow>& rows) {
  std::ostringstream out;
  out.precision(17);
  out << "config_index,scenario,model,node,height,width,frames,batch,ulysses_degree,policy,chunk_mib,"
         "resident_fraction,resident_fraction_auto,lookahead,step_time_s,peak_memory_bytes,compute_time_s,"
         "h2d_time_s,prefetch_stall_s,collective_time_s,h2d_bytes,offloaded_bytes_per_step,ops,events,fits,does_not_fit_reason,"
         "bound_step_time_s,vs_bound,residency,memory_budget_bytes,share_cap_bytes_per_s,denoising_steps,cfg,"
         "forwards_per_step,denoise_time_s,ring_degree,tp_degree,fsdp,text_encode_time_s,vae_decode_time_s,"
         "generation_time_s\n";
  const Workload& w = scenario.workload;
  for (const auto& r : rows) {
    const StepSummary& m = r.summary;
    out << r.config_index << ',' << scenario.name << ',' << w.model << ',' << scenario.node.id << ',' << w.height << ','
        << w.width << ',' << w.frames << ',' << w.batch << ',' << w.ulysses_degree << ',' << r.plan.policy << ','
        << (r.plan.policy == "chunkflow" ? r.plan.chunk_bytes / kMiB : 0.0) << ',' << r.plan.resident_fraction << ','
        << (r.plan.resident_fraction_auto ? 1 : 0) << ',' << r.plan.lookahead << ',' << m.step_time_s << ','
        << m.peak_memory_bytes << ',' << m.compute_time_s << ',' << m.h2d_time_s << ',' << m.prefetch_stall_s << ','
        << m.collective_time_s << ',' << m.h2d_bytes << ',' << r.plan.offloaded_bytes_per_step << ',' << r.ops << ','
        << r.events << ',' << (r.verdict.fits ? 1 : 0) << ',' << r.verdict.does_not_fit_reason << ','
        << r.bound.bound_step_time_s << ',' << m.step_time_s / r.bound.bound_step_time_s << ',' << r.plan.residency << ','
        << r.plan.memory_budget_bytes << ',' << r.plan.share_cap_bytes_per_s << ',' << r.plan.denoising_steps << ','
        << r.plan.cfg << ',' << r.plan.forwards_per_step << ','
        << double(r.plan.denoising_steps) * double(r.plan.forwards_per_step) * m.step_time_s << ',' << w.ring_degree
        << ',' << w.tp_degree << ',' << (w.fsdp ? 1 : 0) << ',' << r.plan.text_encode_time_s << ','
        << r.plan.vae_decode_time_s << ','
        << r.plan.text_encode_time_s + double(r.plan.denoising_steps) * double(r.plan.forwards_per_step) * m.step_time_s +
               r.plan.vae_decode_time_s
        << '\n';
  }
  return out.str();
}

}  // namespace chunkflow
