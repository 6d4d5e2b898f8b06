#pragma once
// Peak GPU memory of a published record's whole run (issue 10 §2 "Memory"), per GPU, in bytes.
//
//   peak = max over the phases of the run of Σ (tensors resident in that phase)
//
// Wan's generate.py (framework "wan"; Wan-Video/Wan2.2 wan/text2video.py WanT2V.generate, the same
// structure in Wan2.1): three phases on the GPU that decodes (rank 0),
//   text_encode  umT5-XXL on the GPU (bf16, whole; or FSDP shards + its unsharded root + one
//                gathered block with --t5_fsdp), unless the record runs it on the CPU;
//   denoise      the DiT weights by layout (FSDP: fp32 shards of every expert, each expert's
//                unsharded bf16 root after its first forward, one gathered bf16 block; otherwise the
//                active expert whole, or every expert when nothing is offloaded) + the forward's
//                activations (wan_dit_activation_bytes);
//   vae_decode   what stays resident (FSDP shards and roots; nothing of the DiT or T5 with
//                --offload_model) + the VAE decoder's causal-conv caches and working set
//                (wan_vae_decode_bytes);
// the Wan VAE (fp32) is resident in every phase. The diffusers benchmark harness (framework
// "diffusers": one transformer, no text encoder or VAE) has one phase, "forward": the weights and
// the forward's activations (FLUX: flux_diffusers_forward_activation_bytes). Any other pipeline
// falls back to the first-order estimate of model/workload.hpp (weights by layout +
// ForwardCost::activation_bytes).
//
// What is counted is the PyTorch caching allocator's allocated bytes (torch.cuda.max_memory_allocated):
// tensors alive at the worst moment. Not counted: the allocator's reserved-but-free slack, the CUDA
// context and library workspaces (cuBLAS, cuDNN, NCCL), which nvidia-smi would add; tensors smaller
// than ~0.1 % of the peak (latents, text embeddings, rope tables of one axis). No record of
// traces/published/ is known to measure reserved memory or nvidia-smi (their caveats say which
// counter, or that the source does not say).
// Every constant is in published_memory.cpp with its source.
#include <map>
#include <string>
#include <vector>

#include "model/published.hpp"
#include "model/workload.hpp"

namespace chunkflow {

/// One phase of a run: its resident tensors by name, in bytes.
struct MemoryPhase {
  std::string name;                          ///< "text_encode", "denoise", "vae_decode", "forward"
  std::map<std::string, double> parts_bytes; ///< e.g. "dit_weights", "activations", "vae_workspace"
  double bytes() const;
};

struct PeakMemoryEstimate {
  std::vector<MemoryPhase> phases;  ///< in pipeline order
  size_t peak_phase = 0;            ///< index into phases of the largest
  double peak_bytes = 0;            ///< phases[peak_phase].bytes()
};

/// The peak-memory estimate of a record (per GPU of the record's layout; the decoding rank for
/// Wan's multi-GPU runs). Throws InputError as forward_cost for a shape the model cannot run.
PeakMemoryEstimate published_peak_memory(const PublishedRecord& r);

/// umT5-XXL encoder parameters from its config (Wan-Video/Wan2.2 wan/modules/t5.py umt5_xxl:
/// vocab 256384, dim 4096, dim_attn 4096, dim_ffn 10240, 64 heads, 24 layers, 32 buckets, no
/// shared position table, no biases): 256384·4096 + 24·(4·4096² + 3·4096·10240 + 2·4096 + 32·64)
/// + 4096 = 5,680,910,336. The token embedding (first term) is the FSDP root's unsharded part.
int64_t umt5_xxl_encoder_params();
int64_t umt5_xxl_block_params();  ///< one of the 24 encoder blocks: 192,948,224

/// Wan2.1 VAE decoder (used by Wan2.1 and Wan2.2-T2V-A14B; wan/modules/vae2_1.py Decoder3d, dim 96,
/// dim_mult [1,2,4,4], 2 residual blocks per level + 1, temporal upsampling at the two coarse
/// levels, fp32): the feature caches of its causal 3×3×3 convolutions, CACHE_T = 2 frames of each
/// cached conv's input, for an output frame of height × width pixels, in bytes:
///   2 frames · 4 B · H·W · Σ_levels channels_cached(level) / 4^level
///   = 8·H·W·(672 + 1152/4 + 2496/16 + 4240/64) = 9458·H·W
/// (full resolution: 6 residual convs + head at 96 channels; 1/2: 6 at 192; 1/4: 192 + 5·384 and the
/// time_conv at 384; 1/8: conv1 at 16, 4 middle + 6 residual convs and the time_conv at 384).
double wan_vae_decode_cache_bytes(int64_t height, int64_t width);

/// Peak bytes of the decode (one latent frame at a time, wan/modules/vae2_1.py WanVAE_.decode):
/// caches + the working set of a full-resolution residual block at its padded convolution input
/// (the block input kept as the identity shortcut, the SiLU output, the new cache slice, the
/// cached+current concatenation and its padded copy: 1 + 1 + 0.5 + 1.5 + 1.5 = 5.5 units of
/// 96 channels · vae_temporal_stride frames · H·W · 4 B) + the frames decoded before the last
/// chunk (3 channels fp32, `out` grows by torch.cat): 9458·H·W + 5.5·1536·H·W + 12·(F − 4)·H·W.
/// cuDNN's convolution workspace is not included. Throws nothing.
double wan_vae_decode_bytes(int64_t height, int64_t width, int64_t frames);

/// Per-rank activation bytes of one Wan DiT forward at its worst moment (steady-state block, the
/// self-attention's RoPE of k, or the FFN if wider), from the tensors alive in Wan's code
/// (wan/modules/model.py at P = 1, wan/distributed/sequence_parallel.py at P = Ulysses·ring > 1).
/// S = the padded sequence (seq_len), S_loc = S/P, d = hidden, F = FFN width, hd = head dim:
///   time_embedding      Wan2.2: e (fp32 [S,d]) + e0 (fp32 [S,6,d]) of the whole sequence on
///                       every rank (t.expand(seq_len); torch.chunk keeps views of them): 28·d·S;
///                       Wan2.1: one vector per sample, 0
///   residual            max(4·d·S_loc (fp32 x after the first block), 2·d·S (block 0: the
///                       bf16 patch embedding of the whole sequence, chunked as a view))
///   block_modulation    Wan2.2: (modulation + e0) of the local tokens, fp32 [S_loc,6,d]: 24·d·S_loc
///   block_transient     max(attention moment, FFN moment): P = 1: the attention's fp32 input
///                       4d, q, k, v bf16 6d, RoPE'd q fp32 4d and RoPE's float64 temporaries of k
///                       (its float64 copy, the rotated product, torch.cat and torch.stack copies,
///                       .float(): 20d at most) = 34·d·S_loc; P > 1 (RoPE reassigned, bf16 q, k
///                       freed; half() copies, all-to-alls and flash_attention's varlen copies
///                       held together): 32·d·S_loc; FFN: modulated fp32 input 4d + Linear and
///                       GELU outputs 2F + 2F
///   rope_tables         complex128 [S, hd/2] per rope_apply call: 8·hd·S (P = 1); P > 1 builds
///                       the whole sequence's table and pads it with torch.cat: 16·hd·S
///   weight_cast         fp32 weights outside FSDP (Wan2.1 without --convert_model_dtype): autocast
///                       casts each Linear's weight to bf16 per call, the widest 2·d·F
/// All bytes; `fp32_weights_unsharded` selects the last term.
struct WanActivationBytes {
  double time_embedding = 0, residual = 0, block_modulation = 0, block_transient = 0, rope_tables = 0,
         weight_cast = 0;
  double total() const { return time_embedding + residual + block_modulation + block_transient + rope_tables + weight_cast; }
};
WanActivationBytes wan_dit_activation_bytes(const Workload& w, int sequence_parallel, bool fp32_weights_unsharded);

/// Activation bytes of one eager diffusers FluxTransformer2DModel forward at its worst moment (a
/// single-stream block at the RoPE of k, diffusers transformer_flux.py FluxSingleTransformerBlock
/// and FluxAttnProcessor, embeddings.py apply_rotary_emb), in bf16 units u = 2·d·S over the joint
/// sequence S = image + text tokens: the block input 1u, the modulated norm 1u, GELU(proj_mlp) 4u,
/// q (RoPE'd), k, v 3u and apply_rotary_emb's temporaries (the rotated copy 1u, x.float()·cos,
/// x_rotated.float() and ·sin, 2u each: 7u) = 16u = 32·d·S bytes. Throws as tokens().
double flux_diffusers_forward_activation_bytes(const Workload& w);

}  // namespace chunkflow
