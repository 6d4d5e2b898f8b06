// The range table and its checks; see model/limits.hpp for why each range is what it is.
#include "model/limits.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "model/error.hpp"
#include "model/node.hpp"

namespace chunkflow {

namespace {

/// A number as a user would write it: integers without a decimal point, others with %g.
std::string number_text(double v) {
  char buf[40];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e7) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

constexpr std::string_view kShapeWhy =
    "keeps token and row counts exact in 64-bit integers and doubles";
constexpr std::string_view kRateWhy = "keeps every simulated time finite and every flow's rate above zero";

std::vector<InputRange> make_ranges() {
  const double threads = double(max_threads());
  return {
      // Workload (model/workload.hpp)
      {"/workload/height", "--height", 16, 16384, "px", true, kShapeWhy},
      {"/workload/width", "--width", 16, 16384, "px", true, kShapeWhy},
      {"/workload/frames", "--frames", 1, 4097, "frames", true, kShapeWhy},
      {"/workload/batch", "--batch", 1, 1024, "samples", true, kShapeWhy},
      {"/workload/ulysses_degree", "--ulysses", 1, 64, "ranks", true, "no catalogued model has more than 64 heads"},
      {"/workload/ring_degree", "--ring", 1, 64, "ranks", true, "no catalogued node has more than 64 GPUs"},
      {"/workload/tp_degree", "--tp", 1, 64, "ranks", true, "no catalogued model has more than 64 heads"},
      {"/workload/steps", "--steps", 0, 10000, "steps", true,
       "denoising steps of a generation (0 = the model's default); published pipelines run 1 to 50"},
      // Policy (runtime/policy.hpp)
      {"/policy/chunk_mib", "--chunk-mib", 1.0 / 16, 1048576, "MiB", false,
       "below 64 KiB a copy is all fixed latency; the ops-per-step limit applies as well"},
      {"/policy/resident_fraction", "--resident-fraction", 0, 1, "", false, "a fraction of the block weights"},
      {"/policy/lookahead", "--lookahead", 1, 1000, "blocks", true,
       "no model has more than 1000 blocks; it must also not exceed the model's block count"},
      {"/policy/simulated_steps", "--simulated-steps", 1, 1000, "steps", true,
       "a steady state is reached after 2; more only multiplies the plan's size"},
      // Node overrides (model/node.hpp); catalogued devices sit well inside (gpu-catalogue.md)
      {"/node/peak_flop_per_s", "", 1e12, 1e17, "FLOP/s", false, "1 TFLOP/s .. 100 PFLOP/s brackets every GPU"},
      {"/node/hbm_bytes_per_s", "", 1e10, 1e14, "bytes/s", false, kRateWhy},
      {"/node/gpu_memory_bytes", "", 1073741824.0, 17592186044416.0, "bytes", false, "1 GiB .. 16 TiB"},
      {"/node/gemm_efficiency", "", 1e-3, 1, "", false, "achieved / peak; 0.1 % keeps times finite"},
      {"/node/attention_efficiency", "", 1e-3, 1, "", false, "achieved / peak; 0.1 % keeps times finite"},
      {"/node/compute_launch_s", "", 0, 0.1, "s", false, "a kernel launch costs microseconds"},
      {"/node/copy_engine_bytes_per_s", "", 1e8, 1e13, "bytes/s", false, kRateWhy},
      {"/node/h2d_latency_s", "", 0, 0.1, "s", false, "a copy's fixed cost is microseconds"},
      {"/node/collective_flow_bytes_per_s", "", 1e8, 1e13, "bytes/s", false, kRateWhy},
      {"/node/collective_latency_s", "", 0, 0.1, "s", false, "a collective's fixed cost is microseconds"},
      {"/node/compute_slowdown_h2d", "", 0, 10, "", false, "a fractional slowdown"},
      {"/node/compute_slowdown_collective", "", 0, 10, "", false, "a fractional slowdown"},
      {"/node/h2d_link_bytes_per_s", "", 1e8, 1e13, "bytes/s", false, kRateWhy},
      {"/node/d2h_link_bytes_per_s", "", 1e8, 1e13, "bytes/s", false, kRateWhy},
      {"/node/duplex_bytes_per_s", "", 0, 2e13, "bytes/s", false, "0 = no coupling; otherwise at least 1e8 bytes/s"},
      // Options of sweep and tune (sim/cli.cpp, sim/cli_calibration.cpp)
      {"", "--threads", 0, threads, "threads", true, "4 x this machine's hardware threads; 0 = every core"},
      {"", "--memory-budget-gib", 1.0 / 1024, 16384, "GiB", false, "1 MiB .. 16 TiB per GPU"},
  };
}

}  // namespace

int max_threads() { return 4 * std::max(1, int(std::thread::hardware_concurrency())); }

const std::vector<InputRange>& input_ranges() {
  static const std::vector<InputRange> ranges = make_ranges();
  return ranges;
}

const InputRange& input_range(std::string_view name) {
  for (const InputRange& r : input_ranges())
    if ((!r.pointer.empty() && r.pointer == name) || (!r.option.empty() && r.option == name)) return r;
  throw std::out_of_range("input_range: no documented range for " + std::string(name));
}

std::string range_text(std::string_view name) {
  const InputRange& r = input_range(name);
  std::string s = "[";
  s += number_text(r.min);
  s += ", ";
  s += number_text(r.max);
  s += "]";
  if (!r.unit.empty()) {
    s += ' ';
    s += r.unit;
  }
  return s;
}

std::string ranges_markdown() {
  std::string out = "| field | option | range | why |\n|---|---|---|---|\n";
  for (const InputRange& r : input_ranges()) {
    const std::string name = r.pointer.empty() ? std::string(r.option) : std::string(r.pointer);
    // The thread cap depends on the machine: written as its rule.
    const std::string range = r.option == "--threads" ? std::string("[0, 4 × hardware threads]") : range_text(name);
    // Appended piece by piece (GCC 12 warns, wrongly, about chained temporaries here: -Wrestrict).
    auto code = [&out](std::string_view s) {
      if (s.empty()) {
        out += '-';
      } else {
        out += '`';
        out += s;
        out += '`';
      }
    };
    out += "| ";
    code(r.pointer);
    out += " | ";
    code(r.option);
    out += " | ";
    out += range;
    if (r.integer) out += ", integer";
    out += " | ";
    out += r.why;
    out += " |\n";
  }
  return out;
}

void check_range(double v, std::string_view name, const std::string& file, const std::string& field) {
  check_range(v, input_range(name), file, field);
}

void check_range(double v, const InputRange& r, const std::string& file, const std::string& field) {
  const std::string_view name = !r.pointer.empty() ? r.pointer : r.option;
  const bool zero_means_none = r.pointer == "/node/duplex_bytes_per_s";
  bool ok = std::isfinite(v) && v >= r.min && v <= r.max && (!r.integer || v == std::floor(v));
  if (zero_means_none && v != 0 && v < 1e8) ok = false;
  if (!ok)
    throw InputError(file, field,
                     "expected " + std::string(r.integer ? "an integer in " : "a number in ") + range_text(name) + " (" +
                         std::string(r.why) + "), got " + number_text(v));
}

void check_node_ranges(const NodeSpec& n, const std::string& file, const std::string& prefix) {
  const std::pair<const char*, double> fields[] = {
      {"peak_flop_per_s", n.peak_flop_per_s},
      {"hbm_bytes_per_s", n.hbm_bytes_per_s},
      {"gpu_memory_bytes", n.gpu_memory_bytes},
      {"gemm_efficiency", n.gemm_efficiency},
      {"attention_efficiency", n.attention_efficiency},
      {"compute_launch_s", n.compute_launch_s},
      {"copy_engine_bytes_per_s", n.copy_engine_bytes_per_s},
      {"h2d_latency_s", n.h2d_latency_s},
      {"collective_flow_bytes_per_s", n.collective_flow_bytes_per_s},
      {"collective_latency_s", n.collective_latency_s},
      {"compute_slowdown_h2d", n.compute_slowdown_h2d},
      {"compute_slowdown_collective", n.compute_slowdown_collective},
  };
  for (const auto& [key, value] : fields) check_range(value, "/node/" + std::string(key), file, prefix + "/" + key);
  for (std::size_t i = 0; i < n.links.size(); ++i) {
    const LinkSpec& l = n.links[i];
    const std::string at = prefix + "/links/" + std::to_string(i);
    check_range(l.a_to_b_bytes_per_s, "/node/h2d_link_bytes_per_s", file, at + "/a_to_b_bytes_per_s");
    check_range(l.b_to_a_bytes_per_s, "/node/d2h_link_bytes_per_s", file, at + "/b_to_a_bytes_per_s");
    check_range(l.duplex_bytes_per_s, "/node/duplex_bytes_per_s", file, at + "/duplex_bytes_per_s");
  }
}

void check_plan_size(double ops_per_step, int steps, const std::string& file, const std::string& chunk_field,
                     const std::string& steps_field) {
  char buf[400];
  if (!(ops_per_step <= kMaxOpsPerStep)) {
    std::snprintf(buf, sizeof buf,
                  "the plan would have %.3g ops per step (all ranks), more than the limit of %.0f that bounds the "
                  "simulator's memory (about %.0f bytes per op); use a larger chunk",
                  ops_per_step, kMaxOpsPerStep, kPlanOpBytes);
    throw InputError(file, chunk_field, buf);
  }
  const double total = ops_per_step * double(steps);
  if (!(total <= kMaxPlanOps)) {
    std::snprintf(buf, sizeof buf,
                  "the plan would have %.3g ops over %d steps, more than the limit of %.0f ops per plan that bounds "
                  "the simulator's memory (about %.0f bytes per op); simulate fewer steps",
                  total, steps, kMaxPlanOps, kPlanOpBytes);
    throw InputError(file, steps_field, buf);
  }
}

}  // namespace chunkflow
