// Validation of the simulator against measured runs; definitions in sim/validate.hpp.
#include "sim/validate.hpp"

#include "model/json_file.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "model/calibration.hpp"
#include "model/harness_ops.hpp"
#include "model/node.hpp"
#include "model/error.hpp"
#include "model/limits.hpp"
#include "runtime/policy.hpp"
#include "sim/executor.hpp"

namespace chunkflow {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string canonical(const std::string& p) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(fs::path(p), ec);
  return ec ? p : c.string();
}

/// The value of `key` in the scenario object, its "workload" sub-object, or the summary's top level.
const json* lookup(const json& summary, const std::string& key) {
  const json& s = summary["scenario"];
  if (s.contains(key) && !s[key].is_object()) return &s[key];
  if (s.contains("workload") && s["workload"].is_object() && s["workload"].contains(key)) return &s["workload"][key];
  if (summary.contains(key) && !summary[key].is_object()) return &summary[key];
  return nullptr;
}

MeasuredRun read_run(const json& j, const std::string& path) {
  MeasuredRun r;
  r.summary_path = path;
  r.measured_step_time_s = j["step_time_s"].get<double>();
  if (!(r.measured_step_time_s > 0) || !std::isfinite(r.measured_step_time_s))
    throw InputError(path, "/step_time_s", "expected a positive number of seconds, got " + j["step_time_s"].dump());
  const json& s = j["scenario"];
  auto where = [&](const std::string& key) {
    return (s.contains(key) ? "/scenario/" : s.contains("workload") && s["workload"].contains(key) ? "/scenario/workload/" : "/") + key;
  };
  auto str = [&](const std::string& key) -> std::optional<std::string> {
    const json* v = lookup(j, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw InputError(path, where(key), "expected a string, got " + v->dump());
    return v->get<std::string>();
  };
  auto integer = [&](const std::string& key) -> std::optional<int64_t> {
    const json* v = lookup(j, key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) throw InputError(path, where(key), "expected an integer, got " + v->dump());
    return v->get<int64_t>();
  };
  ScenarioOptions& o = r.options;
  if (auto file = str("file"); file && !file->empty() && fs::exists(*file)) o.scenario_file = *file;
  if (auto cal = str("calibration_file"); cal && !cal->empty()) {
    // The calibration the run was planned with: the recorded path; else, when the summary records
    // the file's digest (chunkflow-hw run --calibration, measured on another machine), a file of that
    // name and digest in the summary's folder or one above it (first-contact.sh keeps it beside runs/).
    const std::optional<std::string> digest = str("calibration_fnv1a64");
    auto same = [&](const fs::path& f) { return fs::is_regular_file(f) && (!digest || file_fnv1a64(f.string()) == *digest); };
    if (same(*cal)) {
      r.plan_calibration_file = *cal;
    } else if (digest) {
      for (fs::path dir = fs::absolute(path).parent_path(); !dir.empty(); dir = dir.parent_path()) {
        if (same(dir / fs::path(*cal).filename())) {
          r.plan_calibration_file = (dir / fs::path(*cal).filename()).string();
          break;
        }
        if (dir == dir.parent_path()) break;
      }
    }
  }
  if (s.contains("node") && s["node"].is_object() && s["node"].contains("id") && s["node"]["id"].is_string() &&
      s["node"].contains("peak_flop_per_s")) {
    // The whole node as simulate --json records it: the plan's node.
    const json& nj = s["node"];
    NodeSpec n = node(nj["id"].get<std::string>(), "/scenario/node/id");
    auto num = [&](const char* key, double& field) {
      if (!nj.contains(key)) return;
      if (!nj[key].is_number()) throw InputError(path, std::string("/scenario/node/") + key, "expected a number, got " + nj[key].dump());
      field = nj[key].get<double>();
    };
    num("peak_flop_per_s", n.peak_flop_per_s);
    num("hbm_bytes_per_s", n.hbm_bytes_per_s);
    num("gpu_memory_bytes", n.gpu_memory_bytes);
    num("gemm_efficiency", n.gemm_efficiency);
    num("attention_efficiency", n.attention_efficiency);
    num("compute_launch_s", n.compute_launch_s);
    num("copy_engine_bytes_per_s", n.copy_engine_bytes_per_s);
    num("h2d_latency_s", n.h2d_latency_s);
    num("collective_flow_bytes_per_s", n.collective_flow_bytes_per_s);
    num("collective_latency_s", n.collective_latency_s);
    num("compute_slowdown_h2d", n.compute_slowdown_h2d);
    num("compute_slowdown_collective", n.compute_slowdown_collective);
    if (nj.contains("links") && nj["links"].is_array() && nj["links"].size() == n.links.size())
      for (std::size_t i = 0; i < n.links.size(); ++i) {
        const json& l = nj["links"][i];
        for (auto [key, field] : {std::pair{"a_to_b_bytes_per_s", &LinkSpec::a_to_b_bytes_per_s},
                                  std::pair{"b_to_a_bytes_per_s", &LinkSpec::b_to_a_bytes_per_s},
                                  std::pair{"duplex_bytes_per_s", &LinkSpec::duplex_bytes_per_s}})
          if (l.contains(key) && l[key].is_number()) n.links[i].*field = l[key].get<double>();
      }
    validate(n, path, "/scenario/node");
    r.plan_node = n;
  }
  if (j.contains("plan") && j["plan"].is_object() && j["plan"].contains("ops") && j["plan"]["ops"].is_number_integer())
    r.plan_ops = j["plan"]["ops"].get<int64_t>();
  else if (j.contains("ops") && j["ops"].is_number_integer())
    r.plan_ops = j["ops"].get<int64_t>();
  if (j.contains("plan") && j["plan"].is_object()) r.plan_fnv1a64 = string_member_or(j["plan"], "fnv1a64");
  if (r.plan_fnv1a64.empty()) r.plan_fnv1a64 = string_member_or(j, "plan_fnv1a64");
  if (s.contains("node")) {
    if (s["node"].is_string()) o.node = s["node"].get<std::string>();
    else if (s["node"].is_object() && s["node"].contains("id") && s["node"]["id"].is_string()) o.node = s["node"]["id"].get<std::string>();
    else throw InputError(path, "/scenario/node", "expected a node id or an object with \"id\", got " + s["node"].dump());
  }
  o.model = str("model");
  o.height = integer("height");
  o.width = integer("width");
  o.frames = integer("frames");
  o.batch = integer("batch");
  // The parallel layout (issue 9 §3), in the names chunkflow-hw summaries (its /scenario, since
  // b0ba906) and simulate --json (/scenario/workload) write. A summary without them predates the
  // layouts and ran Ulysses only: ring 1, TP 1, no FSDP, whatever its scenario file says; its CFG
  // is then the scenario's (the model's default for a run without a file).
  auto degree = [&](const std::string& key) -> std::optional<int> {
    const std::optional<int64_t> v = integer(key);
    if (!v) return std::nullopt;
    check_range(double(*v), "/workload/" + key, path, where(key));  // [1, 64] ranks, as a scenario file's
    return int(*v);
  };
  if (auto u = degree("ulysses_degree")) o.ulysses = *u;
  o.ring = degree("ring_degree").value_or(1);
  o.tp = degree("tp_degree").value_or(1);
  o.fsdp = false;
  if (const json* f = lookup(j, "fsdp")) {
    if (!f->is_boolean()) throw InputError(path, where("fsdp"), "expected true or false, got " + f->dump());
    o.fsdp = f->get<bool>();
  }
  if (auto c = str("cfg")) {
    (void)cfg_mode_from(*c, path, where("cfg"));  // expected none, sequential, parallel or auto
    o.cfg = *c;
  }
  // simulate --json records the attention kernel it priced and whether the stack was compiled.
  if (auto a = str("attention")) {
    (void)attention_kernel_from(*a, path, where("attention"));
    o.attention = *a;
  }
  if (const json* h = lookup(j, "harness_ops")) {
    if (!h->is_boolean()) throw InputError(path, where("harness_ops"), "expected true or false, got " + h->dump());
    o.harness_ops = h->get<bool>();
  }
  if (const json* c = lookup(j, "compile")) {
    if (!c->is_boolean()) throw InputError(path, where("compile"), "expected true or false, got " + c->dump());
    o.compile = c->get<bool>();
  }
  o.policy = str("policy");
  if (const json* c = lookup(j, "chunk_bytes")) {
    if (!c->is_number() || !(c->get<double>() >= 0)) throw InputError(path, where("chunk_bytes"), "expected a number of bytes, got " + c->dump());
    if (c->get<double>() > 0) o.chunk_mib = c->get<double>() / kMiB;
  }
  // simulate --json records the fraction asked for as resident_fraction_requested (re-plan with it)
  // and the fraction reached as resident_fraction; harness summaries have only resident_fraction.
  const json* requested = lookup(j, "resident_fraction_requested");
  if (const json* rf = requested ? requested : lookup(j, "resident_fraction")) {
    if (rf->is_string()) o.resident_fraction = rf->get<std::string>();
    else if (rf->is_number()) {
      // The shortest text that reads back as the same double (0.2, not 0.20000000000000001): the
      // re-plan gets the exact fraction and the table prints what the run asked for.
      char buf[32];
      const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, rf->get<double>());
      o.resident_fraction = std::string(buf, r.ptr);
    } else
      throw InputError(path, where(requested ? "resident_fraction_requested" : "resident_fraction"),
                       "expected a number or \"auto\", got " + rf->dump());
    // simulate --json records the resolved fraction and whether it was auto.
    if (j.contains("resident_fraction_auto") && j["resident_fraction_auto"].is_boolean() && j["resident_fraction_auto"].get<bool>())
      o.resident_fraction = "auto";
  }
  if (auto l = integer("lookahead")) o.lookahead = int(*l);
  // The memory budget the plan was sized to (simulate --json and chunkflow-hw record bytes; 0 or
  // absent: none), so a budgeted run is re-planned to the same budget.
  if (const json* b = lookup(j, "memory_budget_bytes")) {
    if (!b->is_number() || !(b->get<double>() >= 0) || !std::isfinite(b->get<double>()))
      throw InputError(path, where("memory_budget_bytes"), "expected a non-negative number of bytes (0: no budget), got " + b->dump());
    if (b->get<double>() > 0) o.memory_budget_gib = b->get<double>() / kGiB;
  }
  // Forwards simulated: "simulated_steps" (simulate --json since issue 9 §3), "steps" (chunkflow-hw runs).
  if (auto st = integer("simulated_steps")) o.steps = int(*st);
  else if (auto st = integer("steps")) o.steps = int(*st);
  r.scenario_name = str("name").value_or(fs::path(path).stem().string());
  r.policy = o.policy.value_or("(scenario)");
  const fs::path trace = fs::path(path).parent_path() / (fs::path(path).stem().string() + ".trace.json");
  if (fs::exists(trace)) r.trace_path = trace.string();
  r.device = fs::path(path).parent_path().filename().string();
  if (j.contains("context") && j["context"].is_object() && j["context"].contains("tool") && j["context"]["tool"].is_string())
    r.harness = j["context"]["tool"].get<std::string>() == "chunkflow-hw";
  if (j.contains("context") && j["context"].is_object())
    for (const char* k : {"gpu_name", "device", "gpu"})
      if (j["context"].contains(k) && j["context"][k].is_string()) {
        r.device = j["context"][k].get<std::string>();
        break;
      }
  return r;
}

}  // namespace

std::vector<MeasuredRun> find_measured_runs(const std::string& dir, bool missing_ok) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (missing_ok) return {};
    throw InputError("", "--measured", "expected a folder of measured runs, got \"" + dir + "\"");
  }
  std::vector<std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file() && it->path().extension() == ".json") files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<MeasuredRun> runs;
  for (const auto& f : files) {
    if (f.size() >= 11 && f.compare(f.size() - 11, 11, ".trace.json") == 0) continue;
    if (auto run = read_measured_run(f)) runs.push_back(std::move(*run));
  }
  return runs;
}

std::optional<MeasuredRun> read_measured_run(const std::string& path) {
  const json j = read_json_file(path);
  if (!j.is_object() || !j.contains("scenario") || !j["scenario"].is_object() || !j.contains("step_time_s"))
    return std::nullopt;  // not a run summary (a microbenchmark file, a calibration, a trace)
  if (!j["step_time_s"].is_number())  // a run summary with a malformed time is an error, not "no run"
    throw InputError(path, "/step_time_s", "expected a positive number of seconds, got " + j["step_time_s"].dump());
  return read_run(j, path);
}

ValidationResult validate_runs(const std::vector<MeasuredRun>& runs, const std::string& calibration_file,
                               bool keep_timelines) {
  std::set<std::string> used_hashes, used_paths;
  if (!calibration_file.empty()) {
    const Calibration c = load_calibration(calibration_file);
    for (const auto& s : c.sources) {
      used_hashes.insert(s.fnv1a64);
      used_paths.insert(canonical(s.path));
    }
  }
  ValidationResult v;
  for (const MeasuredRun& run : runs) {
    ScenarioOptions o = run.options;
    Scenario as_run, s;
    try {
      as_run = resolve_scenario(o);  // the node the harness planned with
      o.calibration_file = calibration_file;
      s = resolve_scenario(o);       // the node the prediction runs on
    } catch (const InputError& e) {
      if (!e.file().empty() && e.file() == calibration_file) throw;
      throw InputError(run.summary_path, "/scenario", std::string("does not resolve: ") + e.what());
    }
    NodeSpec plan_node = run.plan_node ? *run.plan_node : as_run.node;
    if (!run.plan_calibration_file.empty()) {
      ScenarioOptions planned = run.options;
      planned.calibration_file = run.plan_calibration_file;
      try {
        plan_node = resolve_scenario(planned).node;
      } catch (const InputError& e) {
        throw InputError(run.summary_path, "/scenario/calibration_file", std::string("the run's calibration does not apply: ") + e.what());
      }
    }
    StepPlan plan = build_plan(s.workload, plan_node, s.policy);
    validate(plan);
    if (run.harness && !plan.workload.harness_ops) price_as_harness(plan.cost.blocks, plan.workload);
    SimOptions so;
    so.record_links = keep_timelines;
    so.record_memory = keep_timelines;
    SimResult r = simulate(plan, s.node, so);
    ValidationRow row;
    row.run = run;
    row.predicted_step_time_s = r.summary.step_time_s;
    row.error = (row.predicted_step_time_s - run.measured_step_time_s) / run.measured_step_time_s;
    row.plan_mismatch = !run.plan_fnv1a64.empty() ? run.plan_fnv1a64 != plan_fnv1a64(plan)
                                                  : run.plan_ops > 0 && run.plan_ops != int64_t(plan.ops.size());
    if (keep_timelines) row.predicted_timeline = std::move(r.timeline);
    for (const std::string& p : {run.summary_path, run.trace_path}) {
      if (p.empty()) continue;
      if (used_paths.count(canonical(p)) || (!used_hashes.empty() && used_hashes.count(file_fnv1a64(p)))) row.used_for_fitting = true;
    }
    if (!row.used_for_fitting) {
      ++v.held_out;
      v.mean_abs_error += std::abs(row.error);
      v.max_abs_error = std::max(v.max_abs_error, std::abs(row.error));
    }
    v.rows.push_back(std::move(row));
  }
  if (v.held_out > 0) v.mean_abs_error /= v.held_out;
  return v;
}

}  // namespace chunkflow
