// `chunkflow calibrate | compare | validate | tune`: calibration from microbenchmarks, prediction
// against measurement, validation on held-out measured runs, and tuning under a memory budget.
// Computation lives in model/calibration.*, traces/compare.*, sim/validate.*, sim/tune.*; this
// file parses options and reports (console tables with a units row, JSON, PNG through scripts/).
// No output file is written unless everything before it succeeded (write_file_atomic).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chunkflow_version.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "model/analytical.hpp"
#include "model/calibration.hpp"
#include "model/error.hpp"
#include "model/json_file.hpp"
#include "model/kernel_check.hpp"
#include "model/limits.hpp"
#include "runtime/plan_limits.hpp"
#include "runtime/scenario.hpp"
#include "sim/cli.hpp"
#include "sim/interrupt.hpp"
#include "sim/python_process.hpp"
#include "sim/report.hpp"
#include "sim/sweep.hpp"
#include "sim/tune.hpp"
#include "sim/validate.hpp"
#include "sim/validate_published.hpp"
#include "traces/chrome_trace.hpp"
#include "traces/compare.hpp"

namespace chunkflow {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string pct(double fraction) { return std::isfinite(fraction) ? fixed(fraction * 100.0, 2) : "n/a"; }
std::string ms(double s) { return fixed(s * 1e3, 3); }

/// Runs scripts/<script> with args; a warning (not an error) when python/matplotlib is missing.
/// Throws Interrupted when SIGINT/SIGTERM came while it drew (run_python then terminates the
/// script, which removes its temporary image): no image was written.
void plot(const CliContext& context, const std::string& script, const std::vector<std::string>& args, const std::string& png) {
  const std::string path = find_script(context, script);
  const int rc = path.empty() ? 127 : run_python(path, args);
  if (const int sig = interrupt_signal()) throw Interrupted(sig, "drawing " + png + " (no image written)");
  if (rc != 0)
    std::cerr << "chunkflow: warning: no plot " << png << " (scripts/" << script
              << " with /usr/bin/python3 and matplotlib; exit " << rc << ")\n";
}

/// Draws `png` with `script` from the JSON `j` a command produced: read from `json_out` when the
/// command wrote it there, else from a temporary file, removed afterwards (also when interrupted).
void plot_from_json(const CliContext& context, const std::string& script, const json& j, const std::string& json_out,
                    const std::string& png) {
  if (!json_out.empty()) {
    plot(context, script, {json_out, png}, png);
    return;
  }
  const std::string tmp =
      (fs::temp_directory_path() / ("chunkflow-" + fs::path(script).stem().string() + "-" + std::to_string(::getpid()) + ".json"))
          .string();
  write_file_atomic(tmp, j.dump(2) + "\n");
  std::error_code ec;
  try {
    plot(context, script, {tmp, png}, png);
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fs::remove(tmp, ec);
}

/// Reads a Chrome trace; errors become InputError naming the option and the file.
Timeline read_trace_file(const std::string& path, const std::string& option) {
  std::ifstream in(path);
  if (!in) throw InputError(path, option, "cannot open the trace file");
  try {
    return read_chrome_trace(in, path);
  } catch (const std::exception& e) {
    throw InputError("", option, e.what());
  }
}

/// The node a microbenchmark file was measured on: --node, else the files' context "node", else
/// the GPU name ("PCIe" → 2xh100-pcie, "H100" otherwise → 1xh100-sxm).
NodeSpec node_for(const std::string& option, const std::vector<MeasurementFile>& files) {
  if (!option.empty()) return node(option, "--node");
  for (const auto& f : files) {
    auto it = f.context.find("node");
    if (it != f.context.end()) return node(it->second, "--node");
  }
  for (const auto& f : files)
    for (const char* k : {"gpu_name", "gpu", "device"}) {
      auto it = f.context.find(k);
      if (it == f.context.end()) continue;
      if (it->second.find("PCIe") != std::string::npos) return node("2xh100-pcie", "--node");
      if (it->second.find("H100") != std::string::npos) return node("1xh100-sxm", "--node");
    }
  throw InputError("", "--node", "the measurement files name no node or known GPU; give --node (one of 2xh100-pcie, 1xh100-sxm)");
}

std::string fmt_param(const std::string& name, double v) {
  if (name.find("bytes_per_s") != std::string::npos) return fixed(v / 1e9, 3) + " GB/s";
  if (name.find("flop_per_s") != std::string::npos) return fixed(v / 1e12, 1) + " TFLOP/s";
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "_s") == 0) return fixed(v * 1e6, 3) + " us";
  if (name.find("bytes") != std::string::npos) return fixed(v / (1024.0 * 1024.0), 3) + " MiB";
  return fixed(v, 4);
}

// ---- calibrate -----------------------------------------------------------------------------------

struct CalibrateOptions {
  std::vector<std::string> measurements;
  std::vector<std::string> fitted_runs;
  std::string out;
  std::string node;
  std::string plot_png;
  bool json_stdout = false;
};

void do_calibrate(const CliContext& context, const CalibrateOptions& o) {
  std::vector<MeasurementFile> files;
  for (const auto& p : o.measurements) files.push_back(read_measurement_file(p));
  const NodeSpec n = node_for(o.node, files);
  Calibration c = fit_calibration(files, n);
  // Measured runs declared as used while fitting: listed in sources, so validate holds them out.
  for (const auto& p : o.fitted_runs) {
    if (!read_measured_run(p))
      throw InputError(p, "/step_time_s", "--fitted-runs expects measured run summaries ({\"scenario\", \"step_time_s\"})");
    c.sources.push_back({p, file_fnv1a64(p), {{"kind", "measured run used for fitting"}}});
  }
  json ctx = context_block(context.command_line);
  ctx["source"] = "calibration";
  const std::string text = calibration_to_json(c, ctx.dump());
  write_file_atomic(o.out, text);
  if (o.json_stdout) {
    std::cout << text;
  } else {
    std::cout << "calibration of node " << n.id << " from " << files.size() << " measurement file(s)\n\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& f : c.fits) {
      std::string params;
      for (const auto& [k, v] : f.parameters) params += (params.empty() ? "" : ", ") + k + " " + fmt_param(k, v);
      rows.push_back({f.name, f.measurement_key, std::to_string(f.points.size()),
                      std::isfinite(f.r_squared) ? fixed(f.r_squared, 5) : "n/a", pct(f.max_relative_residual), params});
    }
    std::cout << format_table({"fit", "measurement", "points", "R^2", "max_rel_residual", "parameters"},
                              {"", "", "", "", "%", ""}, rows);
    for (const auto& s : c.skipped) std::cout << "skipped: " << s << "\n";
    std::cout << "\nwrote " << o.out << "\n";
  }
  if (!o.plot_png.empty()) plot(context, "plot_calibration.py", {o.out, o.plot_png}, o.plot_png);
}

// ---- compare -------------------------------------------------------------------------------------

struct CompareOptions {
  std::string predicted, measured, plot_png;
  bool json_stdout = false;
};

void do_compare(const CliContext& context, const CompareOptions& o) {
  const Timeline p = read_trace_file(o.predicted, "--predicted");
  const Timeline m = read_trace_file(o.measured, "--measured");
  Comparison c;
  try {
    c = compare(p, m);
  } catch (const std::invalid_argument& e) {
    throw InputError("", "--predicted/--measured", e.what());
  }
  if (o.json_stdout) {
    json j = json::parse(comparison_to_json(c));
    j["context"] = context_block(context.command_line);
    j["predicted_file"] = o.predicted;
    j["measured_file"] = o.measured;
    // Flat headline errors beside comparison_to_json's nested figures (signed, relative to measured).
    auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
    j["step_time_error"] = num(c.step_time_error);
    j["lane_busy_time_error"] = {{"compute", num(c.compute_time_error)}, {"h2d", num(c.h2d_time_error)},
                                 {"comm", num(c.comm_time_error)}};
    j["prefetch_stall_error"] = num(relative_error(c.prefetch_stall_predicted_s, c.prefetch_stall_measured_s));
    j["collective_time_error"] = num(relative_error(c.collective_time_predicted_s, c.collective_time_measured_s));
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "prediction " << o.predicted << " against measurement " << o.measured << " (step " << c.step << ", "
              << c.matched_ops << " ops matched by id, " << c.unmatched_predicted << " only predicted, "
              << c.unmatched_measured << " only measured)\n\n";
    std::cout << format_table(
        {"quantity", "predicted", "measured", "error"}, {"", "ms", "ms", "%"},
        {{"step time", ms(c.step_time_predicted_s), ms(c.step_time_measured_s), pct(c.step_time_error)},
         {"compute lane busy", ms(c.compute_time_predicted_s), ms(c.compute_time_measured_s), pct(c.compute_time_error)},
         {"h2d lane busy", ms(c.h2d_time_predicted_s), ms(c.h2d_time_measured_s), pct(c.h2d_time_error)},
         {"comm lane busy", ms(c.comm_time_predicted_s), ms(c.comm_time_measured_s), pct(c.comm_time_error)},
         {"prefetch stall", ms(c.prefetch_stall_predicted_s), ms(c.prefetch_stall_measured_s),
          pct(relative_error(c.prefetch_stall_predicted_s, c.prefetch_stall_measured_s))},
         {"collective time", ms(c.collective_time_predicted_s), ms(c.collective_time_measured_s),
          pct(relative_error(c.collective_time_predicted_s, c.collective_time_measured_s))}});
    std::cout << "\nper-op duration |error| over " << c.step_ops << " ops of the step: median " << pct(c.op_error_median)
              << " %, p90 " << pct(c.op_error_p90) << " %, max " << pct(c.op_error_max) << " %\n";
    // Compute ops that started > 20 µs after their lane and their deps were done (traces/compare.hpp).
    std::cout << "compute ops waiting on nothing they depend on: predicted " << c.waits_predicted.ops << " ("
              << ms(c.waits_predicted.total_s) << " ms), measured " << c.waits_measured.ops << " ("
              << ms(c.waits_measured.total_s) << " ms; " << c.waits_measured.after_unrelated_copy
              << " start as an unrelated H2D copy ends)\n\n";
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : c.worst)
      rows.push_back({std::to_string(w.op_id), w.name, to_string(w.lane), std::to_string(w.rank), ms(w.predicted_s),
                      ms(w.measured_s), ms(w.error_s), pct(w.relative_error)});
    std::cout << "ops that differ most\n"
              << format_table({"op_id", "name", "lane", "rank", "predicted", "measured", "error", "error"},
                              {"", "", "", "", "ms", "ms", "ms", "%"}, rows);
  }
  if (!o.plot_png.empty()) plot(context, "plot_timeline.py", {o.predicted, o.measured, o.plot_png}, o.plot_png);
}

// ---- validate ------------------------------------------------------------------------------------

struct ValidateOptions {
  std::string measured_dir, calibration, plot_png, json_out;
  std::string traces_dir;  ///< --traces: each run's predicted Chrome trace
  bool json_stdout = false;
  // --published (issue 10 §4)
  bool published = false;
  std::string published_dir;
  std::vector<std::string> ids, calibrate_on;
  std::string calibration_out = "out/published-calibration.json";
  bool plot = true;
  // --kernels: scripts/measure_kernels.py's timings against the kernel model
  std::string kernels_file, node;
};

json validation_json(const CliContext& context, const ValidateOptions& o, const ValidationResult& v) {
  json j = json::object();
  j["context"] = context_block(context.command_line);
  j["measured_dir"] = o.measured_dir;
  j["calibration_file"] = o.calibration;
  j["held_out_runs"] = v.held_out;
  j["mean_abs_error"] = v.mean_abs_error;
  j["max_abs_error"] = v.max_abs_error;
  json rows = json::array();
  for (const auto& r : v.rows)
    rows.push_back({{"summary_file", r.run.summary_path},
                    {"trace_file", r.run.trace_path},
                    {"device", r.run.device},
                    {"scenario", r.run.scenario_name},
                    {"policy", r.run.policy},
                    {"chunk_mib", r.run.options.chunk_mib.value_or(0.0)},
                    {"resident_fraction", r.run.options.resident_fraction.value_or("")},
                    {"measured_step_time_s", r.run.measured_step_time_s},
                    {"predicted_step_time_s", r.predicted_step_time_s},
                    {"error", r.error},
                    {"used_for_fitting", r.used_for_fitting},
                    {"plan_mismatch", r.plan_mismatch}});
  j["runs"] = rows;
  return j;
}

std::vector<std::string> split_ids(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    std::stringstream ss(item);
    std::string id;
    while (std::getline(ss, id, ','))
      if (!id.empty()) out.push_back(id);
  }
  return out;
}

std::string human(double v, const std::string& unit) {
  if (unit == "bytes") return fixed(v / 1e9, 2) + " GB";
  if (unit == "bytes_per_s") return fixed(v / 1e9, 2) + " GB/s";
  if (v < 1) return fixed(v * 1e3, 1) + " ms";
  return fixed(v, 2) + " s";
}

json stats_json(const ErrorStats& s) {
  return {{"records", s.records}, {"mean_abs_error", s.mean_abs_error}, {"max_abs_error", s.max_abs_error},
          {"worst_id", s.worst_id}};
}

void do_validate_published(const CliContext& context, const ValidateOptions& o) {
  const std::string dir = find_published_dir(o.published_dir, context.program_dir);
  const std::vector<PublishedRecord> records = load_published_records(dir);
  const std::vector<std::string> ids = split_ids(o.ids);
  std::vector<std::string> fit_ids = split_ids(o.calibrate_on);
  if (fit_ids.size() == 1 && fit_ids[0] == "auto") fit_ids = calibration_rule_ids(records);
  PublishedScales scales;
  std::vector<std::string> fitted;
  json fit_j = nullptr;
  if (!fit_ids.empty() && !o.calibration.empty())
    throw InputError("", "--calibrate-on", "expected either --calibrate-on or --calibration, not both");
  if (!fit_ids.empty()) {
    const PublishedFit fit = fit_published(records, fit_ids);
    scales = fit.scales;
    fitted = fit.fitted_ids;
    fit_j = {{"fitted_ids", fit.fitted_ids}, {"iterations", fit.iterations}, {"rms_log_residual", fit.rms_log_residual}};
    for (size_t j = 0; j < fit.values.size(); ++j)
      fit_j["scales"][fit.parameter_names[j]] = {
          {"value", fit.values[j]},
          {"relative_standard_error", std::isfinite(fit.relative_standard_error[j]) ? json(fit.relative_standard_error[j]) : json(nullptr)}};
    const Calibration c = published_calibration(fit, records);
    if (!o.calibration_out.empty()) {
      const fs::path parent = fs::path(o.calibration_out).parent_path();
      if (!parent.empty()) fs::create_directories(parent);
      write_file_atomic(o.calibration_out, calibration_to_json(c, context_block(context.command_line).dump()));
      fit_j["calibration_file"] = o.calibration_out;
    }
  } else if (!o.calibration.empty()) {
    const Calibration c = load_calibration(o.calibration);
    scales.gemm = c.gemm_efficiency_scale.value_or(1.0);
    scales.attention = c.attention_efficiency_scale.value_or(1.0);
    scales.hbm = c.hbm_efficiency_scale.value_or(1.0);
    scales.host = c.host_kernel_issue_scale.value_or(1.0);
    for (const CalibrationSource& src : c.sources)
      if (src.context.count("record")) fitted.push_back(src.context.at("record"));
  }
  const PublishedValidation v = validate_published(records, ids, scales, fitted);
  json j = json::object();
  j["context"] = context_block(context.command_line);
  j["published_dir"] = dir;
  j["calibration"] = fit_j;
  j["scales"] = {{"gemm", scales.gemm}, {"attention", scales.attention}, {"hbm", scales.hbm}, {"host", scales.host}};
  j["time_all"] = stats_json(v.time_all);
  j["time_held_out"] = stats_json(v.time_held_out);
  j["time_fitted"] = stats_json(v.time_fitted);
  j["memory"] = stats_json(v.memory);
  j["bandwidth"] = stats_json(v.other);
  json rows = json::array();
  for (const PublishedRow& r : v.rows) {
    const PublishedRecord& rec = r.record;
    rows.push_back({{"id", rec.id},
                    {"gpu", rec.gpu},
                    {"gpu_count", rec.gpu_count},
                    {"model", rec.workload.model},
                    {"measures", published_measure_name(rec.measures)},
                    {"unit", rec.unit},
                    {"published", rec.value},
                    {"predicted", r.prediction.predicted},
                    {"error", r.prediction.error},
                    {"dominant", r.prediction.dominant},
                    {"parts", r.prediction.parts},
                    {"forward_time_s", r.prediction.forward_time_s},
                    {"kernels_per_forward", r.prediction.kernels_per_forward},
                    {"used_for_fitting", r.used_for_fitting},
                    {"source", rec.source},
                    {"caveats", rec.caveats}});
  }
  j["records"] = rows;
  json series = json::array();
  for (const ScalingSeries& s : v.series) {
    json pts = json::array();
    for (const ScalingPoint& p : s.points)
      pts.push_back({{"id", p.id}, {"gpu_count", p.gpu_count}, {"published_speedup", p.published_speedup},
                     {"predicted_speedup", p.predicted_speedup}, {"error", p.error}});
    series.push_back({{"name", s.name}, {"points", pts}});
  }
  j["series"] = series;
  if (!o.json_out.empty()) write_file_atomic(o.json_out, j.dump(2) + "\n");
  if (o.json_stdout) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::vector<std::vector<std::string>> cells;
    for (const PublishedRow& r : v.rows)
      cells.push_back({r.record.id, std::to_string(r.record.gpu_count) + "x " + r.record.gpu, published_measure_name(r.record.measures),
                       human(r.record.value, r.record.unit), human(r.prediction.predicted, r.record.unit),
                       pct(r.prediction.error), r.prediction.dominant, r.used_for_fitting ? "fit" : ""});
    std::cout << "published records in " << dir << " (" << v.rows.size() << ")"
              << (fitted.empty() ? ", uncalibrated (catalogue figures and cited curves)" : ", calibrated") << "\n\n"
              << format_table({"id", "hardware", "measures", "published", "predicted", "error", "dominant", "use"},
                              {"", "", "", "", "", "%", "", ""}, cells);
    auto line = [](const char* what, const ErrorStats& s) {
      return std::string(what) + ": " + std::to_string(s.records) + " records, mean |error| " + pct(s.mean_abs_error) +
             " %, max |error| " + pct(s.max_abs_error) + " % (" + (s.worst_id.empty() ? "-" : s.worst_id) + ")\n";
    };
    std::cout << "\n" << line("time, all", v.time_all);
    if (!fitted.empty()) std::cout << line("time, fitted on", v.time_fitted) << line("time, held out", v.time_held_out);
    if (v.memory.records) std::cout << line("peak memory", v.memory);
    if (v.other.records) std::cout << line("bandwidth", v.other);
    if (!v.series.empty()) {
      std::vector<std::vector<std::string>> sc;
      for (const ScalingSeries& s : v.series)
        for (const ScalingPoint& p : s.points)
          if (p.gpu_count != s.points.front().gpu_count)
            sc.push_back({s.name, std::to_string(s.points.front().gpu_count) + "->" + std::to_string(p.gpu_count),
                          fixed(p.published_speedup, 2), fixed(p.predicted_speedup, 2), pct(p.error)});
      std::cout << "\nscaling series\n"
                << format_table({"series", "gpus", "published", "predicted", "error"}, {"", "", "x", "x", "%"}, sc);
    }
    if (fit_j.is_object()) {
      std::cout << "\nfitted scales (relative standard error):";
      for (auto it = fit_j["scales"].begin(); it != fit_j["scales"].end(); ++it)
        std::cout << " " << it.key() << " " << fixed((*it)["value"].get<double>(), 3) << " ("
                  << ((*it)["relative_standard_error"].is_number() ? pct((*it)["relative_standard_error"].get<double>()) + " %" : "unconstrained")
                  << ")";
      std::cout << "\n";
      if (fit_j.contains("calibration_file")) std::cout << "wrote " << fit_j["calibration_file"].get<std::string>() << "\n";
    }
  }
  if (o.plot && !o.plot_png.empty()) {
    const fs::path parent = fs::path(o.plot_png).parent_path();
    if (!parent.empty()) fs::create_directories(parent);
    plot_from_json(context, "plot_published.py", j, o.json_out, o.plot_png);
    if (!o.json_stdout) std::cout << "wrote " << o.plot_png << "\n";
  }
}

/// The text report of `validate --kernels`: per point, per kind, per elementwise op's rate.
void print_kernel_check(const KernelCheck& c, const json& j, const ValidateOptions& o, const NodeSpec& n) {
  auto us = [](double s) { return fixed(s * 1e6, 1); };
  std::vector<std::vector<std::string>> rows;
  for (const KernelPoint& p : c.points)
    rows.push_back({p.kind, p.shape, p.priced_as, us(p.measured_s), us(p.predicted_s), fixed(p.predicted_s / p.measured_s, 2),
                    pct(p.tolerance), p.within ? "yes" : "NO"});
  std::cout << "kernels timed on " << (c.gpu_name.empty() ? std::string("an unnamed GPU") : c.gpu_name)
            << (c.sm_count > 0 ? " (" + std::to_string(c.sm_count) + " SMs)" : std::string()) << " in " << o.kernels_file
            << ", priced on node " << n.id << (o.calibration.empty() ? "" : " with calibration " + o.calibration)
            << " + " << us(kKernelHostDispatch_s) << " us host dispatch per PyTorch call\n\n"
            << format_table({"kind", "shape", "priced as", "measured", "predicted", "ratio", "tolerance", "within"},
                            {"", "", "", "us", "us", "pred/meas", "%", ""}, rows);
  std::vector<std::vector<std::string>> kinds;
  for (const auto& [key, v] : j["by_kind"].items())
    kinds.push_back({key, std::to_string(v["points"].get<int>()), std::to_string(v["within"].get<int>()),
                     fixed(v["min_ratio"].get<double>(), 2), fixed(v["median_ratio"].get<double>(), 2),
                     fixed(v["max_ratio"].get<double>(), 2)});
  std::cout << "\nby kind (" << c.skipped << " point(s) skipped: backends without a model kernel, failed points)\n"
            << format_table({"kind", "points", "within", "min", "median", "max"}, {"", "", "", "ratio", "ratio", "ratio"}, kinds);
  if (!c.rates.empty()) {
    std::vector<std::vector<std::string>> rates;
    for (const ElementwiseRate& r : c.rates)
      rates.push_back({r.op, r.access_class, std::to_string(r.points),
                       r.measured_bytes_per_s > 0 ? fixed(r.measured_bytes_per_s / 1e12, 2) : "-",
                       fixed(r.model_bytes_per_s / 1e12, 2),
                       r.measured_bytes_per_s > 0 ? fixed(r.model_bytes_per_s / r.measured_bytes_per_s, 2) : "-",
                       us(r.intercept_s)});
    std::cout << "\nelementwise rates (least squares of time on counted bytes over the sizes)\n"
              << format_table({"op", "class", "points", "measured", "model", "model/meas", "intercept"},
                              {"", "", "", "TB/s", "TB/s", "", "us"}, rates);
  }
}

/// `validate --kernels FILE`: every timed point of scripts/measure_kernels.py's JSON priced on a node
/// (--node, else the built-in node of the file's GPU; --calibration applied) against its measured
/// time (model/kernel_check.hpp), then per kind the ratios and per elementwise op its least-squares
/// rate against the model's class rate.
void do_validate_kernels(const CliContext& context, const ValidateOptions& o) {
  if (!o.traces_dir.empty()) throw InputError("", "--traces", "expected with --measured only (kernel timings have no timeline)");
  if (!o.ids.empty() || !o.calibrate_on.empty())
    throw InputError("", o.ids.empty() ? "--calibrate-on" : "--ids", "expected with --published only");
  const json k = read_json_file(o.kernels_file, "the kernels file");
  NodeSpec n;
  if (!o.node.empty()) {
    n = node(o.node, "--node");
  } else {
    const auto [gpu_name, sm_count] = kernels_device(k, o.kernels_file);
    const std::string gpu = catalogue_gpu_for_device(gpu_name, sm_count);
    if (gpu.empty())
      throw InputError(o.kernels_file, "/context/gpu_name",
                       "\"" + gpu_name + "\"" + (sm_count > 0 ? " (" + std::to_string(sm_count) + " SMs)" : std::string()) +
                           " names no single GPU of the catalogue (model/catalogue/gpus.json); give --node (a node id or file)");
    n = kernel_check_node(gpu, "--node");
  }
  if (!o.calibration.empty()) apply_calibration(load_calibration(o.calibration), n);
  const KernelCheck c = check_kernels(k, o.kernels_file, n);
  json j = kernel_check_to_json(c);
  j["context"] = context_block(context.command_line);
  j["kernels_file"] = o.kernels_file;
  j["node"] = n.id;
  j["calibration_file"] = o.calibration;
  if (!o.json_out.empty()) write_file_atomic(o.json_out, j.dump(2) + "\n");
  if (o.json_stdout) std::cout << j.dump(2) << "\n";
  else print_kernel_check(c, j, o, n);
  if (!o.plot_png.empty()) plot_from_json(context, "plot_kernels.py", j, o.json_out, o.plot_png);
}

void do_validate(const CliContext& context, const ValidateOptions& o) {
  if (!o.kernels_file.empty()) {
    do_validate_kernels(context, o);
    return;
  }
  if (!o.node.empty()) throw InputError("", "--node", "expected with --kernels only (runs and records name their nodes)");
  if (o.published && !o.traces_dir.empty())
    throw InputError("", "--traces", "expected with --measured only (published records have no timeline)");
  if (o.published) {
    do_validate_published(context, o);
    return;
  }
  if (o.measured_dir.empty()) throw InputError("", "--measured", "expected a folder of measured runs (or --published)");
  const auto runs = find_measured_runs(o.measured_dir);
  if (!o.traces_dir.empty()) {  // one trace per summary name: refuse two runs that would share one
    std::map<std::string, std::string> by_stem;
    for (const MeasuredRun& r : runs) {
      const std::string stem = fs::path(r.summary_path).stem().string();
      if (const auto [it, fresh] = by_stem.emplace(stem, r.summary_path); !fresh)
        throw InputError("", "--traces",
                         "runs " + it->second + " and " + r.summary_path + " would both write " + stem +
                             ".predicted.trace.json; validate their folders separately");
    }
  }
  ValidationResult v = validate_runs(runs, o.calibration, !o.traces_dir.empty());
  if (!o.traces_dir.empty()) {
    // One predicted trace per run, named after its summary: the same plan and op ids as the
    // measurement, so `chunkflow compare` lines them up op for op (a plan re-built on the calibrated
    // node could differ from the one the harness ran).
    fs::create_directories(o.traces_dir);
    for (ValidationRow& r : v.rows) {
      Timeline& t = *r.predicted_timeline;
      t.context = {{"tool", "chunkflow"},      {"version", kVersion},          {"git_revision", kGitRevision},
                   {"command_line", context.command_line}, {"source", "simulator"}, {"scenario", r.run.scenario_name},
                   {"measured", r.run.summary_path}};
      std::ostringstream out;
      write_chrome_trace(t, out);
      write_file_atomic((fs::path(o.traces_dir) / (fs::path(r.run.summary_path).stem().string() + ".predicted.trace.json")).string(),
                        out.str());
      r.predicted_timeline.reset();
    }
  }
  const json j = validation_json(context, o, v);
  if (!o.json_out.empty()) write_file_atomic(o.json_out, j.dump(2) + "\n");
  if (o.json_stdout) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : v.rows)
      rows.push_back({r.run.scenario_name, r.run.policy,
                      r.run.policy == "chunkflow" && r.run.options.chunk_mib ? fixed(*r.run.options.chunk_mib, 0) : "-",
                      r.run.options.resident_fraction.value_or("-"), ms(r.run.measured_step_time_s),
                      ms(r.predicted_step_time_s), pct(r.error),
                      std::string(r.used_for_fitting ? "fit (excluded)" : "held out") + (r.plan_mismatch ? ", PLAN DIFFERS" : "")});
    std::cout << "validation of " << runs.size() << " measured run(s) in " << o.measured_dir
              << (o.calibration.empty() ? " (uncalibrated node parameters)" : " with calibration " + o.calibration) << "\n\n"
              << format_table({"scenario", "policy", "chunk", "resident", "measured", "predicted", "error", "use"},
                            {"", "", "MiB", "fraction", "ms", "ms", "%", ""}, rows)
              << "\nheld-out runs " << v.held_out << ": mean |error| " << pct(v.mean_abs_error) << " %, max |error| "
              << pct(v.max_abs_error) << " %\n";
  }
  if (!o.plot_png.empty()) plot_from_json(context, "plot_validation.py", j, o.json_out, o.plot_png);
}

// ---- tune ----------------------------------------------------------------------------------------

struct TuneOptions {
  ScenarioOptions scenario;
  double budget_gib = 0;
  std::string policies = "no-offload,layerwise,layerwise-comm-aware,chunkflow";
  std::string chunk_mib = "1,4,16,64,256";
  std::string resident_fractions = "auto,0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1";
  int lookahead = 1;
  std::string out_dir = "out";
  bool plot = true;
  bool json_stdout = false;
};

SweepGrid tune_grid(const TuneOptions& o) {
  return parse_sweep_grid(o.policies, o.chunk_mib, o.resident_fractions, o.lookahead, SweepGrid{}.steps);
}


void do_tune(const CliContext& context, const TuneOptions& o) {
  if (!(o.budget_gib > 0) || !std::isfinite(o.budget_gib))
    throw InputError("", "--memory-budget-gib", "expected a positive number of GiB, got " + fixed(o.budget_gib, 3));
  check_range(o.budget_gib, "--memory-budget-gib", "", "--memory-budget-gib");
  const Scenario s = resolve_scenario(o.scenario);
  const SweepGrid grid = tune_grid(o);
  check_grid_limits(s.workload, s.node, sweep_configs(grid));  // plan sizes, before any is built
  const TuneResult t = tune(s, grid, o.budget_gib * kGiB);
  json j = json::object();
  j["context"] = context_block(context.command_line);
  j["scenario"] = scenario_json(s);
  j["memory_budget_bytes"] = t.budget_bytes;
  j["best"] = sweep_row_json(t.candidates[t.best]);
  json frontier = json::array(), all = json::array();
  for (int i : t.frontier) {
    json r = sweep_row_json(t.candidates[i]);
    r["within_budget"] = t.candidates[i].summary.peak_memory_bytes <= t.budget_bytes;
    frontier.push_back(r);
  }
  for (const auto& c : t.candidates) {
    json r = sweep_row_json(c);
    r["within_budget"] = c.summary.peak_memory_bytes <= t.budget_bytes;
    all.push_back(r);
  }
  j["frontier"] = frontier;
  j["candidates"] = all;
  std::string js, png;
  if (!o.out_dir.empty()) {
    fs::create_directories(o.out_dir);
    js = (fs::path(o.out_dir) / "tune.json").string();
    write_file_atomic(js, j.dump(2) + "\n");
  }
  if (o.json_stdout) {
    std::cout << j.dump(2) << "\n";
  } else {
    const SweepRow& b = t.candidates[t.best];
    auto describe = [](const SweepRow& r) {
      return r.plan.policy + (r.plan.policy == "chunkflow" ? ", chunk " + fixed(r.plan.chunk_bytes / kMiB, 2) + " MiB" : "") +
             ", resident fraction " + fixed(r.plan.resident_fraction, 3) + (r.plan.resident_fraction_auto ? " (auto)" : "");
    };
    std::cout << "scenario " << s.name << " on " << s.node.id
              << (s.calibration_file.empty() ? "" : " (calibrated by " + s.calibration_file + ")") << ": "
              << t.candidates.size() << " configurations, budget " << fixed(o.budget_gib, 2) << " GiB per GPU\n"
              << "best: " << describe(b) << ": step time " << ms(b.summary.step_time_s) << " ms, peak memory "
              << fixed(b.summary.peak_memory_bytes / kGiB, 2) << " GiB\n\nPareto frontier (peak memory against step time)\n";
    std::vector<std::vector<std::string>> rows;
    for (int i : t.frontier) {
      const SweepRow& r = t.candidates[i];
      rows.push_back({fixed(r.summary.peak_memory_bytes / kGiB, 2), ms(r.summary.step_time_s), r.plan.policy,
                      r.plan.policy == "chunkflow" ? fixed(r.plan.chunk_bytes / kMiB, 2) : "-",
                      fixed(r.plan.resident_fraction, 3), r.summary.peak_memory_bytes <= t.budget_bytes ? "yes" : "no",
                      r.verdict.fits ? "yes" : "NO", i == t.best ? "<- best" : ""});
    }
    std::cout << format_table({"peak_memory", "step_time", "policy", "chunk", "resident", "in_budget", "fits_gpu", ""},
                              {"GiB", "ms", "", "MiB", "fraction", "", "", ""}, rows);
  }
  if (!js.empty() && o.plot) {
    png = (fs::path(o.out_dir) / "pareto.png").string();
    plot(context, "plot_pareto.py", {js, png}, png);
  }
  if (!o.json_stdout && !js.empty()) std::cout << "\nwrote " << js << (o.plot ? ", " + png : "") << "\n";
}

}  // namespace

void register_calibration_commands(CLI::App& app, const CliContext& context) {
  {
    auto* cmd = app.add_subcommand("calibrate", "Fit the node's efficiency factors from microbenchmark JSON (chunkflow-hw bench)");
    auto o = std::make_shared<CalibrateOptions>();
    cmd->add_option("--measurements", o->measurements, "Microbenchmark JSON files (hw/BENCH_SCHEMA.md)")->required();
    cmd->add_option("--out", o->out, "Calibration JSON to write")->required();
    cmd->add_option("--fitted-runs", o->fitted_runs,
                    "Measured run summaries used while fitting: recorded in sources, left out by validate");
    cmd->add_option("--node", o->node, "Node the measurements come from (default: from the files' context)");
    cmd->add_option("--plot", o->plot_png, "Also draw every fit to this PNG (scripts/plot_calibration.py)");
    cmd->add_flag("--json", o->json_stdout, "Print the calibration JSON instead of the table");
    cmd->callback([o, context] { do_calibrate(context, *o); });
  }
  {
    auto* cmd = app.add_subcommand("compare", "Compare a predicted Chrome trace with a measured one, op by op");
    auto o = std::make_shared<CompareOptions>();
    cmd->add_option("--predicted", o->predicted, "Chrome trace of the prediction (chunkflow simulate --trace)")->required();
    cmd->add_option("--measured", o->measured, "Chrome trace of the measurement (chunkflow-hw run --trace)")->required();
    cmd->add_option("--plot", o->plot_png, "Also draw both timelines to this PNG (scripts/plot_timeline.py)");
    cmd->add_flag("--json", o->json_stdout, "Print one JSON object");
    cmd->callback([o, context] { do_compare(context, *o); });
  }
  {
    auto* cmd = app.add_subcommand("validate",
                                   "Re-simulate every measured run of a folder (--measured), predict every published record "
                                   "(--published) or price timed kernels (--kernels), and report the error");
    auto o = std::make_shared<ValidateOptions>();
    auto* measured = cmd->add_option("--measured", o->measured_dir, "Folder of measured runs (e.g. traces/measured/<device>)");
    auto* published = cmd->add_flag("--published", o->published,
                                    "Predict the published records (traces/published) instead of measured runs");
    measured->excludes(published);
    auto* kernels = cmd->add_option("--kernels", o->kernels_file,
                                    "Kernel timings (scripts/measure_kernels.py's JSON) to price on a node and compare, point by point");
    kernels->excludes(measured)->excludes(published);
    cmd->add_option("--node", o->node,
                    "With --kernels: the node (id or file) to price on (default: the built-in node of the file's GPU)");
    cmd->add_option("--published-dir", o->published_dir, "Folder of published records (default: traces/published)");
    cmd->add_option("--ids", o->ids, "With --published: only these record ids (comma-separated or repeated)");
    cmd->add_option("--calibrate-on", o->calibrate_on,
                    "With --published: fit the model's scales on these record ids only; report held-out error apart");
    cmd->add_option("--calibration-out", o->calibration_out, "With --calibrate-on: the calibration file to write")
        ->capture_default_str();
    cmd->add_option("--calibration", o->calibration, "Calibration JSON applied to every run's node (or the published scales)");
    cmd->add_option("--out", o->json_out, "Also write the JSON to this file");
    cmd->add_option("--traces", o->traces_dir,
                    "With --measured: write each run's predicted Chrome trace to this folder as <summary>.predicted.trace.json "
                    "(the plan the run executed; input of chunkflow compare)");
    cmd->add_option("--plot", o->plot_png,
                    "Also draw predicted against measured to this PNG (--published default: out/published.png)");
    cmd->add_flag("!--no-plot", o->plot, "With --published: do not draw the plot");
    cmd->add_flag("--json", o->json_stdout, "Print one JSON object");
    cmd->callback([o, context] {
      ValidateOptions opts = *o;
      if (opts.published && opts.plot_png.empty()) opts.plot_png = "out/published.png";
      do_validate(context, opts);
    });
  }
  {
    auto* cmd = app.add_subcommand("tune", "Choose policy, chunk size and resident fraction under a per-GPU memory budget");
    auto o = std::make_shared<TuneOptions>();
    add_scenario_options(*cmd, o->scenario, false, false);
    cmd->add_option("--memory-budget-gib", o->budget_gib, "Per-GPU memory budget, " + range_text("--memory-budget-gib"))->required();
    cmd->add_option("--policies", o->policies, "Comma-separated policies")->capture_default_str();
    cmd->add_option("--chunk-mib-list", o->chunk_mib, "Comma-separated chunk sizes in MiB")->capture_default_str();
    cmd->add_option("--resident-fractions", o->resident_fractions, "Comma-separated fractions in [0, 1] or auto")
        ->capture_default_str();
    cmd->add_option("--lookahead", o->lookahead, "Prefetch lookahead in blocks")->capture_default_str();
    cmd->add_option("--out", o->out_dir, "Output folder (tune.json, pareto.png; empty: none)")->capture_default_str();
    cmd->add_flag("!--no-plot", o->plot, "Do not draw pareto.png");
    cmd->add_flag("--json", o->json_stdout, "Print the JSON instead of the table");
    cmd->callback([o, context] { do_tune(context, *o); });
  }
}

}  // namespace chunkflow
