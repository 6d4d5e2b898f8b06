#pragma once
// The published-measurement data set (traces/published/*.json; issue 10 §1): figures other people
// measured on their hardware, as published, each a record with its source and caveats. A record
// never holds a simulated number. Source of the figures: shared/reference/published-measurements.md
// (and dit-architectures.md §5 "Calibration points").
//
// Record format (one JSON object per file, file name = id + ".json"):
//   {"id": "sgl-flux-1-step", "source": "...", "reference": "...",
//    "hardware": {"gpu": "h100-sxm", "gpu_count": 1},
//    "model": "flux.1-dev", "shape": {"height", "width", "frames", "batch", "text_tokens"?},
//    "steps": 50, "cfg": "none" | "sequential",
//    "layout": {"ulysses": 1, "ring": 1, "fsdp": false},
//    "attention": "fa2" | "fa3" | "sdpa" | "sage", "compiled": bool,
//    "framework": "sglang" | "xdit" | "wan" | "diffusers" | "hunyuanvideo" (the official
//                 HunyuanVideo repository as released; published_predict.cpp prices its host-side
//                 RoPE tables and VAE mask loop) | ...,
//    "offload": "none" | "layerwise" | "whole-model-swap" | "group-offload-leaf",
//    "text_encoder": "gpu" (default) | "cpu",
//    "measures": "per_forward" | "per_step" | "denoise_total" | "generation" | "peak_memory" | "h2d_bandwidth",
//    "figure": {"value": number > 0, "unit": "s" | "bytes" | "bytes_per_s"},
//    "caveats": ["..."], "series": "name"?, "derived": "how"?}
// A bandwidth record ("h2d_bandwidth") has no model, shape, steps, cfg, layout, attention or compiled.
#include <string>
#include <vector>

#include "model/node.hpp"
#include "model/workload.hpp"

namespace chunkflow {

enum class PublishedMeasure { per_forward, per_step, denoise_total, generation, peak_memory, h2d_bandwidth };
const char* published_measure_name(PublishedMeasure m);

struct PublishedRecord {
  std::string id, file, source, reference, framework, series, derived;
  std::string gpu;                 ///< GPU catalogue id (gpu-catalogue.md ids of issue 9)
  int gpu_count = 1;
  Workload workload;               ///< model, shape, Ulysses degree, text tokens, attention, compiled
  int ring_degree = 1;
  bool fsdp = false;
  int steps = 1;
  bool cfg_sequential = false;     ///< two forwards per step (Wan's real CFG)
  std::string offload = "none";
  bool text_encoder_on_cpu = false;
  PublishedMeasure measures = PublishedMeasure::generation;
  double value = 0;                ///< in `unit`
  std::string unit;                ///< "s", "bytes", "bytes_per_s"
  std::vector<std::string> caveats;
  int forwards_per_step() const { return cfg_sequential ? 2 : 1; }
  bool is_time() const { return unit == "s"; }
};

/// Reads one record. Throws InputError naming the file and the JSON pointer of the first bad
/// field (unknown model, shape not valid for it, Ulysses × ring ≠ GPU count, unknown enum values,
/// non-positive figure, id ≠ file stem, ...).
PublishedRecord read_published_record(const std::string& path);

/// Reads every *.json under `dir` (sorted by file name). Throws InputError for a missing or empty
/// folder, a bad record, or two records with the same id.
std::vector<PublishedRecord> load_published_records(const std::string& dir);

/// The node a record ran on, for prediction: the GPU's datasheet and measured figures
/// (gpu-catalogue.md; a minimal table until issue 9's catalogue lands), `gpu_count` GPUs. Throws
/// InputError(file, "/hardware/gpu") for a GPU not in the table.
NodeSpec published_node(const std::string& gpu, int gpu_count, const std::string& file = "");
std::vector<std::string> published_gpu_ids();

}  // namespace chunkflow
