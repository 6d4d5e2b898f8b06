// Whole generations beside the denoising loop (issue 10 §3): text encoding and VAE decoding on one
// GPU, from the encoders' and decoders' FLOPs and bytes; formulas in model/generation.hpp.
#include "model/generation.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace chunkflow {

namespace {

// Text encoders (parameters, tokens, prompts per generation). Parameter counts of the public
// checkpoints (assumed from their sizes): T5-v1.1-XXL encoder 4.76e9 (FLUX, dit-architectures.md
// §1 "T5-v1.1-XXL, 512 tokens"), umT5-XXL encoder 5.7e9 (Wan: models_t5_umt5-xxl-enc-bf16.pth,
// 11.4 GB), LLaVA-Llama-3-8B 8.03e9 with 256 + 95 template tokens (HunyuanVideo, §1); CLIP-L
// text 123e6 × 77 tokens beside T5/LLaVA. Wan encodes the prompt and the negative prompt.
struct TextEncoder {
  double params, tokens, prompts, clip_params, clip_tokens;
};
TextEncoder text_encoder(const std::string& model, double text_tokens) {
  if (model.rfind("wan", 0) == 0) return {5.7e9, 512, 2, 0, 0};
  if (model == "hunyuanvideo") return {8.03e9, 256 + 95, 1, 123e6, 77};
  return {4.76e9, text_tokens, 1, 123e6, 77};
}
// A text encoder on the CPU (Wan --t5_cpu): 0.5 TFLOP/s fp32 on a workstation CPU (assumed).
constexpr double kHostEncoderFlopPerS = 0.5e12;

// VAE decoders: FLOPs per output pixel·frame, from their convolution stacks (3×3 convs, ~7 per
// resolution level, channels 512/512/256/128 at 1/8 .. 1 of the image for FLUX's AutoencoderKL:
// ≈ 7 MFLOP; Wan's causal 3D VAE, 3×3×3 convs, channels 384/384/192/96: ≈ 10 MFLOP (counted conv by
// conv from wan/modules/vae.py Decoder3d: 8.5 MFLOP);
// HunyuanVideo's 3D VAE, 3×3×3 convs, channels 512/512/256/128, temporal compression at the low
// levels: ≈ 15 MFLOP; my arithmetic).
//
// Wan's VAE decodes in fp32 (wan/modules/vae.py WanVAE dtype torch.float; SGLang's Wan configs
// vae_precision "fp32"), frame by frame with a feature cache, untiled, NCDHW. Its decode time
// follows the GPU's FP32 non-tensor rate, not the tensor-core peak (notes/issue-10.md, Session 7b):
// SGLang PR #16510 measured 26.28 s at 1280×720×81 on one H20 (fp32) and LightX2V measured 5.5 s at
// 832×480×81 on one H100 in bf16 (ModelTC/ComfyUI-LightVAE README, Wan2.1_VAE row), i.e. 12.7 s at
// 720p and ≈ 15–17 s in fp32 (bf16 decode is 1.2–1.3× faster than fp32: FastVideo PR #1472). The
// H100/H20 ratio ≈ 0.6 matches the FP32 CUDA-core ratio 44/66.9 = 0.66, not the TF32 tensor ratio
// 0.15 nor the HBM ratio 1.19. η_vae_fp32 = 0.65 of the FP32 non-tensor peak per counted FLOP:
// fitted on SGLang PR #16510 (74,649,600 pixels · 10 MFLOP / (26.28 s · 44 TFLOP/s) = 0.646), not
// on a record of the data set.
constexpr double kWanVaeFp32Efficiency = 0.65;
// HunyuanVideo's VAE decodes in overlapping tiles (the reference pipeline runs with vae_tiling on:
// 256-pixel spatial tiles at a 192-pixel stride and 16-frame temporal tiles at a 12-frame stride in
// diffusers' AutoencoderKLHunyuanVideo, ≈ (256/192)² · 16/12 = 2.4× the untiled convolutions), one
// tile after another on one GPU, fp16. η_vae = 0.083 of the bf16 peak per untiled FLOP: fitted on
// SGLang PR #36012 (sequential tiled decode of HunyuanVideo 848×480×77 on one H200, 5.713 s mean:
// 848·480·77 · 15 MFLOP / (5.713 s · 989 TFLOP/s) = 0.083), not on a record of the data set. No
// decode of this VAE on a second GPU was found, so its scaling across GPUs is not tested.
constexpr double kHunyuanVaeEfficiency = 0.083;
// FLUX's AutoencoderKL (bf16, 2D): the tensor-core peak at η 0.38 (assumed: the efficiency the
// earlier model fitted on SGLang PR #16510 under TF32, kept for the 2D image VAE, which has no
// measured decode of its own here; unchanged by Session 7b).
constexpr double kImageVaeEfficiency = 0.38;
double vae_flop_per_pixel(const std::string& model) {
  if (model.rfind("wan", 0) == 0) return 10e6;
  if (model == "hunyuanvideo") return 15e6;
  return 7e6;
}

}  // namespace

double text_encode_time_s(const Workload& w, const NodeSpec& n, bool encoder_on_cpu) {
  const TextEncoder e = text_encoder(w.model, double(tokens(w).text));
  const double flop = double(w.batch) * e.prompts * 2.0 * (e.params * e.tokens + e.clip_params * e.clip_tokens);
  if (encoder_on_cpu) return flop / kHostEncoderFlopPerS;
  const double bytes = 2.0 * (e.params + e.clip_params);
  return std::max(flop / (n.gemm_efficiency * n.peak_flop_per_s), bytes / n.hbm_bytes_per_s);
}

double vae_decode_time_s(const Workload& w, const NodeSpec& n) {
  const double pixels = double(w.height) * double(w.width) * double(w.frames) * double(w.batch);
  const double flop = pixels * vae_flop_per_pixel(w.model);
  if (w.model.rfind("wan", 0) == 0) {
    if (!(n.fp32_flop_per_s > 0))
      throw std::invalid_argument("vae_decode_time_s: node " + n.id + " has no fp32_flop_per_s (Wan's fp32 VAE decode)");
    return flop / (kWanVaeFp32Efficiency * n.fp32_flop_per_s);
  }
  const double eta = w.model == "hunyuanvideo" ? kHunyuanVaeEfficiency : kImageVaeEfficiency;
  return flop / (eta * n.peak_flop_per_s);
}

namespace {

// HunyuanVideo's tiled VAE decode (autoencoder_kl_causal_3d.py, VAE "884-16c-hy"): temporal
// compression 4, spatial 8; tile_latent_min_tsize = sample_tsize 64 / 4 = 16 (a tile takes 16 + 1
// latent frames), tile_latent_min_size = sample_size 256 / 2^(4 − 1) = 32; tile_overlap_factor 0.25,
// so tiles start every int(16 · 0.75) = 12 latent frames and int(32 · 0.75) = 24 latent pixels.
constexpr int64_t kHyTileLatentFrames = 16, kHyTileLatentPixels = 32;
constexpr int64_t kHyTileStrideFrames = 12, kHyTileStridePixels = 24;
constexpr double kBareEagerOpHostS = 7.5e-6;  // generation.hpp: middle of 5–10 µs (assumed)

// Σ over the tiles that start every `stride` of min(tile, extent − start).
int64_t tiled_extent_sum(int64_t extent, int64_t tile, int64_t stride) {
  int64_t sum = 0;
  for (int64_t start = 0; start < extent; start += stride) sum += std::min(tile, extent - start);
  return sum;
}

}  // namespace

int64_t hunyuan_vae_mask_rows(const Workload& w) {
  const int64_t t = (w.frames - 1) / 4 + 1, h = w.height / 8, wd = w.width / 8;
  const bool spatial = h > kHyTileLatentPixels || wd > kHyTileLatentPixels;
  const int64_t hw = spatial ? tiled_extent_sum(h, kHyTileLatentPixels, kHyTileStridePixels) *
                                   tiled_extent_sum(wd, kHyTileLatentPixels, kHyTileStridePixels)
                             : h * wd;
  const int64_t frames = t > kHyTileLatentFrames ? tiled_extent_sum(t, kHyTileLatentFrames + 1, kHyTileStrideFrames) : t;
  return frames * hw;
}

double hunyuan_vae_mask_loop_time_s(const Workload& w) { return double(hunyuan_vae_mask_rows(w)) * kBareEagerOpHostS; }

double generation_time_s(const Workload& w, const NodeSpec& n, double step_time_s) {
  return text_encode_time_s(w, n) + denoise_time_s(w, step_time_s) + vae_decode_time_s(w, n);
}

}  // namespace chunkflow
