#pragma once
// Whole generations (issue 10 §3): generation_time_s = text encoding + denoising + VAE decode.
//   text encoding = max(2·params·tokens·prompts·batch / (η_gemm·peak), encoder bytes / HBM) on one
//                   GPU (T5-v1.1-XXL for FLUX, umT5-XXL for Wan with prompt and negative prompt,
//                   LLaVA-Llama-3-8B + CLIP-L for HunyuanVideo; parameter counts of the public
//                   checkpoints, dit-architectures.md §1), or FLOPs / 0.5 TFLOP/s on the host CPU;
//   denoising     = denoise_time_s (model/workload.hpp): steps × forwards per step × step time;
//   VAE decode    = height·width·frames·batch · decoder FLOP per output pixel / (η_vae · rate):
//                   Wan's fp32 VAE at the FP32 non-tensor (CUDA-core) peak, η = 0.65 fitted on
//                   SGLang PR #16510 (Wan2.2 720p×81 decode on one H20), a rate cross-checked on
//                   an H100 decode (LightX2V, notes/issue-10.md Session 7b); HunyuanVideo's tiled
//                   fp16 decode at the bf16 tensor peak, η = 0.083 fitted on SGLang PR #36012
//                   (848×480×77 decode on one H200); FLUX's 2D VAE at the bf16 peak, η = 0.38.
// Text encoding and VAE decoding run once per generation on one GPU (neither is split by Ulysses in
// the reference pipelines). Every constant is in generation.cpp with its source or "assumed".
#include "model/node.hpp"
#include "model/workload.hpp"

namespace chunkflow {

/// Text-encoder time of one generation of `w` on one GPU of `n` (or on the host CPU when
/// `encoder_on_cpu`), in seconds. Throws nothing; unknown models use FLUX's T5 + CLIP.
double text_encode_time_s(const Workload& w, const NodeSpec& n, bool encoder_on_cpu = false);

/// VAE decode time of one generation of `w` on one GPU of `n`, in seconds (formula above). Throws
/// std::invalid_argument for a Wan model on a node without fp32_flop_per_s (every catalogue GPU
/// has it; a node built by hand may not).
double vae_decode_time_s(const Workload& w, const NodeSpec& n);

/// Rows that HunyuanVideo's reference VAE decode writes one at a time into its causal attention
/// masks (Tencent-Hunyuan/HunyuanVideo as released, hyvideo/vae/unet_causal_3d_blocks.py
/// prepare_causal_attention_mask: `for i in range(seq_len): mask[i, :(i // n_hw + 1) * n_hw] = 0`,
/// one eager fill per row; the decoder's mid block builds the mask on every call, seq_len = the
/// call's latent frames × height × width). The decode is tiled (hyvideo/config.py --vae-tiling on
/// by default; autoencoder_kl_causal_3d.py): latent frames T = (F−1)/4+1, H = height/8, W = width/8;
/// T > 16: temporal tiles of 17 latent frames starting every 12; spatial tiles (when H or W > 32)
/// of 32 × 32 latent pixels starting every 24, edge tiles cut at the border. Rows =
/// Σ_temporal tiles t · (Σ_rows h) · (Σ_cols w), independent of the batch (one mask per call).
/// 1280×720×129: 43 · 114 · 208 = 1,019,616. Throws nothing (frames, height, width ≥ 1).
int64_t hunyuan_vae_mask_rows(const Workload& w);

/// Host time of that row loop, in seconds: rows × the CPU cost of one eager PyTorch op issuing one
/// kernel, 7.5 µs (assumed: middle of the "5–10 µs of CPU each" per eager kernel of
/// code-review-3fa5e28.md; the Python setitem alone measured 2.6 µs per row on this project's CPU
/// machine with PyTorch 1.13, no CUDA launch). The loop issues one tiny fill kernel per row, so the
/// host, not the GPU, sets its pace. Replaced by a vectorised mask in 2025 (HunyuanVideo PR #208,
/// diffusers PR #10764), so only a record of the release-era code pays it.
double hunyuan_vae_mask_loop_time_s(const Workload& w);

/// text_encode_time_s + denoise_time_s(w, step_time_s) + vae_decode_time_s, in seconds;
/// `step_time_s` is the simulated time of one forward.
double generation_time_s(const Workload& w, const NodeSpec& n, double step_time_s);

}  // namespace chunkflow
