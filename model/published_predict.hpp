#pragma once
// Predictions for the published records (issue 10 §3, §4): one forward from the kernel model
// (stage_compute_time_s per stage) plus the collectives of the record's layout, the host's kernel
// issue bound, offload traffic, and for whole generations the text encoder and the VAE decoder.
//
//   forward   = max(GPU time, host issue time)
//     GPU     = Σ_blocks [Σ_stages (GEMM/attention core / s(N) + elementwise + launch) + Ulysses
//               all-to-alls + exposed ring and FSDP traffic] + non-block weights / HBM,
//               s(N) = slowest_gpu_rate(GPUs of the record)
//     host    = kernels · host_kernel_issue_s (eager) or · kCompiledHostFactor (compiled)
//   step      = forwards per step (2 with sequential CFG) · forward
//   denoise   = steps · step
//   generation = text encoding + denoise + VAE decode + whole-model swaps (pageable .to())
// Offload: "layerwise" (SGLang): Σ_b max(T_comp(b), T_copy(b)); "group-offload-leaf" (diffusers):
// Σ_b T_comp(b) + T_copy(b), the no-overlap upper bound of diffusers' one-leaf-lookahead schedule
// (published_predict.cpp forward_parts says why the bound is kept).
// Every constant is in published_predict.cpp with its source, "assumed", or "fitted on <ids>".
#include <map>
#include <string>
#include <vector>

#include "model/generation.hpp"
#include "model/published.hpp"

namespace chunkflow {

/// Free parameters of the published-record model, each a multiplier of the catalogue figure
/// (1 = uncalibrated): GEMM ceiling, attention ceiling, HBM efficiency, host issue cost.
struct PublishedScales {
  double gemm = 1, attention = 1, hbm = 1, host = 1;
};

struct PublishedPrediction {
  std::string id;
  double predicted = 0;                 ///< in the record's unit
  double published = 0;
  double error = 0;                     ///< (predicted − published) / published, signed
  std::string dominant;                 ///< the part with the largest share of the prediction
  std::map<std::string, double> parts;  ///< seconds (or bytes) per part of the prediction
  double forward_time_s = 0;            ///< one forward (time records)
  double kernels_per_forward = 0;       ///< kernel launches of one forward (host issue bound)
};

/// Sustained compute rate of a synchronous group of `gpus` GPUs (Ulysses all-to-alls and ring steps
/// wait for every rank) relative to one median GPU: the expected slowest of `gpus`, with the GPUs'
/// sustained rates spread uniformly below the fastest over the width that makes the slowest of 8
/// run at 727/752 of the median ([MLE-bench], gpu-catalogue.md §2.1, 8 busy H200s):
///   s(N) = (1 − w·N/(N+1)) / (1 − w/2),  w = (1 − 727/752) / (8/9 − 727/1504);  s(1) = 1.
/// The published predictor divides the GEMM and attention cores of a multi-GPU record by s(N).
double slowest_gpu_rate(int gpus);

/// All-to-all bus bandwidth (bytes one GPU sends per second, nccl-tests busbw, large messages) at
/// which the published predictor prices a Ulysses all-to-all among GPUs of catalogue id `gpu`:
/// NVSwitch boxes at NCCL's measured figures (H100/H200/H20 320 GB/s, A100 210, H800 160; sources in
/// published_predict.cpp), PCIe-only boxes 12 GB/s. The built-in NVSwitch nodes carry the same
/// figures on their NVLink links (model/nodes/8x*.json; a test keeps the two equal). No errors.
double published_all_to_all_bytes_per_s(const std::string& gpu);

/// Node of the record with the scales applied (efficiencies clamped to 1).
NodeSpec published_record_node(const PublishedRecord& r, const PublishedScales& scales = {});

/// Predicts one record. Throws InputError (naming the record's file) if it is not expressible.
PublishedPrediction predict_published(const PublishedRecord& r, const PublishedScales& scales = {});

/// Text encoding and VAE decode of a record (model/generation.hpp; its text encoder on the CPU when
/// the record says so).
double text_encode_time_s(const PublishedRecord& r, const NodeSpec& n);
double vae_decode_time_s(const PublishedRecord& r, const NodeSpec& n);

}  // namespace chunkflow
