// chunkflow-hw: runs a scenario's StepPlan on real GPUs, checks offloaded against no-offload
// activations bit for bit, and runs the calibration microbenchmarks (hw/README.md).
//
// Exit codes: 0 success, 1 failure (CUDA error, check mismatch), 2 input error, 3 no CUDA device,
// 4 a run aborted (CUDA/NCCL error while running, or past --deadline-s; communicators aborted).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "hw/bench.hpp"
#include "hw/executor.hpp"
#include "hw/host_data.hpp"
#include "hw/lowering.hpp"
#include "hw/report.hpp"
#include "model/architecture.hpp"
#include "model/error.hpp"
#include "model/workload.hpp"
#include "runtime/policy.hpp"
#include "runtime/scenario.hpp"

namespace {

using namespace chunkflow;
using namespace chunkflow::hw;
using ojson = nlohmann::ordered_json;

struct Common {
  ScenarioOptions scenario;
  std::string collective = "kernel";
  std::string launch = "graph";
  std::string waits = "latest";  ///< --waits: hw/lowering.hpp CrossLaneWaits
  double deadline_s = 300;
  uint64_t seed = 1;
  std::string output;  ///< summary JSON file
  bool json = false;   ///< summary JSON on stdout instead of the table
};

ProxyMode proxy_mode(const std::string& s) {
  if (s == "kernel") return ProxyMode::kernel;
  if (s == "copy-engine") return ProxyMode::copy_engine;
  throw InputError("", "--collective", "expected kernel or copy-engine, got \"" + s + "\"");
}

ExecutorOptions executor_options(const Common& o) {
  ExecutorOptions eo;
  eo.seed = o.seed;
  eo.proxy_mode = proxy_mode(o.collective);
  if (o.launch == "graph") eo.launch = LaunchMode::graph;
  else if (o.launch == "direct") eo.launch = LaunchMode::direct;
  else if (o.launch == "stream") eo.launch = LaunchMode::stream;
  else throw InputError("", "--launch", "expected graph, direct or stream, got \"" + o.launch + "\"");
  if (!(o.deadline_s > 0)) throw InputError("", "--deadline-s", "expected a number of seconds > 0");
  eo.run_deadline_s = o.deadline_s;
  return eo;
}

LoweringOptions lowering_options(const Common& o) {
  LoweringOptions lo;
  if (o.waits == "latest") lo.waits = CrossLaneWaits::latest_per_lane;
  else if (o.waits == "every") lo.waits = CrossLaneWaits::every_dep;
  else throw InputError("", "--waits", "expected latest or every, got \"" + o.waits + "\"");
  return lo;
}

std::string hex64(uint64_t x) {
  std::ostringstream s;
  s << "0x" << std::hex << std::setw(16) << std::setfill('0') << x;
  return s.str();
}

ojson plan_json(const StepPlan& plan, const Program& p) {
  ojson j;
  j["policy"] = plan.info.policy;
  j["steps"] = plan.info.steps;
  j["ranks"] = plan.info.ranks;
  j["ops"] = plan.ops.size();
  j["fnv1a64"] = plan_fnv1a64(plan);
  j["chunk_bytes"] = plan.info.chunk_bytes;
  j["resident_fraction"] = plan.info.resident_fraction;
  j["slot_count"] = plan.info.slot_count;
  j["slot_bytes"] = plan.info.slot_bytes;
  j["resident_weight_bytes"] = plan.info.resident_weight_bytes;
  j["offloaded_bytes_per_step"] = plan.info.offloaded_bytes_per_step;
  j["activation_bytes_estimate"] = plan.info.activation_bytes;
  j["gathered_linears_per_run"] = p.gathers_per_run;
  j["gathered_bytes_per_run"] = p.gather_bytes_per_run;
  return j;
}

ojson memory_json(const MemoryReport& m, int rank) {
  return ojson{{"rank", rank},
               {"resident_weight_bytes", m.resident_weight_bytes},
               {"slot_bytes", m.slot_bytes},
               {"activation_bytes", m.activation_bytes},
               {"workspace_bytes", m.workspace_bytes},
               {"allocated_bytes", m.allocated_bytes},
               {"device_used_bytes", m.device_used_bytes},
               {"peak_memory_bytes", m.peak_memory_bytes},
               {"host_pinned_bytes", m.host_pinned_bytes},
               {"host_numa_node", m.host_numa_node}};
}

/// The summary keys of a StepSummary, in the simulator's names.
std::vector<std::pair<std::string, double>> summary_values(const StepSummary& s) {
  return {{"step_time_s", s.step_time_s},         {"compute_time_s", s.compute_time_s},
          {"h2d_time_s", s.h2d_time_s},           {"comm_time_s", s.comm_time_s},
          {"collective_time_s", s.collective_time_s}, {"prefetch_stall_s", s.prefetch_stall_s},
          {"h2d_bytes", s.h2d_bytes},             {"peak_memory_bytes", s.peak_memory_bytes}};
}

Context full_context(int argc, const char* const* argv, int ranks, const Scenario* sc) {
  Context c = host_context(argc, argv);
  for (const auto& [k, v] : device_context(ranks)) c[k] = v;
  if (sc) {
    c["scenario"] = sc->name;
    c["node"] = sc->node.id;
    c["model"] = sc->workload.model;
    c["policy"] = sc->policy.policy;
  }
  return c;
}

int cmd_run(const Common& o, const std::string& trace, int warmup, int repeat, int argc, const char* const* argv) {
  if (repeat < 1) throw InputError("", "--repeat", "expected ≥ 1, got " + std::to_string(repeat));
  if (warmup < 0) throw InputError("", "--warmup", "expected ≥ 0, got " + std::to_string(warmup));
  const ExecutorOptions eo = executor_options(o);
  const Scenario sc = hw_scenario(o.scenario);
  const StepPlan plan = build_plan(sc.workload, sc.node, sc.policy);
  validate(plan);  // before execution, as the simulator does
  const Program program = lower(plan, sc.node, lowering_options(o));
  require_devices(program.ranks);
  Context ctx = full_context(argc, argv, program.ranks, &sc);
  Executor ex(program, eo);
  ctx["collective_backend"] = ex.collective_backend();
  ctx["seed"] = std::to_string(o.seed);
  ctx["launch"] = o.launch;
  ctx["cross_lane_waits"] = o.waits;
  // Hardware work queues per device (CUDA's default 8): streams beyond them share queues, and so
  // can order work the program does not (README "First measurements on an H100").
  const char* connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  ctx["cuda_device_max_connections"] = connections ? connections : "";
  for (int i = 0; i < warmup; ++i) (void)ex.run();
  std::vector<RunTiming> timings;
  bool latch_timed_out = false;
  for (int i = 0; i < repeat; ++i) {
    timings.push_back(ex.run());
    latch_timed_out |= timings.back().latch_timed_out;
  }
  // Memory after every run: the measured peak includes NCCL's and the graph's lazy allocations.
  std::vector<MemoryReport> memory;
  for (int r = 0; r < program.ranks; ++r) memory.push_back(ex.memory(r));
  std::vector<Timeline> timelines;
  std::vector<StepSummary> summaries;
  for (const auto& t : timings) {
    timelines.push_back(make_timeline(program, t, memory, ctx));
    summaries.push_back(summarize(timelines.back()));
  }
  // The run whose steady-state step time is the median stands for the whole measurement.
  std::vector<size_t> idx(static_cast<size_t>(repeat));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return summaries[a].step_time_s < summaries[b].step_time_s; });
  const size_t median_run = idx[idx.size() / 2];
  const auto activation = ex.final_activation();

  ojson j;
  j["context"] = context_json(ctx);
  j["scenario"] = scenario_json(sc);
  j["plan"] = plan_json(plan, program);
  j["collective_backend"] = ex.collective_backend();
  j["step"] = summaries[median_run].step;
  ojson spread_j;
  for (size_t k = 0; k < summary_values(summaries[0]).size(); ++k) {
    std::vector<double> v;
    for (const auto& s : summaries) v.push_back(summary_values(s)[k].second);
    const Spread sp = spread(v);
    const std::string key = summary_values(summaries[0])[k].first;
    j[key] = sp.median;
    spread_j[key] = {{"median", sp.median}, {"min", sp.min}, {"max", sp.max}};
  }
  j["spread"] = spread_j;
  j["warmup_runs"] = warmup;
  j["measured_runs"] = repeat;
  j["median_run"] = median_run;
  ojson steps = ojson::array();
  for (const auto& t : timelines) steps.push_back(step_times_s(t));
  j["step_times_s"] = steps;
  ojson mem = ojson::array();
  for (int r = 0; r < program.ranks; ++r) mem.push_back(memory_json(memory[size_t(r)], r));
  j["memory"] = mem;
  int64_t allocated = 0;
  for (const auto& m : memory) allocated = std::max(allocated, m.allocated_bytes);
  j["allocated_bytes"] = allocated;  // the harness' own cudaMallocs (peak_memory_bytes is measured)
  // Collective waits (barrier − arrival) of the median run, per rank: time a rank's comm stream
  // stood at a collective before the last peer arrived (not counted in collective_time_s).
  ojson waits = ojson::array();
  for (int r = 0; r < program.ranks; ++r) {
    double wait = 0;
    for (const auto& op : program.ops)
      if (op.rank == r) wait += timings[median_run].ops[size_t(op.id)].wait_s;
    waits.push_back({{"rank", r}, {"collective_wait_s", wait}});
  }
  j["collective_wait"] = waits;
  j["launch"] = o.launch;
  j["latch_timed_out"] = latch_timed_out;
  ojson fa = ojson::array();
  for (size_t r = 0; r < activation.size(); ++r)
    fa.push_back({{"rank", r}, {"bytes", activation[r].size()}, {"fnv1a64", hex64(fnv1a64(activation[r].data(), activation[r].size()))}});
  j["final_activation"] = fa;

  if (!trace.empty())
    write_file_atomically(trace, [&](std::ostream& out) { write_trace_with_context(timelines[median_run], out); });
  if (!o.output.empty()) write_file_atomically(o.output, [&](std::ostream& out) { out << j.dump(2) << '\n'; });
  if (o.json) {
    std::cout << j.dump(2) << '\n';
  } else {
    const auto& s = summaries[median_run];
    std::printf("%-22s %-14s %-14s %-14s\n", "quantity", "median", "min", "max");
    std::printf("%-22s %-14s %-14s %-14s\n", "", "(s or bytes)", "", "");
    for (const auto& [k, v] : summary_values(s)) {
      const auto& sp = spread_j[k];
      std::printf("%-22s %-14.6g %-14.6g %-14.6g\n", k.c_str(), sp["median"].get<double>(), sp["min"].get<double>(),
                  sp["max"].get<double>());
      (void)v;
    }
    std::printf("backend %s, %d measured runs after %d warm-up runs, device memory allocated %lld bytes%s\n",
                ex.collective_backend().c_str(), repeat, warmup, (long long)memory[0].allocated_bytes,
                latch_timed_out ? " (latch timed out: host enqueue was slower than the timeout)" : "");
  }
  return 0;
}

int cmd_check(const Common& o, int repeat, int argc, const char* const* argv) {
  if (repeat < 1) throw InputError("", "--repeat", "expected ≥ 1, got " + std::to_string(repeat));
  const ExecutorOptions eo = executor_options(o);
  const Scenario sc = hw_scenario(o.scenario);
  Scenario base = sc;
  base.policy.policy = "no-offload";
  const StepPlan plan = build_plan(sc.workload, sc.node, sc.policy);
  const StepPlan base_plan = build_plan(base.workload, base.node, base.policy);
  validate(plan);
  validate(base_plan);
  const Program program = lower(plan, sc.node, lowering_options(o));
  const Program base_program = lower(base_plan, base.node, lowering_options(o));
  require_devices(program.ranks);
  Context ctx = full_context(argc, argv, program.ranks, &sc);
  std::vector<std::vector<uint8_t>> reference;
  std::string backend;
  {
    Executor ex(base_program, eo);
    (void)ex.run();
    reference = ex.final_activation();
    backend = ex.collective_backend();
  }
  struct Row { std::string what; int rank; size_t bytes; uint64_t hash; int64_t wrong; };
  std::vector<Row> rows;
  for (size_t r = 0; r < reference.size(); ++r)
    rows.push_back({"no-offload", int(r), reference[r].size(), fnv1a64(reference[r].data(), reference[r].size()), 0});
  int64_t wrong_total = 0;
  {
    Executor ex(program, eo);
    for (int i = 0; i < repeat; ++i) {
      (void)ex.run();
      const auto act = ex.final_activation();
      for (size_t r = 0; r < act.size(); ++r) {
        const int64_t wrong = count_bf16_mismatches(act[r], r < reference.size() ? reference[r] : std::vector<uint8_t>{});
        wrong_total += wrong;
        rows.push_back({sc.policy.policy + " run " + std::to_string(i), int(r), act[r].size(),
                        fnv1a64(act[r].data(), act[r].size()), wrong});
      }
    }
  }
  const bool ok = wrong_total == 0;
  ctx["collective_backend"] = backend;
  ctx["seed"] = std::to_string(o.seed);
  ctx["cross_lane_waits"] = o.waits;
  ojson j;
  j["context"] = context_json(ctx);
  j["scenario"] = scenario_json(sc);
  ojson jr = ojson::array();
  for (const auto& r : rows)
    jr.push_back({{"run", r.what}, {"rank", r.rank}, {"bytes", r.bytes}, {"fnv1a64", hex64(r.hash)}, {"wrong", r.wrong}});
  j["activations"] = jr;
  j["wrong"] = wrong_total;
  j["bit_exact"] = ok;
  if (!o.output.empty()) write_file_atomically(o.output, [&](std::ostream& out) { out << j.dump(2) << '\n'; });
  if (o.json) {
    std::cout << j.dump(2) << '\n';
  } else {
    std::printf("%-24s %5s %14s %20s %10s\n", "run", "rank", "activation", "fnv1a64", "#wrong");
    std::printf("%-24s %5s %14s %20s %10s\n", "", "", "(bytes)", "", "(elements)");
    for (const auto& r : rows)
      std::printf("%-24s %5d %14zu %20s %10lld\n", r.what.c_str(), r.rank, r.bytes, hex64(r.hash).c_str(), (long long)r.wrong);
    std::printf("check %s: %s\n", ok ? "passed" : "FAILED",
                ok ? "offloaded final activation equals no-offload bit for bit"
                   : "offloaded final activation differs from no-offload (a compute read weights before they landed?)");
  }
  return ok ? 0 : 1;
}

int cmd_bench(const ScenarioOptions& so, const std::string& output, bool json, int warmup, int repeat, double max_mib,
              const std::vector<std::string>& only, std::vector<int64_t> tokens,
              const std::vector<double>& caps_gb_per_s, bool list, int argc, const char* const* argv) {
  if (list) {
    for (const auto& [k, d] : bench_registry()) std::printf("%-32s %s\n", k.c_str(), d.c_str());
    return 0;
  }
  const Scenario sc = hw_scenario(so);
  BenchConfig cfg;
  cfg.warmup = warmup;
  cfg.repeat = repeat;
  if (!(max_mib >= 0.004)) throw InputError("", "--max-mib", "expected ≥ 0.004 (4 KiB)");
  cfg.max_bytes = int64_t(max_mib * 1024 * 1024);
  cfg.ulysses_degree = std::max(2, sc.workload.ulysses_degree);
  cfg.only = only;
  if (!caps_gb_per_s.empty()) {
    cfg.copy_caps_bytes_per_s.clear();
    for (double c : caps_gb_per_s) {
      if (!(c >= 0) || !std::isfinite(c)) throw InputError("", "--caps-gb-per-s", "expected numbers ≥ 0 (GB/s), got " + std::to_string(c));
      cfg.copy_caps_bytes_per_s.push_back(c * 1e9);
    }
  }
  const DitArchitecture& arch = architecture(sc.workload.model);
  const ForwardCost cost = forward_cost(sc.workload);
  // GEMM shapes: every distinct (k, n) of every block kind at the token counts asked for plus the
  // scenario's own per-rank m.
  std::set<std::tuple<std::string, int64_t, int64_t, int64_t>> seen;
  for (const auto& b : cost.blocks) {
    const std::string kind = arch.block_kinds[size_t(b.kind)].name;
    for (const auto& st : b.stages) {
      if (st.stage.kind == BlockStage::Kind::linear) {
        std::vector<int64_t> ms = tokens;
        ms.push_back(st.gemm.m);
        for (int64_t m : ms)
          if (seen.insert({kind, m, st.gemm.k, st.gemm.n}).second)
            cfg.gemms.push_back({arch.id, kind, st.name, m, st.gemm.k, st.gemm.n});
      } else if (st.stage.kind == BlockStage::Kind::attention) {
        const int64_t rows = st.attention.batch * st.attention.heads;
        if (seen.insert({"attention:" + st.name, rows, st.attention.q_tokens, st.attention.kv_tokens}).second)
          cfg.attentions.push_back({arch.id, rows, st.attention.q_tokens, st.attention.kv_tokens, st.attention.head_dim});
        for (int64_t t : tokens)
          if (seen.insert({"attention:" + st.name, rows, t, t}).second)
            cfg.attentions.push_back({arch.id, rows, t, t, st.attention.head_dim});
      }
    }
  }
  require_devices(1);
  Context ctx = full_context(argc, argv, 1, &sc);
  const auto results = run_benchmarks(cfg);
  ojson j;
  j["context"] = context_json(ctx);
  j["settings"] = {{"warmup", warmup}, {"repeat", repeat}, {"min_bytes", cfg.min_bytes}, {"max_bytes", cfg.max_bytes},
                   {"ulysses_degree", cfg.ulysses_degree}, {"attention_tile_bytes", cfg.attention_tile_bytes},
                   {"copy_caps_bytes_per_s", cfg.copy_caps_bytes_per_s}, {"pace_sub_chunk_bytes", cfg.pace_sub_chunk_bytes}};
  ojson ms = ojson::array();
  for (const auto& r : results) {
    ojson m;
    m["key"] = r.key;
    m["description"] = r.description;
    m["status"] = r.status;
    if (!r.reason.empty()) m["reason"] = r.reason;
    ojson pts = ojson::array();
    for (const auto& p : r.points) {
      ojson pj;
      for (const auto& [k, v] : p.labels) pj[k] = v;
      for (const auto& [k, v] : p.numbers) pj[k] = v;
      pts.push_back(pj);
    }
    m["points"] = pts;
    ms.push_back(m);
  }
  j["measurements"] = ms;
  if (!output.empty()) write_file_atomically(output, [&](std::ostream& out) { out << j.dump(2) << '\n'; });
  if (json) {
    std::cout << j.dump(2) << '\n';
  } else {
    for (const auto& r : results) {
      std::printf("%-32s %-7s %zu points%s%s\n", r.key.c_str(), r.status.c_str(), r.points.size(),
                  r.reason.empty() ? "" : ": ", r.reason.c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"chunkflow-hw: run ChunkFlow step plans on CUDA GPUs (hw/README.md)"};
  app.require_subcommand(1);
  Common run_o, check_o;
  std::string trace;
  int warmup = 1, repeat = 3, check_repeat = 2;

  auto* run = app.add_subcommand("run", "Execute a scenario's plan and measure its timeline");
  add_scenario_options(*run, run_o.scenario, /*with_policy=*/true, /*with_steps=*/true);
  run->add_option("--trace", trace, "Chrome trace (Perfetto) of the median measured run");
  run->add_option("--output", run_o.output, "JSON summary file");
  run->add_flag("--json", run_o.json, "Print the JSON summary instead of the table");
  run->add_option("--warmup", warmup, "Untimed runs of the whole plan first")->capture_default_str();
  run->add_option("--repeat", repeat, "Measured runs of the whole plan (median, min, max)")->capture_default_str();
  run->add_option("--collective", run_o.collective, "pcie-proxy mode on one GPU: kernel | copy-engine")->capture_default_str();
  run->add_option("--seed", run_o.seed, "Seed of weights and hidden state")->capture_default_str();
  run->add_option("--launch", run_o.launch, "graph (one CUDA Graph per rank) | direct (ops behind a spin latch) | stream (ops enqueued as the GPU runs, no latch)")->capture_default_str();
  run->add_option("--waits", run_o.waits,
                 "Cross-stream event waits per op: latest (one per other stream, on its dep enqueued last) | every (one per dep)")
      ->capture_default_str();
  run->add_option("--deadline-s", run_o.deadline_s, "Abort a run (exit 4) not finished after this many seconds")->capture_default_str();

  auto* check = app.add_subcommand("check", "Compare the final activation with the no-offload run, bit for bit");
  add_scenario_options(*check, check_o.scenario, true, true);
  check->add_option("--output", check_o.output, "JSON result file");
  check->add_flag("--json", check_o.json, "Print JSON instead of the table");
  check->add_option("--repeat", check_repeat, "Offloaded runs compared")->capture_default_str();
  check->add_option("--collective", check_o.collective, "pcie-proxy mode: kernel | copy-engine")->capture_default_str();
  check->add_option("--seed", check_o.seed, "Seed of weights and hidden state")->capture_default_str();
  check->add_option("--launch", check_o.launch, "graph (one CUDA Graph per rank) | direct (ops behind a spin latch) | stream (ops enqueued as the GPU runs, no latch)")->capture_default_str();
  check->add_option("--waits", check_o.waits,
                 "Cross-stream event waits per op: latest (one per other stream, on its dep enqueued last) | every (one per dep)")
      ->capture_default_str();
  check->add_option("--deadline-s", check_o.deadline_s, "Abort a run (exit 4) not finished after this many seconds")->capture_default_str();

  ScenarioOptions bench_so;
  std::string bench_output;
  bool bench_json = false, bench_list = false;
  int bench_warmup = 3, bench_repeat = 10;
  double max_mib = 1024;
  std::vector<std::string> only;
  std::vector<int64_t> tokens{1024, 4096, 16384};
  auto* bench = app.add_subcommand("bench", "Microbenchmarks for calibration (hw/BENCH_SCHEMA.md)");
  add_scenario_options(*bench, bench_so, false, false);
  bench->add_option("--output", bench_output, "JSON file of every measured point");
  bench->add_flag("--json", bench_json, "Print the JSON instead of the table");
  bench->add_flag("--list", bench_list, "List the measurements and exit");
  bench->add_option("--only", only, "Run only these measurement keys");
  std::vector<std::string> bench_keys;
  bench->add_option("keys", bench_keys, "Measurements to run, as keys or with dashes (e.g. copy-cap); none: all");
  std::vector<double> copy_caps_gbps;
  bench->add_option("--caps-gb-per-s", copy_caps_gbps, "copy-cap: caps in GB/s (10^9 bytes/s; 0 = no cap)");
  bench->add_option("--warmup", bench_warmup, "Untimed repetitions per point")->capture_default_str();
  bench->add_option("--repeat", bench_repeat, "Timed repetitions per point")->capture_default_str();
  bench->add_option("--max-mib", max_mib, "Largest transfer in MiB")->capture_default_str();
  bench->add_option("--tokens", tokens, "Token counts (GEMM m, attention q = kv)")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    if (*run) return cmd_run(run_o, trace, warmup, repeat, argc, argv);
    if (*check) return cmd_check(check_o, check_repeat, argc, argv);
    if (*bench) {
      for (std::string k : bench_keys) {
        std::replace(k.begin(), k.end(), '-', '_');
        only.push_back(k);
      }
      return cmd_bench(bench_so, bench_output, bench_json, bench_warmup, bench_repeat, max_mib, only, tokens,
                       copy_caps_gbps, bench_list, argc, argv);
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "chunkflow-hw: error: %s\n", e.what());
    return 2;
  } catch (const NoDeviceError& e) {
    std::fprintf(stderr, "chunkflow-hw: error: %s\n", e.what());
    return 3;
  } catch (const RunAbortedError& e) {
    // The devices may still hold work that never ends: leave without running destructors.
    std::fprintf(stderr, "chunkflow-hw: run aborted: %s\n", e.what());
    std::fflush(stderr);
    std::_Exit(4);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chunkflow-hw: error: %s\n", e.what());
    return 1;
  }
  return 1;
}
