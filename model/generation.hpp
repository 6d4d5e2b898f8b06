#pragma once
// Whole generations (issue 10 §3): generation_time_s = text encoding + denoising + VAE decode.
//   text encoding = max(2·params·tokens·prompts·batch / (η_gemm·peak), encoder bytes / HBM) on one
//                   GPU (T5-v1.1-XXL for FLUX, umT5-XXL for Wan with prompt and negative prompt,
//                   LLaVA-Llama-3-8B + CLIP-L for HunyuanVideo; parameter counts of the public
//                   checkpoints, dit-architectures.md §1), or FLOPs / 0.5 TFLOP/s on the host CPU;
//   denoising     = denoise_time_s (model/workload.hpp): steps × forwards per step × step time;
//   VAE decode    = height·width·frames·batch · decoder FLOP per output pixel / (η_vae · conv peak),
//                   η_vae = 0.38 fitted on SGLang PR #16510 (Wan2.2 720p×81 decode on one H20),
//                   Wan's VAE in fp32 at half the bf16 peak; HunyuanVideo's tiled decode
//                   η_vae = 0.083 fitted on SGLang PR #36012 (848×480×77 decode on one H200).
// Text encoding and VAE decoding run once per generation on one GPU (neither is split by Ulysses in
// the reference pipelines). Every constant is in generation.cpp with its source or "assumed".
#include "model/node.hpp"
#include "model/workload.hpp"

namespace chunkflow {

/// Text-encoder time of one generation of `w` on one GPU of `n` (or on the host CPU when
/// `encoder_on_cpu`), in seconds. Throws nothing; unknown models use FLUX's T5 + CLIP.
double text_encode_time_s(const Workload& w, const NodeSpec& n, bool encoder_on_cpu = false);

/// VAE decode time of one generation of `w` on one GPU of `n`, in seconds.
double vae_decode_time_s(const Workload& w, const NodeSpec& n);

/// text_encode_time_s + denoise_time_s(w, step_time_s) + vae_decode_time_s, in seconds;
/// `step_time_s` is the simulated time of one forward.
double generation_time_s(const Workload& w, const NodeSpec& n, double step_time_s);

}  // namespace chunkflow
