// Reporters of the hardware harness (see report.hpp).
#include "hw/report.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "chunkflow_version.hpp"
#include "model/calibration.hpp"
#include "model/workload.hpp"
#include "traces/chrome_trace.hpp"

namespace chunkflow::hw {

std::string utc_iso8601_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string command_line(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i] ? argv[i] : "";
    const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
    if (!plain) {
      std::string q = "'";
      for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      a = q + "'";
    }
    if (i) out += ' ';
    out += a;
  }
  return out;
}

Context host_context(int argc, const char* const* argv) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  return {{"tool", "chunkflow-hw"},
          {"version", kVersion},
          {"git_revision", kGitRevision},
          {"command", command_line(argc, argv)},
          {"date_utc", utc_iso8601_now()},
          {"host", host}};
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.string() + ".tmp." + std::to_string(::getpid());
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw std::runtime_error(path + ": cannot open " + tmp.string() + " for writing");
      write(out);
      out.flush();
      if (!out) throw std::runtime_error(path + ": write failed");
    }
    fs::rename(tmp, target);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
}

Spread spread(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("spread: no values");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

Timeline make_timeline(const Program& program, const RunTiming& timing, const std::vector<MemoryReport>& memory,
                       const Context& context) {
  Timeline t;
  t.source = "hardware";
  t.steps = program.steps;
  t.ranks = program.ranks;
  t.context = context;
  t.rows.reserve(program.ops.size());
  for (const auto& op : program.ops) {
    TimelineRow r;
    r.op_id = op.id;
    r.name = op.name;
    r.kind = op.kind;
    r.lane = op.lane;
    r.rank = op.rank;
    r.step = op.step;
    r.block = op.block;
    r.start_s = timing.ops.at(size_t(op.id)).start_s;
    r.end_s = timing.ops.at(size_t(op.id)).end_s;
    r.bytes = op.bytes;
    r.flop = op.flop;
    r.deps = op.data_deps;
    t.rows.push_back(std::move(r));
  }
  for (size_t rank = 0; rank < memory.size(); ++rank)
    // The measured device memory in use (cudaMemGetInfo high-water mark after setup and runs,
    // libraries included), not the harness' own allocation (MemoryReport::allocated_bytes).
    t.memory.push_back({int(rank), 0.0, double(std::max(memory[rank].peak_memory_bytes, memory[rank].allocated_bytes))});
  return t;
}

std::vector<double> step_times_s(const Timeline& timeline) {
  std::vector<double> end(size_t(std::max(timeline.steps, 0)), 0.0);
  for (const auto& r : timeline.rows)
    if (r.kind == OpKind::compute && r.step >= 0 && r.step < timeline.steps)
      end[size_t(r.step)] = std::max(end[size_t(r.step)], r.end_s);
  std::vector<double> out(end.size());
  for (size_t s = 0; s < end.size(); ++s) out[s] = end[s] - (s ? end[s - 1] : 0.0);
  return out;
}

nlohmann::ordered_json context_json(const Context& context) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : context) j[k] = v;
  return j;
}

void write_trace_with_context(const Timeline& timeline, std::ostream& out) {
  // write_chrome_trace opens the file with Timeline::context as its "context" block.
  if (timeline.context.empty()) throw std::invalid_argument("write_trace_with_context: the timeline has no context");
  write_chrome_trace(timeline, out);
}

// The scenario as the harness runs it: resolve_scenario with harness_ops, which takes the tiled
// attention and refuses another kernel naming the option or field (runtime/scenario.cpp).
Scenario hw_scenario(const ScenarioOptions& o) {
  ScenarioOptions as_run = o;
  as_run.harness_ops = true;
  return resolve_scenario(as_run);
}

nlohmann::ordered_json scenario_json(const Scenario& sc) {
  nlohmann::ordered_json j;
  j["name"] = sc.name;
  j["file"] = sc.file;
  j["node"] = sc.node.id;
  j["model"] = sc.workload.model;
  j["batch"] = sc.workload.batch;
  j["height"] = sc.workload.height;
  j["width"] = sc.workload.width;
  j["frames"] = sc.workload.frames;
  j["ulysses_degree"] = sc.workload.ulysses_degree;
  j["ring_degree"] = sc.workload.ring_degree;  // the layout, as simulate's rows name it
  j["tp_degree"] = sc.workload.tp_degree;
  j["fsdp"] = sc.workload.fsdp;
  j["cfg"] = cfg_mode_name(resolved_cfg(sc.workload));
  j["policy"] = sc.policy.policy;
  j["chunk_bytes"] = sc.policy.chunk_bytes;
  if (sc.policy.resident_fraction) j["resident_fraction"] = *sc.policy.resident_fraction;
  else j["resident_fraction"] = "auto";
  j["lookahead"] = sc.policy.lookahead;
  j["memory_budget_bytes"] = sc.policy.memory_budget_bytes.value_or(0.0);  // 0: no budget (as simulate --json)
  j["steps"] = sc.policy.steps;
  j["attention"] = attention_kernel_name(sc.workload.attention);  // what validate re-simulates with
  j["harness_ops"] = sc.workload.harness_ops;
  if (!sc.calibration_file.empty()) {  // the plan's node was calibrated: validate re-plans with this file
    j["calibration_file"] = sc.calibration_file;
    j["calibration_fnv1a64"] = file_fnv1a64(sc.calibration_file);
  }
  return j;
}

}  // namespace chunkflow::hw
