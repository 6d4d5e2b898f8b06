// The published-measurement data set: records, their loader and the GPUs they ran on.
// Format in model/published.hpp.
#include "model/published.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/architecture.hpp"
#include "model/error.hpp"
#include "model/json_file.hpp"

namespace chunkflow {

namespace fs = std::filesystem;
using nlohmann::json;

const char* published_measure_name(PublishedMeasure m) {
  switch (m) {
    case PublishedMeasure::per_forward: return "per_forward";
    case PublishedMeasure::per_step: return "per_step";
    case PublishedMeasure::denoise_total: return "denoise_total";
    case PublishedMeasure::generation: return "generation";
    case PublishedMeasure::peak_memory: return "peak_memory";
    case PublishedMeasure::h2d_bandwidth: return "h2d_bandwidth";
  }
  return "generation";
}

namespace {

// Typed field access with errors naming the file and the JSON pointer.
struct Reader {
  const std::string& file;
  const json& j(const json& o, const std::string& key, const std::string& at) const {
    if (!o.is_object() || !o.contains(key)) throw InputError(file, at + "/" + key, "missing (required)");
    return o.at(key);
  }
  std::string str(const json& o, const std::string& key, const std::string& at) const {
    const json& v = j(o, key, at);
    if (!v.is_string() || v.get<std::string>().empty())
      throw InputError(file, at + "/" + key, "expected a non-empty string, got " + v.dump());
    return v.get<std::string>();
  }
  int64_t integer(const json& o, const std::string& key, const std::string& at, int64_t lo, int64_t hi) const {
    const json& v = j(o, key, at);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw InputError(file, at + "/" + key,
                       "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
    return v.get<int64_t>();
  }
  bool boolean(const json& o, const std::string& key, const std::string& at) const {
    const json& v = j(o, key, at);
    if (!v.is_boolean()) throw InputError(file, at + "/" + key, "expected true or false, got " + v.dump());
    return v.get<bool>();
  }
  std::string one_of(const json& o, const std::string& key, const std::string& at,
                     const std::vector<std::string>& allowed) const {
    const std::string v = str(o, key, at);
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw InputError(file, at + "/" + key, "expected one of " + list + ", got \"" + v + "\"");
    }
    return v;
  }
};

}  // namespace

PublishedRecord read_published_record(const std::string& path) {
  const json j = read_json_file(path, "the published record");
  if (!j.is_object()) throw InputError(path, "", "expected a JSON object (one record)");
  const Reader r{path};
  PublishedRecord p;
  p.file = path;
  p.id = r.str(j, "id", "");
  if (fs::path(path).stem().string() != p.id)
    throw InputError(path, "/id", "expected the file's name without .json (\"" + fs::path(path).stem().string() +
                                      "\"), got \"" + p.id + "\"");
  p.source = r.str(j, "source", "");
  p.reference = r.str(j, "reference", "");
  p.framework = r.str(j, "framework", "");
  const std::string measures = r.one_of(j, "measures", "",
                                        {"per_forward", "per_step", "denoise_total", "generation", "peak_memory",
                                         "h2d_bandwidth"});
  for (PublishedMeasure m : {PublishedMeasure::per_forward, PublishedMeasure::per_step, PublishedMeasure::denoise_total,
                             PublishedMeasure::generation, PublishedMeasure::peak_memory, PublishedMeasure::h2d_bandwidth})
    if (measures == published_measure_name(m)) p.measures = m;
  const json& fig = r.j(j, "figure", "");
  const json& value = r.j(fig, "value", "/figure");
  if (!value.is_number() || !(value.get<double>() > 0) || !std::isfinite(value.get<double>()))
    throw InputError(path, "/figure/value", "expected a positive number, got " + value.dump());
  p.value = value.get<double>();
  const std::string expected_unit = p.measures == PublishedMeasure::peak_memory     ? "bytes"
                                    : p.measures == PublishedMeasure::h2d_bandwidth ? "bytes_per_s"
                                                                                   : "s";
  p.unit = r.one_of(fig, "unit", "/figure", {expected_unit});
  const json& caveats = r.j(j, "caveats", "");
  if (!caveats.is_array()) throw InputError(path, "/caveats", "expected an array of strings, got " + caveats.dump());
  for (size_t i = 0; i < caveats.size(); ++i) {
    if (!caveats[i].is_string()) throw InputError(path, "/caveats/" + std::to_string(i), "expected a string");
    p.caveats.push_back(caveats[i].get<std::string>());
  }
  if (j.contains("series")) p.series = r.str(j, "series", "");
  if (j.contains("derived")) p.derived = r.str(j, "derived", "");

  const json& hw = r.j(j, "hardware", "");
  p.gpu = r.str(hw, "gpu", "/hardware");
  (void)published_node(p.gpu, 1, path);  // known GPU
  p.gpu_count = int(r.integer(hw, "gpu_count", "/hardware", 1, 1024));
  p.offload = r.one_of(j, "offload", "", {"none", "layerwise", "whole-model-swap", "group-offload-leaf"});
  if (j.contains("text_encoder"))
    p.text_encoder_on_cpu = r.one_of(j, "text_encoder", "", {"gpu", "cpu"}) == "cpu";
  if (p.measures == PublishedMeasure::h2d_bandwidth) return p;  // no workload

  Workload& w = p.workload;
  w.model = r.str(j, "model", "");
  (void)architecture(w.model, "/model");
  const json& shape = r.j(j, "shape", "");
  w.height = r.integer(shape, "height", "/shape", 1, 1 << 20);
  w.width = r.integer(shape, "width", "/shape", 1, 1 << 20);
  w.frames = r.integer(shape, "frames", "/shape", 1, 1 << 20);
  w.batch = r.integer(shape, "batch", "/shape", 1, 1 << 16);
  if (shape.contains("text_tokens")) w.text_tokens = r.integer(shape, "text_tokens", "/shape", 1, 1'000'000);
  p.steps = int(r.integer(j, "steps", "", 1, 100000));
  p.cfg_sequential = r.one_of(j, "cfg", "", {"none", "sequential"}) == "sequential";
  const json& layout = r.j(j, "layout", "");
  w.ulysses_degree = int(r.integer(layout, "ulysses", "/layout", 1, 1024));
  p.ring_degree = int(r.integer(layout, "ring", "/layout", 1, 1024));
  p.fsdp = r.boolean(layout, "fsdp", "/layout");
  if (w.ulysses_degree * p.ring_degree != p.gpu_count)
    throw InputError(path, "/layout", "expected ulysses × ring = hardware/gpu_count (" + std::to_string(p.gpu_count) +
                                          "), got " + std::to_string(w.ulysses_degree) + " × " +
                                          std::to_string(p.ring_degree));
  w.attention = attention_kernel_from(r.one_of(j, "attention", "", {"fa2", "fa3", "sdpa", "sage"}), path, "/attention");
  w.compiled = r.boolean(j, "compiled", "");
  // The shape must be one the model accepts; with ring attention the per-rank split is
  // ulysses × ring (heads must divide by it, as USP's per-rank compute is modelled).
  Workload check = w;
  check.ulysses_degree = w.ulysses_degree * p.ring_degree;
  try {
    validate(check, path, "/shape");
  } catch (const InputError& e) {
    if (e.field() == "/shape/ulysses_degree") throw InputError(path, "/layout", e.message());
    throw;
  }
  return p;
}

std::vector<PublishedRecord> load_published_records(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "expected a folder of published records (*.json)");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(dir, "", "expected at least one published record (*.json), found none");
  std::vector<PublishedRecord> out;
  std::set<std::string> ids;
  for (const std::string& f : files) {
    out.push_back(read_published_record(f));
    if (!ids.insert(out.back().id).second) throw InputError(f, "/id", "duplicate record id \"" + out.back().id + "\"");
  }
  return out;
}

namespace {

// GPU figures for the published records (gpu-catalogue.md §1 datasheet, §2.1 measured GEMM).
// gemm_efficiency = measured GEMM at the best shape / dense datasheet peak, sustained where the
// catalogue has the sustained figure ("DiT denoising runs sustained, so plan on MSMF", §3.1):
// Hopper SXM 700 W MSMF 743 TFLOP/s (0.75), H200 MSMF 708.5 (0.716); MAMF otherwise.
// attention_efficiency = the
// GPU's best kernel at long sequences: FA3 on Hopper = 0.82 of the GEMM rate (FlashAttention-3
// paper Fig. 5, 648 TFLOP/s, over H100 SXM MAMF 794.5), FA2 elsewhere = 0.70 of peak on A100
// (FlashAttention-2 paper: forward "50–73 % of the theoretical maximum"), the same share of the
// GEMM rate on Ada (assumed: 0.70 / 0.87 · η_gemm).
struct GpuFigures {
  const char* id;
  const char* name;
  const char* architecture;
  double peak_flop_per_s, hbm_bytes_per_s, memory_bytes;
  int sm_count;
  double gemm_efficiency, attention_efficiency;
  double h2d_bytes_per_s;   // pinned copy-engine H2D (Gen5 ≈ 55.3, Gen4 ≈ 25; gpu-catalogue.md §2.2)
  double fp32_flop_per_s;   // FP32 non-tensor peak: the catalogue's fp32_flop_per_s (model/catalogue/gpus.json)
};
constexpr double kGB = 1e9;
constexpr double kFa3OverGemm = 648.0 / 794.5;  // FA3 at 16k over the burst (MAMF) GEMM rate, same clock
constexpr double kFa2OverGemmAmpere = 0.70 / 0.87;
const GpuFigures kGpus[] = {
    // H100 SXM5: 989.4 dense, 3.35 TB/s, 132 SMs; MSMF 743 sustained (0.75; MAMF 794.5 burst).
    {"h100-sxm", "NVIDIA H100 80GB HBM3", "hopper", 989.4e12, 3.35e12, 80 * kGB, 132, 0.75, 0.75 * kFa3OverGemm, 55.3e9, 66.9e12},
    // H800 SXM: same GH100, 132 SMs, same dense rates (§3.3).
    {"h800-sxm", "NVIDIA H800", "hopper", 989.4e12, 3.35e12, 80 * kGB, 132, 0.75, 0.75 * kFa3OverGemm, 55.3e9, 66.9e12},
    // H100 PCIe: 756 dense, 2.0 TB/s, 114 SMs; MAMF 499.5 (66 %).
    {"h100-pcie", "NVIDIA H100 PCIe", "hopper", 756e12, 2.0e12, 80 * kGB, 114, 0.66, 0.66 * kFa3OverGemm, 55.3e9, 51e12},
    // H200: 989 dense, 4.8 TB/s, 132 SMs; MSMF 708.5 sustained (0.716; MAMF 841.9 burst).
    {"h200", "NVIDIA H200", "hopper", 989e12, 4.8e12, 141 * kGB, 132, 0.716, 0.716 * kFa3OverGemm, 55.4e9, 66.9e12},
    // H20: 148 dense, 4.0 TB/s, 78 SMs; measured 142.25 (96 %).
    {"h20", "NVIDIA H20", "hopper", 148e12, 4.0e12, 96 * kGB, 78, 0.96, std::min(1.0, 0.96 * kFa3OverGemm), 55.3e9, 44e12},
    // A100 SXM4 80GB: 312 dense, 2.039 TB/s, 108 SMs; MAMF 271.2 (87 %).
    {"a100-sxm-80gb", "NVIDIA A100-SXM4-80GB", "ampere", 312e12, 2.039e12, 80 * kGB, 108, 0.87, 0.70, 25e9, 19.5e12},
    // L40S: 362.05 dense, 0.864 TB/s, 142 SMs; 269.2 measured (74 %).
    {"l40s", "NVIDIA L40S", "ada", 362.05e12, 0.864e12, 48 * kGB, 142, 0.74, 0.74 * kFa2OverGemmAmpere, 25e9, 91.6e12},
    // L40: the catalogue lists 181.05 dense, on its own inference that BF16 with FP32 accumulate runs
    // at half rate (§3.1 "my inference, not an NVIDIA statement"); the datasheet's other BF16 figure
    // is 362.1. 181.05 cannot hold: the record diffusers-flux-l40-compiled achieves 74.4 TFLOP in
    // 0.391 s = 190 TFLOP/s over a whole forward, above that peak. So 362.05 (full rate, as the L40S on
    // the same AD102 die, 142 SMs), 0.864 TB/s; no GEMM measurement: the L40S share (74 %) assumed.
    {"l40", "NVIDIA L40", "ada", 362.05e12, 0.864e12, 48 * kGB, 142, 0.74, 0.74 * kFa2OverGemmAmpere, 25e9, 90.5e12},
    // RTX 4090: 165.2 dense (FP32 accumulate), 1.008 TB/s, 128 SMs; measured 160.5–178.5 (97–108 %) → 1.0.
    {"rtx4090", "NVIDIA GeForce RTX 4090", "ada", 165.2e12, 1.008e12, 24 * kGB, 128, 1.0, 1.0 * kFa2OverGemmAmpere, 24.66e9, 82.58e12},
};

}  // namespace

std::vector<std::string> published_gpu_ids() {
  std::vector<std::string> ids;
  for (const GpuFigures& g : kGpus) ids.push_back(g.id);
  return ids;
}

NodeSpec published_node(const std::string& gpu, int gpu_count, const std::string& file) {
  for (const GpuFigures& g : kGpus) {
    if (gpu != g.id) continue;
    NodeSpec n = node("1xh100-sxm");  // links, latencies and launch costs as the built-in node
    n.id = std::to_string(gpu_count) + "x" + g.id;
    n.description = "published-record node: " + std::to_string(gpu_count) + "× " + g.name;
    n.gpu_id = g.id;  // the catalogue entry (the base node's is h100-sxm)
    n.gpu_name = g.name;
    n.gpu_architecture = g.architecture;
    n.peak_flop_per_s = g.peak_flop_per_s;
    n.hbm_bytes_per_s = g.hbm_bytes_per_s;
    n.fp32_flop_per_s = g.fp32_flop_per_s;
    n.gpu_memory_bytes = g.memory_bytes;
    n.sm_count = g.sm_count;
    n.sm_clock_hz = gpu_spec(g.id).sm_clock_hz;  // the catalogue's maximum SM clock
    n.gemm_efficiency = g.gemm_efficiency;
    n.attention_efficiency = g.attention_efficiency;
    n.copy_engine_bytes_per_s = g.h2d_bytes_per_s;
    for (LinkSpec& l : n.links) l.a_to_b_bytes_per_s = std::max(l.a_to_b_bytes_per_s, g.h2d_bytes_per_s);
    n.gpu_count = 1;  // one GPU's view: the predictor prices collectives itself
    return n;
  }
  std::string known;
  for (const GpuFigures& g : kGpus) known += (known.empty() ? "" : ", ") + std::string(g.id);
  throw InputError(file, "/hardware/gpu", "expected one of " + known + ", got \"" + gpu + "\"");
}

}  // namespace chunkflow
