#include "runtime/scenario.hpp"

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model/calibration.hpp"
#include "model/error.hpp"
#include "model/json_file.hpp"
#include "model/kernel_model.hpp"
#include "model/limits.hpp"
#include "runtime/plan_limits.hpp"

namespace chunkflow {

using nlohmann::json;

Scenario default_scenario() {
  Scenario s;
  s.name = "wan14b-480p-81f-u2-2xh100-pcie";
  s.description = "Wan2.1-T2V-14B, 480x832, 81 frames, batch 1, Ulysses 2 on two H100 PCIe without NVLink";
  s.node = node("2xh100-pcie");
  s.workload.model = "wan2.1-t2v-14b";
  s.workload.height = 480;
  s.workload.width = 832;
  s.workload.frames = 81;
  s.workload.batch = 1;
  s.workload.ulysses_degree = 2;
  return s;
}

namespace {

/// Reads typed fields of one JSON object, rejecting unknown keys; errors name file and pointer.
class ObjectReader {
 public:
  ObjectReader(const json& j, std::string file, std::string pointer)
      : j_(j), file_(std::move(file)), pointer_(std::move(pointer)) {
    if (!j_.is_object()) throw InputError(file_, pointer_.empty() ? "/" : pointer_, "expected a JSON object");
  }

  bool has(const std::string& key) const { return j_.contains(key); }
  std::string field(const std::string& key) const { return pointer_ + "/" + key; }
  const json& raw(const std::string& key) {
    seen_.insert(key);
    return j_.at(key);
  }

  std::string string(const std::string& key) {
    if (!has(key)) throw InputError(file_, field(key), "missing; expected a string");
    const json& v = raw(key);
    if (!v.is_string()) throw InputError(file_, field(key), "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  void optional_string(const std::string& key, std::string& out) {
    if (has(key)) out = string(key);
  }
  double number(const std::string& key) {
    const json& v = raw(key);
    if (!v.is_number()) throw InputError(file_, field(key), "expected a number, got " + v.dump());
    return v.get<double>();
  }
  int64_t integer(const std::string& key) {
    if (!has(key)) throw InputError(file_, field(key), "missing; expected an integer");
    const json& v = raw(key);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
      throw InputError(file_, field(key), "expected a 64-bit integer, got " + v.dump());
    return v.get<int64_t>();
  }
  void optional_integer(const std::string& key, int64_t& out) {
    if (has(key)) out = integer(key);
  }
  void optional_int(const std::string& key, int& out) {
    if (!has(key)) return;
    const int64_t v = integer(key);
    if (v < -1000000 || v > 1000000) throw InputError(file_, field(key), "expected a small integer, got " + std::to_string(v));
    out = static_cast<int>(v);
  }
  /// Throws for the first key that was never read.
  void reject_unknown(const std::string& expected) const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!seen_.count(it.key())) throw InputError(file_, field(it.key()), "unknown field; expected one of " + expected);
  }

 private:
  const json& j_;
  std::string file_, pointer_;
  std::set<std::string> seen_;
};

/// The NodeSpec fields a scenario (and later a calibration) may override.
std::map<std::string, std::function<void(NodeSpec&, double)>> node_overrides() {
  auto all_links = [](double LinkSpec::*field) {  // every PCIe link (not memory, NVLink or inter-socket)
    return [field](NodeSpec& n, double v) {
      for (auto& l : n.links)
        if (l.kind == LinkKind::pcie) l.*field = v;
    };
  };
  return {
      {"peak_flop_per_s", [](NodeSpec& n, double v) { n.peak_flop_per_s = v; }},
      {"hbm_bytes_per_s", [](NodeSpec& n, double v) { n.hbm_bytes_per_s = v; }},
      {"gpu_memory_bytes", [](NodeSpec& n, double v) { n.gpu_memory_bytes = v; }},
      {"gemm_efficiency", [](NodeSpec& n, double v) { n.gemm_efficiency = v; }},
      {"attention_efficiency", [](NodeSpec& n, double v) { n.attention_efficiency = v; }},
      {"compute_launch_s", [](NodeSpec& n, double v) { n.compute_launch_s = v; }},
      {"copy_engine_bytes_per_s", [](NodeSpec& n, double v) { n.copy_engine_bytes_per_s = v; }},
      {"h2d_latency_s", [](NodeSpec& n, double v) { n.h2d_latency_s = v; }},
      {"collective_flow_bytes_per_s", [](NodeSpec& n, double v) { n.collective_flow_bytes_per_s = v; }},
      {"collective_latency_s", [](NodeSpec& n, double v) { n.collective_latency_s = v; }},
      {"compute_slowdown_h2d", [](NodeSpec& n, double v) { n.compute_slowdown_h2d = v; }},
      {"compute_slowdown_collective", [](NodeSpec& n, double v) { n.compute_slowdown_collective = v; }},
      {"h2d_link_bytes_per_s", all_links(&LinkSpec::a_to_b_bytes_per_s)},
      {"d2h_link_bytes_per_s", all_links(&LinkSpec::b_to_a_bytes_per_s)},
      {"duplex_bytes_per_s", all_links(&LinkSpec::duplex_bytes_per_s)},
  };
}

std::string override_names() {
  std::string names = "id";
  for (const auto& [k, f] : node_overrides()) names += ", " + k;
  return names;
}

NodeSpec read_node(const json& j, const std::string& file) {
  if (j.is_string()) return node(j.get<std::string>(), "/node");
  ObjectReader r(j, file, "/node");
  NodeSpec n = node(r.string("id"), "/node/id");
  for (const auto& [key, apply] : node_overrides())
    if (r.has(key)) {
      const double v = r.number(key);
      check_range(v, "/node/" + key, file, r.field(key));
      apply(n, v);
    }
  r.reject_unknown(override_names());
  return n;
}

Workload read_workload(const json& j, const std::string& file) {
  ObjectReader r(j, file, "/workload");
  Workload w;
  w.model = r.string("model");
  w.height = r.integer("height");
  w.width = r.integer("width");
  w.frames = 1;
  r.optional_integer("frames", w.frames);
  w.batch = 1;
  r.optional_integer("batch", w.batch);
  w.ulysses_degree = 1;
  r.optional_int("ulysses_degree", w.ulysses_degree);
  std::string attention = "auto";
  r.optional_string("attention", attention);
  w.attention = attention_kernel_from(attention, file, "/workload/attention");
  if (r.has("compile")) {
    const json& v = r.raw("compile");
    if (!v.is_boolean()) throw InputError(file, "/workload/compile", "expected true or false, got " + v.dump());
    w.compiled = v.get<bool>();
  }
  if (r.has("harness_ops")) {
    const json& v = r.raw("harness_ops");
    if (!v.is_boolean()) throw InputError(file, "/workload/harness_ops", "expected true or false, got " + v.dump());
    w.harness_ops = v.get<bool>();
  }
  r.optional_int("ring_degree", w.ring_degree);
  r.optional_int("tp_degree", w.tp_degree);
  if (r.has("fsdp")) {
    const json& v = r.raw("fsdp");
    if (!v.is_boolean()) throw InputError(file, "/workload/fsdp", "expected true or false, got " + v.dump());
    w.fsdp = v.get<bool>();
  }
  r.optional_int("steps", w.denoising_steps);
  if (r.has("cfg")) w.cfg = cfg_mode_from(r.string("cfg"), file, "/workload/cfg");
  r.reject_unknown("model, height, width, frames, batch, ulysses_degree, ring_degree, tp_degree, fsdp, attention, "
                   "compile, harness_ops, steps, cfg");
  return w;
}

/// FA3 only on Hopper (model/kernel_model.hpp attention_kernel_runs_on): a request the GPU cannot run
/// is an input error naming the field, not a silent FA2. With harness_ops the attention is the
/// harness's tiled kernel: "auto" becomes "tiled" (so outputs name the kernel priced), another
/// kernel is refused.
void check_attention_kernel(Workload& w, const NodeSpec& n, const std::string& file, const std::string& field) {
  if (w.harness_ops) {
    if (w.attention != AttentionKernel::automatic && w.attention != AttentionKernel::tiled)
      throw InputError(file, field,
                       std::string("expected tiled or auto with harness_ops (chunkflow-hw runs its tiled attention), got ") +
                           attention_kernel_name(w.attention));
    w.attention = AttentionKernel::tiled;
  }
  if (!attention_kernel_runs_on(w.attention, n))
    throw InputError(file, field,
                     "expected fa2, sdpa, sage or auto on node " + n.id + " (" + n.gpu_architecture +
                         "; FlashAttention-3 needs Hopper's wgmma/TMA), got fa3");
}

/// Parses a resident fraction: a number in [0, 1] or "auto" (nullopt).
std::optional<double> parse_resident_fraction(const std::string& text, const std::string& file, const std::string& field) {
  if (text == "auto") return std::nullopt;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || used == 0 || !std::isfinite(v) || v < 0 || v > 1)
    throw InputError(file, field, "expected a number in [0, 1] or \"auto\", got \"" + text + "\"");
  return v;
}

PolicyConfig read_policy(const json& j, const std::string& file) {
  ObjectReader r(j, file, "/policy");
  PolicyConfig p;
  r.optional_string("name", p.policy);
  if (r.has("chunk_mib")) p.chunk_bytes = r.number("chunk_mib") * kMiB;
  if (r.has("resident_fraction")) {
    const json& v = r.raw("resident_fraction");
    if (v.is_string()) p.resident_fraction = parse_resident_fraction(v.get<std::string>(), file, "/policy/resident_fraction");
    else if (v.is_number()) p.resident_fraction = v.get<double>();
    else throw InputError(file, "/policy/resident_fraction", "expected a number in [0, 1] or \"auto\", got " + v.dump());
  }
  r.optional_int("lookahead", p.lookahead);
  // "steps" is the former name of simulated_steps (scenario files written before issue 9 §3).
  if (r.has("steps") && r.has("simulated_steps"))
    throw InputError(file, "/policy/steps",
                     "give simulated_steps only (steps is its former name; a generation's denoising steps are "
                     "/workload/steps)");
  r.optional_int("steps", p.steps);
  r.optional_int("simulated_steps", p.steps);
  if (r.has("memory_budget_gib")) p.memory_budget_bytes = r.number("memory_budget_gib") * kGiB;
  r.reject_unknown("name, chunk_mib, resident_fraction, lookahead, simulated_steps, memory_budget_gib");
  return p;
}

}  // namespace

Scenario load_scenario(const std::string& path) { return scenario_from_json(read_json_file(path, "the scenario file"), path); }

Scenario scenario_from_json(const json& j, const std::string& path) {
  ObjectReader r(j, path, "");
  Scenario s;
  s.file = path;
  s.name = r.string("name");
  r.optional_string("description", s.description);
  if (!r.has("node")) throw InputError(path, "/node", "missing; expected a node id or {\"id\": ..., overrides}");
  try {
    s.node = read_node(r.raw("node"), path);
    if (!r.has("workload")) throw InputError(path, "/workload", "missing; expected an object");
    s.workload = read_workload(r.raw("workload"), path);
    if (r.has("policy")) s.policy = read_policy(r.raw("policy"), path);
  } catch (const InputError& e) {
    if (!e.file().empty()) throw;
    throw InputError(path, e.field(), e.message());  // built-in lookups name no file
  }
  r.reject_unknown("name, description, node, workload, policy");
  validate(s.node, path, "/node");
  validate(s.workload, path, "/workload");
  check_attention_kernel(s.workload, s.node, path, "/workload/attention");
  validate(s.policy, path, "/policy");
  try {
    executed_ranks(s.workload, s.node);
  } catch (const InputError& e) {
    throw InputError(path, e.field(), e.message());
  }
  return s;
}

void add_scenario_options(CLI::App& app, ScenarioOptions& o, bool with_policy, bool with_steps) {
  app.add_option("--scenario", o.scenario_file, "Scenario JSON file (default: the embedded Wan-14B default)");
  app.add_option("--node", o.node, "Node file, or a built-in node id: " + [] {
    std::string s;
    for (const auto& id : node_ids()) s += (s.empty() ? "" : ", ") + id;
    return s;
  }());
  app.add_option("--model", o.model, "Model id: " + [] {
    std::string s;
    for (const auto& id : architecture_ids()) s += (s.empty() ? "" : ", ") + id;
    return s;
  }());
  app.add_option("--height", o.height, "Height in pixels (multiple of 16), " + range_text("--height"));
  app.add_option("--width", o.width, "Width in pixels (multiple of 16), " + range_text("--width"));
  app.add_option("--frames", o.frames, "Frames (4k+1 for video models, 1 for images), " + range_text("--frames"));
  app.add_option("--batch", o.batch, "Batch per forward, " + range_text("--batch"));
  app.add_option("--ulysses", o.ulysses, "Ulysses degree P (divides the heads), " + range_text("--ulysses"));
  app.add_option("--attention", o.attention,
                 "Attention kernel the compute model prices: fa2 | fa3 | sdpa | sage | tiled | auto (default auto: FA3 on "
                 "Hopper, FA2 elsewhere; model/kernel_model.hpp; tiled: chunkflow-hw's fallback kernel, "
                 "model/tiled_attention.hpp)");
  app.add_flag("--compile", o.compile, "torch.compile'd stack: elementwise ops fused (fewer HBM bytes and launches)");
  app.add_flag("--harness-ops", o.harness_ops,
               "Price the compute ops as chunkflow-hw executes them: its tiled attention and dataflow kernels "
               "(model/harness_ops.hpp), to predict a harness run");
  app.add_option("--ring", o.ring, "Ring attention degree R (K/V passed peer to peer, overlapped), " +
                                      range_text("--ring") + "; GPUs used = ulysses × ring × tp × (2 with --cfg parallel)");
  app.add_option("--tp", o.tp, "Tensor-parallel degree T (Megatron column/row split, all-reduce after attention and MLP), " +
                                  range_text("--tp"));
  app.add_flag_callback("--fsdp", [&o] { o.fsdp = true; }, "FSDP: block weights sharded over every GPU used (with --tp: over the GPUs holding one TP shard), all-gathered before each block");
  app.add_option("--steps", o.denoising_steps,
                 "Denoising steps of the generation (default: the model's; Wan2.1 50, Wan2.2 40, FLUX 28, "
                 "HunyuanVideo 50), " + range_text("--steps"));
  app.add_option("--cfg", o.cfg,
                 "Classifier-free guidance: none | sequential (2 forwards per step) | parallel (2 GPU groups) | "
                 "auto (the model's: Wan sequential, FLUX and HunyuanVideo none)");
  app.add_option("--calibration", o.calibration_file, "Calibration JSON (chunkflow calibrate) applied to the node");
  if (!with_policy) return;
  app.add_option("--policy", o.policy, [] {
    std::string s;
    for (const auto& n : policy_names()) s += (s.empty() ? "" : " | ") + n;
    return s;
  }());
  app.add_option("--chunk-mib", o.chunk_mib,
                 "Chunk size (chunkflow), " + range_text("--chunk-mib") + ", at most 10^6 ops per step");
  app.add_option("--resident-fraction", o.resident_fraction, "Resident fraction in [0, 1] or auto");
  app.add_option("--lookahead", o.lookahead,
                 "Prefetch lookahead L, " + range_text("--lookahead") + " and at most the model's block count");
  if (with_steps)
    app.add_option("--simulated-steps", o.steps,
                   "Forwards simulated to reach the steady state (the last one is reported), " +
                       range_text("--simulated-steps") + ", at most 2·10^6 ops in all");
  app.add_option("--memory-budget-gib", o.memory_budget_gib,
                 "Per-GPU memory budget in GiB (> 0): resident weights + copies in flight + activations");
}

Scenario resolve_scenario(const ScenarioOptions& o) {
  Scenario s = o.scenario_file.empty() ? default_scenario() : load_scenario(o.scenario_file);
  if (o.node) s.node = node(*o.node, "--node");
  Workload& w = s.workload;
  if (o.model) {
    architecture(*o.model, "--model");
    w.model = *o.model;
    // An image model takes one frame unless --frames says otherwise.
    if (!architecture(w.model).video && !o.frames) w.frames = 1;
  }
  if (o.height) w.height = *o.height;
  if (o.width) w.width = *o.width;
  if (o.frames) w.frames = *o.frames;
  if (o.batch) w.batch = *o.batch;
  if (o.ulysses) w.ulysses_degree = *o.ulysses;
  if (o.ring) w.ring_degree = *o.ring;
  if (o.tp) w.tp_degree = *o.tp;
  if (o.fsdp) w.fsdp = *o.fsdp;
  if (o.attention) w.attention = attention_kernel_from(*o.attention, "", "--attention");
  if (o.compile) w.compiled = true;
  if (o.harness_ops) w.harness_ops = true;
  if (o.denoising_steps) w.denoising_steps = *o.denoising_steps;
  if (o.cfg) w.cfg = cfg_mode_from(*o.cfg, "", "--cfg");
  PolicyConfig& p = s.policy;
  if (o.policy) p.policy = *o.policy;
  if (o.chunk_mib) p.chunk_bytes = *o.chunk_mib * kMiB;
  if (o.resident_fraction) p.resident_fraction = parse_resident_fraction(*o.resident_fraction, "", "--resident-fraction");
  if (o.lookahead) p.lookahead = *o.lookahead;
  if (o.steps) p.steps = *o.steps;
  if (o.memory_budget_gib) p.memory_budget_bytes = *o.memory_budget_gib * kGiB;
  // A value given on the command line is reported under its option; one from the scenario file
  // under the file's JSON pointer.
  const std::map<std::string, std::pair<std::string, bool>> option_of = {
      {"/workload/model", {"--model", o.model.has_value()}},
      {"/workload/height", {"--height", o.height.has_value()}},
      {"/workload/width", {"--width", o.width.has_value()}},
      {"/workload/frames", {"--frames", o.frames.has_value()}},
      {"/workload/batch", {"--batch", o.batch.has_value()}},
      {"/workload/ulysses_degree", {"--ulysses", o.ulysses.has_value()}},
      {"/workload/steps", {"--steps", o.denoising_steps.has_value()}},
      {"/workload/ring_degree", {"--ring", o.ring.has_value()}},
      {"/workload/tp_degree", {"--tp", o.tp.has_value()}},
      {"/workload/fsdp", {"--fsdp", o.fsdp.has_value()}},
      {"/workload/cfg", {"--cfg", o.cfg.has_value()}},
      {"/policy/name", {"--policy", o.policy.has_value()}},
      {"/policy/chunk_mib", {"--chunk-mib", o.chunk_mib.has_value()}},
      {"/policy/resident_fraction", {"--resident-fraction", o.resident_fraction.has_value()}},
      {"/policy/lookahead", {"--lookahead", o.lookahead.has_value()}},
      {"/policy/simulated_steps", {"--simulated-steps", o.steps.has_value()}},
      {"/policy/memory_budget_gib", {"--memory-budget-gib", o.memory_budget_gib.has_value()}}};
  try {
    validate(s.workload, s.file, "/workload");
    validate(s.policy, s.file, "/policy");
    try {
      executed_ranks(w, s.node);  // the layout's GPUs on this node
    } catch (const InputError& e) {
      throw InputError(s.file, e.field(), e.message());
    }
    // Plan size and policy ranges, named as the user wrote them (runtime/plan_limits.hpp).
    PlanLimitFields fields;
    fields.file = s.file;
    check_plan_limits(s.workload, forward_cost(s.workload), s.node, s.policy, fields);
  } catch (const InputError& e) {
    const auto it = option_of.find(e.field());
    if (it == option_of.end() || !it->second.second) throw;
    throw InputError("", it->second.first, e.message());
  }
  // A scenario changed by node or workload overrides is a different scenario: name it after
  // what it now is, so outputs are not labelled with the file's (or the default's) name.
  if (o.node || o.model || o.height || o.width || o.frames || o.batch || o.ulysses || o.attention || o.compile ||
      o.harness_ops || o.ring || o.tp || o.fsdp || o.cfg) {
    s.name = w.model + "-" + std::to_string(w.height) + "x" + std::to_string(w.width) + "x" + std::to_string(w.frames) +
             "-b" + std::to_string(w.batch) + "-u" + std::to_string(w.ulysses_degree) +
             (w.ring_degree > 1 ? "-r" + std::to_string(w.ring_degree) : "") +
             (w.tp_degree > 1 ? "-tp" + std::to_string(w.tp_degree) : "") + (w.fsdp ? "-fsdp" : "") +
             (resolved_cfg(w) == CfgMode::parallel ? "-cfgp" : "") + "-" + s.node.id;
    if (w.attention != AttentionKernel::automatic) s.name += std::string("-") + attention_kernel_name(w.attention);
    if (w.compiled) s.name += "-compiled";
    if (w.harness_ops) s.name += "-harness";
    s.description = "derived from " + (s.file.empty() ? std::string("the embedded default") : s.file) +
                    " with command-line overrides";
  }
  check_attention_kernel(w, s.node, o.attention ? "" : s.file, o.attention ? "--attention" : "/workload/attention");
  if (s.node.collective == CollectiveBackend::host_staged && w.ulysses_degree > s.node.gpu_count)
    throw InputError(o.ulysses ? "" : s.file, o.ulysses ? "--ulysses" : "/workload/ulysses_degree",
                     "expected at most " + std::to_string(s.node.gpu_count) + " (GPUs of node " + s.node.id +
                         "), got " + std::to_string(w.ulysses_degree));
  if (!o.calibration_file.empty()) {
    apply_calibration(load_calibration(o.calibration_file), s.node);
    check_node_ranges(s.node, o.calibration_file, "/node (calibrated)");
    s.calibration_file = o.calibration_file;
  }
  return s;
}

}  // namespace chunkflow
