#include "sim/report.hpp"

#include "model/kernel_model.hpp"

#include <chunkflow_version.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace chunkflow {

using nlohmann::json;

json context_block(const std::string& command_line) {
  json c = json::object();
  c["tool"] = "chunkflow";
  c["version"] = kVersion;
  c["git_revision"] = kGitRevision;
  c["command_line"] = command_line;
  c["source"] = "simulator";
  return c;
}

json scenario_json(const Scenario& s) {
  json j = json::object();
  j["name"] = s.name;
  j["file"] = s.file;
  if (!s.calibration_file.empty()) j["calibration_file"] = s.calibration_file;
  const NodeSpec& n = s.node;
  json node = json::object();
  node["id"] = n.id;
  node["gpu_count"] = n.gpu_count;
  node["gpu_name"] = n.gpu_name;
  node["peak_flop_per_s"] = n.peak_flop_per_s;
  node["hbm_bytes_per_s"] = n.hbm_bytes_per_s;
  node["gpu_memory_bytes"] = n.gpu_memory_bytes;
  node["gemm_efficiency"] = n.gemm_efficiency;
  node["attention_efficiency"] = n.attention_efficiency;
  node["compute_launch_s"] = n.compute_launch_s;
  node["copy_engine_bytes_per_s"] = n.copy_engine_bytes_per_s;
  node["h2d_latency_s"] = n.h2d_latency_s;
  node["collective"] = n.collective == CollectiveBackend::pcie_proxy ? "pcie-proxy" : "routed";
  node["collective_flow_bytes_per_s"] = n.collective_flow_bytes_per_s;
  node["collective_latency_s"] = n.collective_latency_s;
  if (n.compute_slowdown_h2d > 0) node["compute_slowdown_h2d"] = n.compute_slowdown_h2d;
  if (n.compute_slowdown_collective > 0) node["compute_slowdown_collective"] = n.compute_slowdown_collective;
  if (!n.gemm_efficiency_tables.empty()) node["gemm_efficiency_tables"] = n.gemm_efficiency_tables.size();
  json links = json::array();
  for (const auto& l : n.links)
    links.push_back({{"name", l.name}, {"a", l.a}, {"b", l.b}, {"a_to_b_bytes_per_s", l.a_to_b_bytes_per_s},
                     {"b_to_a_bytes_per_s", l.b_to_a_bytes_per_s}, {"duplex_bytes_per_s", l.duplex_bytes_per_s}});
  node["links"] = links;
  j["node"] = node;
  const Workload& w = s.workload;
  j["workload"] = {{"model", w.model},   {"height", w.height}, {"width", w.width},
                   {"frames", w.frames}, {"batch", w.batch},   {"ulysses_degree", w.ulysses_degree},
                   {"attention", attention_kernel_name(resolve_attention_kernel(w.attention, n))},
                   {"compile", w.compiled},
                   {"harness_ops", w.harness_ops},
                   {"ring_degree", w.ring_degree}, {"tp_degree", w.tp_degree}, {"fsdp", w.fsdp},
                   {"gpus_used", gpus_used(w)},
                   {"denoising_steps", resolved_denoising_steps(w)}, {"cfg", cfg_mode_name(resolved_cfg(w))}};
  return j;
}

json model_json(const Scenario& s, const ForwardCost& cost, const AnalyticalResult& a) {
  const DitArchitecture& arch = architecture(s.workload.model);
  json j = json::object();
  j["context"] = json::object();  // filled by the caller
  j["scenario"] = scenario_json(s);
  j["model"] = arch.id;
  j["params_total"] = arch.params_total();
  j["weight_bytes"] = cost.weight_bytes;
  j["tokens"] = cost.tokens.video + cost.tokens.text;
  j["video_tokens"] = cost.tokens.video;
  j["text_tokens"] = cost.tokens.text;
  j["blocks"] = arch.block_count();
  j["flop_per_step"] = cost.flop;
  j["activation_bytes"] = cost.activation_bytes;
  double a2a = 0;
  for (const auto& b : cost.blocks) a2a += b.all_to_all_bytes;
  j["all_to_all_bytes_per_step"] = a2a;
  json kinds = json::array();
  for (std::size_t k = 0; k < arch.block_kinds.size(); ++k) {
    for (const auto& b : cost.blocks)
      if (b.kind == int(k)) {
        kinds.push_back({{"kind", arch.block_kinds[k].name},
                         {"count", arch.block_kinds[k].count},
                         {"params", arch.block_kinds[k].params()},
                         {"weight_bytes", b.weight_bytes},
                         {"linear_flop", b.linear_flop},
                         {"attention_flop", b.attention_flop},
                         {"all_to_all_bytes", b.all_to_all_bytes}});
        break;
      }
  }
  j["block_kinds"] = kinds;
  j["analytical"] = {{"block_flop", a.block_flop},
                     {"block_weight_bytes", a.block_weight_bytes},
                     {"collective_inbound_bytes", a.collective_inbound_bytes},
                     {"compute_time_s", a.compute_time_s},
                     {"prefetch_time_s", a.prefetch_time_s},
                     {"effective_flop_per_s", a.effective_flop_per_s},
                     {"h2d_bytes_per_s", a.h2d_bytes_per_s},
                     {"hideable_bytes", a.hideable_bytes},
                     {"auto_resident_fraction", a.auto_resident_fraction}};
  j["critical_flop"] = a.critical_flop;
  j["regime"] = a.regime;
  return j;
}

namespace {

/// The generation beside the step (issue 9 §3): step_time_s is one forward; denoise_time_s =
/// denoising steps × forwards per step (per GPU group) × step_time_s (model/workload.hpp).
void add_generation(json& j, const PlanInfo& i, double step_time_s) {
  j["denoising_steps"] = i.denoising_steps;
  j["cfg"] = i.cfg;
  j["forwards_per_step"] = i.forwards_per_step;
  j["denoise_time_s"] = double(i.denoising_steps) * double(i.forwards_per_step) * step_time_s;
  // Whole generation (issue 10 §3): text encoding + denoising + VAE decode (model/generation.hpp).
  j["text_encode_time_s"] = i.text_encode_time_s;
  j["vae_decode_time_s"] = i.vae_decode_time_s;
  j["generation_time_s"] = i.text_encode_time_s + j["denoise_time_s"].get<double>() + i.vae_decode_time_s;
}

/// What the policy decided and the bound, shared by `simulate --json` and sweep rows.
void add_decisions_and_bound(json& j, const PlanInfo& i, const StepSummary& m, const StepBound& b) {
  j["residency"] = i.residency;
  j["memory_budget_bytes"] = i.memory_budget_bytes;
  j["share_cap_bytes_per_s"] = i.share_cap_bytes_per_s;
  j["windows"] = {{"yield", i.windows_yield}, {"share", i.windows_share}, {"ignore", i.windows_ignore}};
  j["estimated_step_time_s"] = i.estimated_step_time_s;
  j["bound_step_time_s"] = b.bound_step_time_s;
  j["vs_bound"] = b.bound_step_time_s > 0 ? m.step_time_s / b.bound_step_time_s : 0.0;
  j["bound"] = {{"critical_path_s", b.critical_path_s},
                {"link_s", b.link_s},
                {"link_resource", b.link_resource},
                {"copy_lane_s", b.copy_lane_s},
                {"chain_lane_s", b.chain_lane_s},
                {"binding", b.binding}};
}

}  // namespace

json simulate_json(const Scenario& s, const StepPlan& plan, const SimResult& r) {
  const StepSummary& m = r.summary;
  const PlanInfo& i = plan.info;
  json j = json::object();
  j["context"] = json::object();
  j["scenario"] = scenario_json(s);
  j["policy"] = i.policy;
  j["chunk_bytes"] = i.chunk_bytes;
  j["resident_fraction"] = i.resident_fraction;
  j["resident_fraction_auto"] = i.resident_fraction_auto;
  // The fraction asked for, beside the one the plan reached (chunk granularity makes them differ):
  // validate re-plans with the request, since planning again at the reached fraction may break a
  // tie between equally fast plans differently.
  if (s.policy.resident_fraction) j["resident_fraction_requested"] = *s.policy.resident_fraction;
  j["lookahead"] = i.lookahead;
  j["simulated_steps"] = i.steps;
  j["ranks"] = i.ranks;
  j["slot_count"] = i.slot_count;
  j["slot_bytes"] = i.slot_bytes;
  j["resident_weight_bytes"] = i.resident_weight_bytes;
  j["offloaded_bytes_per_step"] = i.offloaded_bytes_per_step;
  j["step"] = m.step;
  j["step_time_s"] = m.step_time_s;
  add_generation(j, i, m.step_time_s);
  j["peak_memory_bytes"] = m.peak_memory_bytes;
  j["compute_time_s"] = m.compute_time_s;
  j["h2d_time_s"] = m.h2d_time_s;
  j["comm_time_s"] = m.comm_time_s;
  j["h2d_bytes"] = m.h2d_bytes;
  j["prefetch_stall_s"] = m.prefetch_stall_s;
  j["collective_time_s"] = m.collective_time_s;
  add_decisions_and_bound(j, i, m, r.bound);
  j["ops"] = plan.ops.size();
  j["plan_fnv1a64"] = plan_fnv1a64(plan);
  j["events"] = r.events;
  const MemoryVerdict v = memory_verdict(plan, s.node, m.peak_memory_bytes);
  j["usable_memory_bytes"] = v.usable_bytes;
  j["fits"] = v.fits;
  if (!v.fits) j["does_not_fit_reason"] = v.does_not_fit_reason;
  return j;
}

json sweep_row_json(const SweepRow& r) {
  const StepSummary& m = r.summary;
  json j = {{"config_index", r.config_index},
          {"policy", r.plan.policy},
          {"chunk_bytes", r.plan.chunk_bytes},
          {"resident_fraction", r.plan.resident_fraction},
          {"resident_fraction_auto", r.plan.resident_fraction_auto},
          {"lookahead", r.plan.lookahead},
          {"step_time_s", m.step_time_s},
          {"peak_memory_bytes", m.peak_memory_bytes},
          {"compute_time_s", m.compute_time_s},
          {"h2d_time_s", m.h2d_time_s},
          {"prefetch_stall_s", m.prefetch_stall_s},
          {"collective_time_s", m.collective_time_s},
          {"h2d_bytes", m.h2d_bytes},
          {"ops", r.ops},
          {"events", r.events},
          {"fits", r.verdict.fits}};
  if (!r.verdict.fits) j["does_not_fit_reason"] = r.verdict.does_not_fit_reason;
  add_generation(j, r.plan, m.step_time_s);
  add_decisions_and_bound(j, r.plan, m, r.bound);
  return j;
}

void write_file_atomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path() && !fs::exists(target.parent_path()))
    throw std::runtime_error(path + ": the folder " + target.parent_path().string() + " does not exist");
  const fs::path tmp = target.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw std::runtime_error(path + ": cannot write (" + tmp.string() + ")");
    out << content;
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(path + ": write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error(path + ": cannot rename the temporary file into place");
  }
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string format_table(const std::vector<std::string>& header, const std::vector<std::string>& units,
                         const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size(), 0);
  auto grow = [&](const std::vector<std::string>& r) {
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  };
  grow(header);
  grow(units);
  for (const auto& r : rows) grow(r);
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& r) {
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < r.size() ? r[c] : "";
      const std::string pad(width[c] - cell.size(), ' ');
      out << (c == 0 ? cell + pad : "  " + pad + cell);
    }
    out << '\n';
  };
  line(header);
  line(units);
  for (const auto& r : rows) line(r);
  return out.str();
}

}  // namespace chunkflow
