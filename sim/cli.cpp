#include "sim/cli.hpp"

#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <chunkflow_version.hpp>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "model/limits.hpp"
#include "runtime/plan_limits.hpp"
#include "runtime/scenario.hpp"
#include "sim/executor.hpp"
#include "sim/fit.hpp"
#include "sim/interrupt.hpp"
#include "sim/pareto.hpp"
#include "sim/python_process.hpp"
#include "sim/tune.hpp"
#include "sim/report.hpp"
#include "sim/sweep.hpp"
#include "traces/chrome_trace.hpp"

#ifndef CHUNKFLOW_SOURCE_DIR_FOR_SCRIPTS
#define CHUNKFLOW_SOURCE_DIR_FOR_SCRIPTS ""
#endif

namespace chunkflow {

namespace fs = std::filesystem;
using nlohmann::json;

std::string find_script(const CliContext& context, const std::string& name) {
  for (const fs::path& dir : {fs::path(CHUNKFLOW_SOURCE_DIR_FOR_SCRIPTS) / "scripts",
                             fs::path(context.program_dir) / ".." / "scripts", fs::path("scripts")}) {
    std::error_code ec;
    if (!dir.empty() && fs::exists(dir / name, ec)) return (dir / name).string();
  }
  return "";
}

namespace {

std::string gib(double bytes) { return fixed(bytes / kGiB, 2); }
std::string ms(double s) { return fixed(s * 1e3, 2); }
/// A chunk size in MiB with as many decimals as it needs ("0.25", "64").
std::string chunk_mib_text(double bytes) {
  const double mib = bytes / kMiB;
  return fixed(mib, mib == std::floor(mib) ? 0 : 2);
}

/// "yes", or "NO (<term>)": the fits column of the tables (sim/fit.hpp).
std::string fits_cell(const MemoryVerdict& v) {
  return v.fits ? "yes" : "NO (" + v.does_not_fit_reason.substr(0, v.does_not_fit_reason.find(':')) + ")";
}

/// The sweep table with a units row, and the slowdown against no-offload when it is in the rows.
std::string sweep_table(const std::vector<SweepRow>& rows) {
  double base = 0;
  for (const auto& r : rows)
    if (r.plan.policy == "no-offload") base = r.summary.step_time_s;
  std::vector<std::vector<std::string>> cells;
  for (const auto& r : rows) {
    const StepSummary& m = r.summary;
    std::string resident = fixed(r.plan.resident_fraction, 2) + (r.plan.resident_fraction_auto ? " (auto)" : "");
    cells.push_back({r.plan.policy, r.plan.policy == "chunkflow" ? chunk_mib_text(r.plan.chunk_bytes) : "-",
                     resident, ms(m.step_time_s), base > 0 ? fixed(m.step_time_s / base, 3) : "-",
                     ms(r.bound.bound_step_time_s), fixed(m.step_time_s / r.bound.bound_step_time_s, 3),
                     ms(m.prefetch_stall_s), ms(m.collective_time_s), gib(m.h2d_bytes), gib(m.peak_memory_bytes),
                     fits_cell(r.verdict)});
  }
  return format_table({"policy", "chunk", "resident", "step_time", "vs_no_offload", "bound", "vs_bound",
                       "prefetch_stall", "collective", "h2d", "peak_memory", "fits"},
                      {"", "MiB", "fraction", "ms", "x", "ms", "x", "ms", "ms", "GiB", "GiB", ""}, cells);
}

json sweep_json(const CliContext& context, const Scenario& scenario, const AnalyticalResult& a,
                const std::vector<SweepRow>& rows, int shard_index, int shard_count) {
  json j = json::object();
  j["context"] = context_block(context.command_line);
  j["scenario"] = scenario_json(scenario);
  j["analytical"] = {{"critical_flop", a.critical_flop},
                     {"block_flop", a.block_flop},
                     {"regime", a.regime},
                     {"auto_resident_fraction", a.auto_resident_fraction}};
  j["shard"] = {{"index", shard_index}, {"count", shard_count}};
  json arr = json::array();
  for (const auto& r : rows) {
    arr.push_back(sweep_row_json(r));
  }
  j["rows"] = arr;
  return j;
}

struct SweepOptions {
  ScenarioOptions scenario;
  std::string policies = "no-offload,layerwise,layerwise-comm-aware,chunkflow";
  std::string chunk_mib = "1,8,16,32,64,128,256";
  std::string resident_fractions = "auto,0,0.25,0.5,0.75,1";
  int lookahead = 1;
  int steps = 2;
  std::string shard = "0/1";
  std::string out_dir = "out";
  bool json_stdout = false;
  bool plot = true;
  int threads = 0;
  std::optional<double> memory_budget_gib;
  std::string grid;     ///< --grid FILE: the grid's axes instead of the options above (sim/cli_grid.cpp)
  bool resume = false;  ///< --resume (with --grid)
};

SweepGrid grid_from(const SweepOptions& o) {
  SweepGrid g = parse_sweep_grid(o.policies, o.chunk_mib, o.resident_fractions, o.lookahead, o.steps);
  if (o.memory_budget_gib) {
    if (!(*o.memory_budget_gib > 0) || !std::isfinite(*o.memory_budget_gib))
      throw InputError("", "--memory-budget-gib", "expected a budget > 0 GiB, got " + fixed(*o.memory_budget_gib, 3));
    g.memory_budget_bytes = *o.memory_budget_gib * kGiB;
  }
  return g;
}

/// Runs a sweep and writes its outputs; shared by `sweep` and the main job.
int do_sweep(const CliContext& context, const SweepOptions& o) {
  if (!o.grid.empty()) return run_grid_sweep(context, o.grid, o.out_dir, o.threads, o.resume);
  if (o.resume) throw InputError("", "--resume", "continues a grid sweep; give --grid FILE");
  const Scenario scenario = resolve_scenario(o.scenario);
  const SweepGrid grid = grid_from(o);
  const auto [shard_index, shard_count] = parse_shard(o.shard);
  check_range(o.threads, "--threads", "", "--threads");
  if (o.threads > 0) omp_set_num_threads(o.threads);
  const auto configs = sweep_configs(grid);
  check_grid_limits(scenario.workload, scenario.node, configs);  // plan sizes, before any is built
  const AnalyticalResult a = analyze(forward_cost(scenario.workload), scenario.node, scenario.workload);

  const std::string suffix = shard_count > 1 ? ".shard" + std::to_string(shard_index) + "of" + std::to_string(shard_count) : "";
  const std::string csv = (fs::path(o.out_dir) / ("sweep" + suffix + ".csv")).string();
  const std::string js = (fs::path(o.out_dir) / ("sweep" + suffix + ".json")).string();
  std::string png;
  // The plot's interpreter starts now and imports matplotlib while the sweep runs; it draws once
  // the CSV is written (sim/python_process.hpp), and exits without drawing if the sweep fails.
  std::optional<PythonPlot> plot;
  if (!o.out_dir.empty() && o.plot && shard_count == 1) {
    png = (fs::path(o.out_dir) / "sweep.png").string();
    if (const std::string script = find_script(context, "plot_sweep.py"); !script.empty())
      plot.emplace(script, std::vector<std::string>{csv, png});
  }

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<SweepRow> rows;
  int skipped = 0;
  try {
    rows = run_sweep(scenario, configs, shard_index, shard_count, &skipped);
  } catch (const SweepInterrupted& e) {  // print what completed; write nothing
    std::cout << "interrupted: " << e.completed() << " of " << e.total()
              << " configurations completed (below); no output file written\n\n"
              << sweep_table(e.completed_rows);
    throw;
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const json j = sweep_json(context, scenario, a, rows, shard_index, shard_count);
  if (o.json_stdout) {
    std::cout << j.dump(2) << "\n";
  } else {
    const Workload& w = scenario.workload;
    std::cout << "scenario " << scenario.name << ": " << w.model << " " << w.height << "x" << w.width << "x" << w.frames
              << ", batch " << w.batch << ", " << layout_text(w) << " on " << scenario.node.id << "\n";
    std::cout << "analytical model: per-block " << fixed(a.block_flop / 1e12, 2) << " TFLOP per rank, critical "
              << fixed(a.critical_flop / 1e12, 2) << " TFLOP -> " << a.regime << "; auto resident fraction "
              << fixed(a.auto_resident_fraction, 3) << "\n\n";
    std::cout << sweep_table(rows);
    if (skipped > 0)
      std::cout << skipped << " configuration" << (skipped == 1 ? "" : "s") << " left out: the memory budget cannot hold them\n";
  }
  if (!o.out_dir.empty()) {
    fs::create_directories(o.out_dir);
    write_file_atomic(csv, sweep_csv(scenario, rows));
    write_file_atomic(js, j.dump(2) + "\n");
    if (!png.empty()) {
      const int rc = plot ? plot->draw() : 127;
      if (const int sig = interrupt_signal())  // while drawing: the plot process was terminated
        throw Interrupted(sig, "drawing " + png + " (no image written); " + csv + " and " + js + " are complete");
      if (rc != 0) {
        std::cerr << "chunkflow: warning: no plot (scripts/plot_sweep.py with /usr/bin/python3 and matplotlib; exit "
                  << rc << "); run scripts/setup.sh\n";
        png.clear();
      }
    }
    if (!o.json_stdout)
      std::cout << "\nwrote " << csv << ", " << js << (png.empty() ? "" : ", " + png) << " (" << rows.size()
                << " configurations in " << fixed(wall_s, 3) << " s on " << omp_get_max_threads() << " threads)\n";
  }
  return 0;
}

struct ParetoOptions {
  std::vector<std::string> scenarios;
  std::string budgets = "0.3,0.5,0.7";
  std::string policies = "no-offload,layerwise,layerwise-comm-aware,chunkflow";
  std::string chunk_mib = "1,4,16,64,256";
  std::string resident_fractions = "auto,0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1";
  std::string out;
  bool json_stdout = false;
};

/// `chunkflow pareto`: issue 8 §3's table (sim/pareto.hpp) for every scenario given (default: the
/// shipped ones).
void do_pareto(const CliContext& context, const ParetoOptions& o) {
  std::vector<std::string> files = o.scenarios;
  if (files.empty()) {
    const fs::path dir = fs::path(CHUNKFLOW_SOURCE_DIR_FOR_SCRIPTS) / "scenarios";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".json") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError("", "--scenarios", "expected scenario files (none found in " + dir.string() + ")");
  }
  std::vector<double> fractions;
  {
    std::stringstream ss(o.budgets);
    std::string item;
    while (std::getline(ss, item, ',')) {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != item.size() || !(v > 0 && v <= 1))
        throw InputError("", "--budgets", "expected fractions in (0, 1] of no-offload's peak memory, got \"" + item + "\"");
      fractions.push_back(v);
    }
  }
  SweepGrid grid = parse_sweep_grid(o.policies, o.chunk_mib, o.resident_fractions, 1, SweepGrid{}.steps);
  json j = json::object();
  j["context"] = context_block(context.command_line);
  json rows_json = json::array();
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> offload;
  for (const auto& p : grid.policies)
    if (p != "no-offload") offload.push_back(p);
  for (const auto& file : files) {
    ScenarioOptions so;
    so.scenario_file = file;
    const Scenario s = resolve_scenario(so);
    const ParetoScenario r = pareto(s, grid, fractions);
    for (const ParetoCell& c : r.cells) {
      json row = {{"scenario", r.scenario},
                  {"budget_fraction", c.budget_fraction},
                  {"memory_budget_bytes", c.budget_bytes},
                  {"no_offload", sweep_row_json(r.no_offload)},
                  {"speedup_over_best_baseline", c.speedup_over_best_baseline}};
      std::vector<std::string> line = {r.scenario, fixed(c.budget_fraction, 2), gib(c.budget_bytes),
                                       ms(r.no_offload.summary.step_time_s)};
      std::string cf_vs_bound = "-", cf_choice = "-";
      for (const auto& [name, best] : c.best) {
        row[name] = best.config_index >= 0 ? sweep_row_json(best) : json(nullptr);
        line.push_back(best.config_index >= 0 ? ms(best.summary.step_time_s) : "no fit");
        if (name == "chunkflow" && best.config_index >= 0) {
          cf_vs_bound = fixed(best.summary.step_time_s / best.bound.bound_step_time_s, 3);
          cf_choice = chunk_mib_text(best.plan.chunk_bytes) + "/" + fixed(best.plan.resident_fraction, 2);
        }
      }
      line.push_back(c.speedup_over_best_baseline > 0 ? fixed(c.speedup_over_best_baseline, 3) : "-");
      line.push_back(cf_vs_bound);
      line.push_back(cf_choice);
      cells.push_back(line);
      rows_json.push_back(row);
    }
    if (!o.json_stdout) std::cerr << "pareto: " << r.scenario << " done\n";
  }
  j["rows"] = rows_json;
  std::vector<std::string> header = {"scenario", "budget", "budget", "no-offload"};
  std::vector<std::string> units = {"", "x peak", "GiB", "ms"};
  for (const auto& p : offload) header.push_back(p), units.push_back("ms");
  for (const char* h : {"speedup", "vs_bound", "chunk/R"}) header.push_back(h);
  units.push_back("x");
  units.push_back("x");
  units.push_back("MiB/frac");
  if (o.json_stdout) std::cout << j.dump(2) << "\n";
  else std::cout << format_table(header, units, cells);
  if (!o.out.empty()) write_file_atomic(o.out, j.dump(2) + "\n");
}

}  // namespace

int run_main_job(const CliContext& context, const std::string& out_dir) {
  SweepOptions o;
  o.out_dir = out_dir;
  return do_sweep(context, o);
}

void register_simulator_commands(CLI::App& app, const CliContext& context) {
  // ---- model ------------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand("model", "Shapes, FLOPs, bytes and the first-order analytical model of a scenario");
    auto opts = std::make_shared<ScenarioOptions>();
    auto json_out = std::make_shared<bool>(false);
    add_scenario_options(*cmd, *opts, false, false);
    cmd->add_flag("--json", *json_out, "Print one JSON object");
    cmd->callback([opts, json_out, context] {
      const Scenario s = resolve_scenario(*opts);
      const ForwardCost cost = forward_cost(s.workload);
      const AnalyticalResult a = analyze(cost, s.node, s.workload);
      json j = model_json(s, cost, a);
      j["context"] = context_block(context.command_line);
      // η_comp and η_pref as fractions (the calibrated ones with --calibration).
      const double eta_comp = s.node.gemm_efficiency;
      const double eta_pref = a.h2d_bytes_per_s / s.node.host_link(0).a_to_b_bytes_per_s;
      j["analytical"]["eta_comp"] = eta_comp;
      j["analytical"]["eta_pref"] = eta_pref;
      if (*json_out) {
        std::cout << j.dump(2) << "\n";
        return;
      }
      const DitArchitecture& arch = architecture(s.workload.model);
      std::cout << arch.display_name << " (" << arch.id << "): " << arch.params_total() << " parameters, "
                << gib(cost.weight_bytes) << " GiB bf16, " << arch.block_count() << " blocks\n"
                << "workload: " << s.workload.height << "x" << s.workload.width << "x" << s.workload.frames << ", batch "
                << s.workload.batch << ", " << layout_text(s.workload) << " on " << s.node.id << ": "
                << cost.tokens.video << " video + " << cost.tokens.text << " text tokens\n"
                << "per rank and forward: " << fixed(cost.flop / 1e12, 2) << " TFLOP\n"
                << (s.calibration_file.empty() ? "node parameters: built-in defaults (no --calibration)"
                                               : "node parameters: calibrated by " + s.calibration_file)
                << "\n\n";
      std::cout << format_table(
          {"quantity", "value", "unit"}, {"", "", ""},
          {{"block FLOPs per rank (F_block)", fixed(a.block_flop / 1e12, 3), "TFLOP"},
           {"block weights (B_pref)", fixed(a.block_weight_bytes / kMiB, 1), "MiB"},
           {"collective bytes in per block", fixed(a.collective_inbound_bytes / kMiB, 1), "MiB"},
           {"T_comp per block", ms(a.compute_time_s), "ms"},
           {"T_pref per block", ms(a.prefetch_time_s), "ms"},
           {"eta_comp", fixed(eta_comp, 3), ""},
           {"eta_pref", fixed(eta_pref, 3), ""},
           {"eta_comp * P_peak", fixed(a.effective_flop_per_s / 1e12, 1), "TFLOP/s"},
           {"eta_pref * BW_h2d", fixed(a.h2d_bytes_per_s / 1e9, 1), "GB/s"},
           {"critical workload F*", fixed(a.critical_flop / 1e12, 3), "TFLOP"},
           {"hideable prefetch per block", fixed(a.hideable_bytes / kMiB, 1), "MiB"},
           {"regime", a.regime, ""},
           {"auto resident fraction", fixed(a.auto_resident_fraction, 3), ""}});
    });
  }
  // ---- simulate ---------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand("simulate", "Simulate one policy on one scenario");
    auto opts = std::make_shared<ScenarioOptions>();
    auto trace = std::make_shared<std::string>();
    auto json_out = std::make_shared<bool>(false);
    add_scenario_options(*cmd, *opts, true, true);
    cmd->add_option("--trace", *trace, "Write a Chrome trace (Perfetto) to this file");
    cmd->add_flag("--json", *json_out, "Print one JSON object");
    cmd->callback([opts, trace, json_out, context] {
      const Scenario s = resolve_scenario(*opts);
      const StepPlan plan = build_plan(s.workload, s.node, s.policy);
      validate(plan);
      SimOptions so;
      so.record_links = !trace->empty();
      SimResult r = simulate(plan, s.node, so);
      json j = simulate_json(s, plan, r);
      j["context"] = context_block(context.command_line);
      if (!trace->empty()) {
        r.timeline.context = {{"tool", "chunkflow"},
                              {"version", kVersion},
                              {"git_revision", kGitRevision},
                              {"command_line", context.command_line},
                              {"source", "simulator"},
                              {"scenario", s.name}};
        std::ostringstream out;
        write_chrome_trace(r.timeline, out);
        write_file_atomic(*trace, out.str());
      }
      if (*json_out) {
        std::cout << j.dump(2) << "\n";
        return;
      }
      const StepSummary& m = r.summary;
      const MemoryVerdict verdict = memory_verdict(plan, s.node, m.peak_memory_bytes);
      std::cout << s.name << ": " << plan.info.policy << ", chunk " << fixed(plan.info.chunk_bytes / kMiB, 1)
                << " MiB, resident fraction " << fixed(plan.info.resident_fraction, 3)
                << (plan.info.resident_fraction_auto ? " (auto)" : "") << ", lookahead " << plan.info.lookahead << "\n\n"
                << format_table({"step_time", "bound", "vs_bound", "compute", "prefetch_stall", "collective", "h2d_busy",
                                 "h2d", "peak_memory", "fits"},
                                {"ms", "ms", "x", "ms", "ms", "ms", "ms", "GiB", "GiB", ""},
                                {{ms(m.step_time_s), ms(r.bound.bound_step_time_s),
                                  fixed(m.step_time_s / r.bound.bound_step_time_s, 3), ms(m.compute_time_s),
                                  ms(m.prefetch_stall_s), ms(m.collective_time_s), ms(m.h2d_time_s), gib(m.h2d_bytes),
                                  gib(m.peak_memory_bytes), fits_cell(verdict)}})
                << "bound: " << r.bound.binding << " (critical path " << ms(r.bound.critical_path_s) << " ms, link "
                << ms(r.bound.link_s) << " ms" << (r.bound.link_resource.empty() ? "" : " on " + r.bound.link_resource)
                << ", copy lane " << ms(r.bound.copy_lane_s) << " ms, chain-lane " << ms(r.bound.chain_lane_s) << " ms)\n";
      if (plan.info.policy != "no-offload")
        std::cout << "plan: residency " << plan.info.residency << ", " << plan.info.slot_count << " slots of "
                  << fixed(plan.info.slot_bytes / kMiB, 2) << " MiB"
                  << (plan.info.memory_budget_bytes > 0 ? ", budget " + gib(plan.info.memory_budget_bytes) + " GiB" : "")
                  << (plan.info.policy == "chunkflow"
                          ? ", all-to-all windows of the step: " + std::to_string(plan.info.windows_yield) + " yield, " +
                                std::to_string(plan.info.windows_share) + " share (cap " +
                                fixed(plan.info.share_cap_bytes_per_s / 1e9, 1) + " GB/s), " +
                                std::to_string(plan.info.windows_ignore) + " ignore; planner's estimate " +
                                ms(plan.info.estimated_step_time_s) + " ms"
                          : "")
                  << "\n";
      std::cout << "generation: " << plan.info.denoising_steps << " denoising steps x " << plan.info.forwards_per_step
                << " forward" << (plan.info.forwards_per_step == 1 ? "" : "s") << " per step (cfg " << plan.info.cfg
                << ") x step time = denoise time " << fixed(denoise_time_s(s.workload, m.step_time_s), 2) << " s; + text encode "
                << fixed(plan.info.text_encode_time_s, 2) << " s + VAE decode " << fixed(plan.info.vae_decode_time_s, 2)
                << " s = generation time "
                << fixed(plan.info.text_encode_time_s + denoise_time_s(s.workload, m.step_time_s) + plan.info.vae_decode_time_s, 2)
                << " s\n";
      std::cout << (verdict.fits ? "fits: peak memory " + gib(m.peak_memory_bytes) + " GiB <= usable " +
                                       gib(verdict.usable_bytes) + " GiB per GPU\n"
                                 : "DOES NOT FIT: " + verdict.does_not_fit_reason + "\n");
      if (!trace->empty()) std::cout << "\nwrote " << *trace << "\n";
    });
  }
  // ---- sweep ------------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand("sweep", "Simulate policies over chunk sizes and resident fractions (every core)");
    auto o = std::make_shared<SweepOptions>();
    add_scenario_options(*cmd, o->scenario, false, false);
    cmd->add_option("--policies", o->policies, "Comma-separated policies")->capture_default_str();
    cmd->add_option("--chunk-mib-list", o->chunk_mib, "Comma-separated chunk sizes in MiB (chunkflow)")->capture_default_str();
    cmd->add_option("--resident-fractions", o->resident_fractions, "Comma-separated fractions in [0, 1] or auto")
        ->capture_default_str();
    cmd->add_option("--lookahead", o->lookahead,
                    "Prefetch lookahead, " + range_text("--lookahead") + " and at most the model's block count")
        ->capture_default_str();
    cmd->add_option("--simulated-steps", o->steps,
                    "Forwards simulated per configuration, [2, 1000], at most 2·10^6 ops in all")
        ->capture_default_str();
    cmd->add_option("--shard", o->shard, "I/N: run configurations k with k mod N == I (array jobs)")->capture_default_str();
    cmd->add_option("--out", o->out_dir, "Output folder (sweep.csv, sweep.json, sweep.png)")->capture_default_str();
    cmd->add_option("--threads", o->threads, "OpenMP threads (0 = every core), " + range_text("--threads"));
    cmd->add_option("--memory-budget-gib", o->memory_budget_gib,
                    "Per-GPU memory budget in GiB every configuration is planned to (> 0)");
    cmd->add_flag("--json", o->json_stdout, "Print the JSON on stdout instead of the table");
    cmd->add_flag("!--no-plot", o->plot, "Do not draw sweep.png");
    cmd->add_option("--grid", o->grid,
                    "Grid file (scenarios/grids/README.md): the cartesian product of its axes, streamed to "
                    "OUT/grid.csv and OUT/grid.jsonl; under mpirun, sharded over the ranks");
    cmd->add_flag("--resume", o->resume, "With --grid: continue an interrupted grid sweep from OUT/grid.*.partial");
    cmd->callback([o, context, cmd] {
      if (!o->grid.empty())  // the grid file holds the axes; options that set them would be ignored
        for (const auto* opt : cmd->get_options())
          if (opt->count() > 0 && opt->get_name() != "--grid" && opt->get_name() != "--resume" && opt->get_name() != "--out" &&
              opt->get_name() != "--threads" && opt->get_name() != "--help")
            throw InputError("", opt->get_name(), "cannot be combined with --grid (the grid file sets the axes; see scenarios/grids/README.md)");
      do_sweep(context, *o);
    });
  }
  // ---- pareto -----------------------------------------------------------------------------
  {
    auto* cmd = app.add_subcommand(
        "pareto", "Policies at equal memory: per scenario and budget, the fastest plan of each policy that fits");
    auto o = std::make_shared<ParetoOptions>();
    cmd->add_option("--scenarios", o->scenarios, "Scenario files (default: every shipped scenario)");
    cmd->add_option("--budgets", o->budgets, "Budgets as fractions of no-offload's peak memory")->capture_default_str();
    cmd->add_option("--policies", o->policies, "Comma-separated policies")->capture_default_str();
    cmd->add_option("--chunk-mib-list", o->chunk_mib, "Chunk sizes in MiB (chunkflow)")->capture_default_str();
    cmd->add_option("--resident-fractions", o->resident_fractions, "Resident fractions or auto")->capture_default_str();
    cmd->add_option("--out", o->out, "Write the rows as JSON to this file");
    cmd->add_flag("--json", o->json_stdout, "Print the JSON on stdout instead of the table");
    cmd->callback([o, context] { do_pareto(context, *o); });
  }
}

}  // namespace chunkflow
