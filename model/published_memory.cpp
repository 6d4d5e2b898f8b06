// Peak GPU memory of the published records' runs; formulas and scope in model/published_memory.hpp.
#include "model/published_memory.hpp"

#include <algorithm>

#include "model/architecture.hpp"

namespace chunkflow {

namespace {

// umT5-XXL encoder (Wan-Video/Wan2.2 wan/modules/t5.py umt5_xxl(): vocab_size 256384, dim 4096,
// dim_attn 4096, dim_ffn 10240, num_heads 64, encoder_layers 24, num_buckets 32, shared_pos False;
// T5Attention q/k/v/o and T5FeedForward gate/fc1/fc2 are Linear(bias=False), two T5LayerNorm
// weights per block, one T5RelativeEmbedding (num_buckets × num_heads) per block, a final norm).
// Loaded in bf16 (wan/configs shared_config.py t5_dtype = torch.bfloat16).
constexpr int64_t kT5Vocab = 256384, kT5Dim = 4096, kT5Ffn = 10240, kT5Heads = 64, kT5Layers = 24, kT5Buckets = 32;
constexpr double kT5DtypeBytes = 2;
// Wan VAE weights: Wan2.1_VAE.pth, 508 MB of fp32 (encoder and decoder; Wan2_1_VAE loads it with
// dtype=torch.float onto the GPU at construction; assumed from the checkpoint's size).
constexpr double kWanVaeWeightBytes = 508e6;
// Wan's DiT checkpoints are fp32 (dit-architectures.md §2 "Weight dtype caveat", Wan2.1 issue #162);
// Wan2.2's single-GPU command converts them with --convert_model_dtype (README, comp_effic table
// settings), Wan2.1's does not. FSDP (wan/distributed/fsdp.py shard_model) keeps the flat parameter
// shards in the checkpoint dtype and gathers in MixedPrecision param_dtype = bf16.
constexpr double kCheckpointDtypeBytes = 4, kComputeDtypeBytes = 2;
// Wan VAE decoder geometry (wan/modules/vae2_1.py _video_vae: dim 96, dim_mult [1, 2, 4, 4],
// num_res_blocks 2, temperal_downsample [False, True, True] → temperal_upsample [True, True,
// False]; CACHE_T = 2; z_dim 16), fp32 (Wan2_1_VAE dtype=torch.float).
constexpr int kVaeDim = 96, kVaeZDim = 16, kVaeCacheFrames = 2, kVaeResBlocksPerLevel = 3;
constexpr double kVaeDtypeBytes = 4, kVaeOutputChannels = 3;
// Working set of a full-resolution residual block at its padded convolution input, in units of
// one block activation (see wan_vae_decode_bytes): shortcut 1 + SiLU output 1 + new cache slice
// 0.5 + torch.cat([cache, x]) 1.5 + F.pad copy 1.5.
constexpr double kVaeResBlockWorkingUnits = 5.5;

double wan_dtype_bytes_unsharded(const std::string& model) {
  return model.rfind("wan2.1", 0) == 0 ? kCheckpointDtypeBytes : kComputeDtypeBytes;
}
// Wan2.2's WanModel.forward expands the timestep to every token (t.expand(t.size(0), seq_len)),
// so e and e0 are per token; Wan2.1's are one vector per sample.
bool wan_per_token_timestep(const std::string& model) { return model.rfind("wan2.2", 0) == 0; }

void add_part(MemoryPhase& ph, const std::string& name, double bytes) {
  if (bytes > 0) ph.parts_bytes[name] += bytes;
}

// Wan's generate.py (wan/text2video.py) on the decoding rank; see the header.
PeakMemoryEstimate wan_pipeline(const PublishedRecord& r) {
  const DitArchitecture& a = architecture(r.workload.model);
  const Workload& w = r.workload;
  const double params = double(a.params_total()), experts = double(a.experts);
  const double p = double(r.gpu_count);
  const bool fsdp = r.fsdp && r.gpu_count > 1;  // the README's multi-GPU command: --dit_fsdp --t5_fsdp
  const bool offload = r.offload == "whole-model-swap";  // --offload_model True
  const bool t5_on_gpu = !r.text_encoder_on_cpu;
  const double t5_bytes = double(umt5_xxl_encoder_params()) * kT5DtypeBytes;
  const double t5_root_bytes = double(kT5Vocab * kT5Dim) * kT5DtypeBytes;

  MemoryPhase text{"text_encode", {}}, denoise{"denoise", {}}, decode{"vae_decode", {}};
  for (MemoryPhase* ph : {&text, &denoise, &decode}) add_part(*ph, "vae_weights", kWanVaeWeightBytes);
  if (fsdp) {
    // Every expert is sharded onto the GPUs at construction; each expert's FSDP root keeps its
    // unsharded bf16 parameters (the non-block part) after its forward (torch/distributed/fsdp/
    // _runtime_utils.py _post_forward_reshard: the root is not resharded under FULL_SHARD), the
    // same for T5's root (its token embedding); one block is gathered while it runs.
    const double shards = experts * params * kCheckpointDtypeBytes / p;
    const double roots = experts * double(a.non_block_params) * kComputeDtypeBytes;
    const double t5_shards = t5_bytes / p;
    for (MemoryPhase* ph : {&text, &denoise, &decode}) {
      add_part(*ph, "dit_weights", shards);
      add_part(*ph, "text_encoder_weights", t5_shards);
    }
    // T5's root is unsharded from its first forward on (during encoding beside one gathered block).
    add_part(text, "text_encoder_weights", double(umt5_xxl_block_params()) * kT5DtypeBytes);
    for (MemoryPhase* ph : {&text, &denoise, &decode}) add_part(*ph, "text_encoder_weights", t5_root_bytes);
    add_part(denoise, "dit_weights", roots + double(a.block_kinds.front().params()) * kComputeDtypeBytes);
    add_part(decode, "dit_weights", roots);
  } else {
    const double dit = params * wan_dtype_bytes_unsharded(w.model);
    // --offload_model: the active expert alone (the other moved to the host first), T5 back on the
    // host after encoding, the DiT before decoding; otherwise everything stays.
    add_part(denoise, "dit_weights", offload ? dit : experts * dit);
    if (!offload) {
      add_part(text, "dit_weights", experts * dit);
      add_part(decode, "dit_weights", experts * dit);
    }
    if (t5_on_gpu) {
      add_part(text, "text_encoder_weights", t5_bytes);
      if (!offload) {
        add_part(denoise, "text_encoder_weights", t5_bytes);
        add_part(decode, "text_encoder_weights", t5_bytes);
      }
    }
  }
  const int sp = std::max(1, w.ulysses_degree * r.ring_degree);
  const bool fp32_unsharded = !fsdp && wan_dtype_bytes_unsharded(w.model) == kCheckpointDtypeBytes;
  const WanActivationBytes act = wan_dit_activation_bytes(w, sp, fp32_unsharded);
  add_part(denoise, "activations", act.total());
  add_part(decode, "vae_workspace", wan_vae_decode_bytes(w.height, w.width, w.frames) * double(w.batch));

  PeakMemoryEstimate e;
  e.phases = {text, denoise, decode};
  return e;
}

// Everything else: weights by layout and the first-order activation estimate of workload.hpp, or
// the diffusers FLUX forward's counted activations.
PeakMemoryEstimate single_forward(const PublishedRecord& r) {
  Workload w = r.workload;
  w.ulysses_degree *= r.ring_degree;
  const ForwardCost cost = forward_cost(w);
  double block = 0;
  for (const BlockCost& b : cost.blocks) block = std::max(block, b.weight_bytes);
  double weights = cost.weight_bytes;
  if (r.fsdp && r.gpu_count > 1) weights = cost.weight_bytes / double(r.gpu_count) + 2.0 * block;
  if (r.offload == "layerwise" || r.offload == "group-offload-leaf") weights = cost.non_block_weight_bytes + 2.0 * block;
  MemoryPhase f{"forward", {}};
  add_part(f, "dit_weights", weights);
  const bool diffusers_flux = r.framework == "diffusers" && w.model == "flux.1-dev";
  add_part(f, "activations", diffusers_flux ? flux_diffusers_forward_activation_bytes(w) : cost.activation_bytes);
  PeakMemoryEstimate e;
  e.phases = {f};
  return e;
}

}  // namespace

double MemoryPhase::bytes() const {
  double s = 0;
  for (const auto& [k, v] : parts_bytes) s += v;
  return s;
}

int64_t umt5_xxl_block_params() {
  return 4 * kT5Dim * kT5Dim + 3 * kT5Dim * kT5Ffn + 2 * kT5Dim + kT5Buckets * kT5Heads;
}

int64_t umt5_xxl_encoder_params() { return kT5Vocab * kT5Dim + kT5Layers * umt5_xxl_block_params() + kT5Dim; }

double wan_vae_decode_cache_bytes(int64_t height, int64_t width) {
  // Walk Decoder3d's construction, counting the input channels of every cached causal 3×3×3 conv
  // at its resolution level (0 = full output resolution).
  const int mult[4] = {1, 2, 4, 4};
  const int dims[5] = {kVaeDim * mult[3], kVaeDim * mult[3], kVaeDim * mult[2], kVaeDim * mult[1], kVaeDim * mult[0]};
  const bool temporal_upsample[3] = {true, true, false};
  double channels_at_level[4] = {0, 0, 0, 0};
  int level = 3;                                       // latent: 1/8 = 2^-3
  channels_at_level[level] += kVaeZDim;                // conv1 (z_dim → 384)
  channels_at_level[level] += 2.0 * 2.0 * dims[0];     // middle: 2 residual blocks × 2 convs at 384
  for (int i = 0; i < 4; ++i) {
    int in = dims[i];
    if (i >= 1) in /= 2;                               // "if i == 1 or i == 2 or i == 3: in_dim //= 2"
    for (int b = 0; b < kVaeResBlocksPerLevel; ++b) {  // num_res_blocks + 1
      channels_at_level[level] += in + dims[i + 1];    // residual conv 1 (in) and conv 2 (out)
      in = dims[i + 1];
    }
    if (i != 3) {
      if (temporal_upsample[i]) channels_at_level[level] += dims[i + 1];  // Resample.time_conv
      --level;                                          // spatial 2× upsample
    }
  }
  channels_at_level[0] += dims[4];                     // head conv (96 → 3)
  double weighted = 0;
  for (int l = 0; l < 4; ++l) weighted += channels_at_level[l] / double(1 << (2 * l));
  return double(kVaeCacheFrames) * kVaeDtypeBytes * double(height) * double(width) * weighted;
}

double wan_vae_decode_bytes(int64_t height, int64_t width, int64_t frames) {
  const double pixels = double(height) * double(width);
  const double chunk_frames = 4;  // one latent frame decodes to vae_temporal_stride = 4 frames
  const double unit = double(kVaeDim) * chunk_frames * pixels * kVaeDtypeBytes;
  const double earlier_frames = std::max(0.0, double(frames) - chunk_frames);
  return wan_vae_decode_cache_bytes(height, width) + kVaeResBlockWorkingUnits * unit +
         kVaeOutputChannels * kVaeDtypeBytes * earlier_frames * pixels;
}

WanActivationBytes wan_dit_activation_bytes(const Workload& w, int sequence_parallel, bool fp32_weights_unsharded) {
  const DitArchitecture& a = architecture(w.model);
  Workload ws = w;
  ws.ulysses_degree = std::max(1, sequence_parallel);
  ws.ring_degree = 1;
  const TokenCounts t = tokens(ws);
  const double b = double(w.batch), d = double(a.hidden), f = double(a.ffn), hd = double(a.head_dim);
  const double s = b * double(t.video_padded), s_loc = s / double(ws.ulysses_degree);
  const bool per_token = wan_per_token_timestep(w.model);
  WanActivationBytes x;
  x.time_embedding = per_token ? 28.0 * d * s : 0.0;
  x.residual = std::max(4.0 * d * s_loc, 2.0 * d * s);
  x.block_modulation = per_token ? 24.0 * d * s_loc : 0.0;
  const double attention = (ws.ulysses_degree > 1 ? 32.0 : 34.0) * d * s_loc;
  const double ffn = (4.0 * d + 4.0 * f) * s_loc;
  x.block_transient = std::max(attention, ffn);
  x.rope_tables = (ws.ulysses_degree > 1 ? 16.0 : 8.0) * hd * s;
  x.weight_cast = fp32_weights_unsharded ? 2.0 * d * f : 0.0;
  return x;
}

double flux_diffusers_forward_activation_bytes(const Workload& w) {
  const DitArchitecture& a = architecture(w.model);
  const TokenCounts t = tokens(w);
  const double joint = double(w.batch) * double(t.video + t.text);
  return 16.0 * 2.0 * double(a.hidden) * joint;
}

PeakMemoryEstimate published_peak_memory(const PublishedRecord& r) {
  PeakMemoryEstimate e = r.framework == "wan" && r.workload.model.rfind("wan", 0) == 0 ? wan_pipeline(r) : single_forward(r);
  for (size_t i = 0; i < e.phases.size(); ++i)
    if (e.phases[i].bytes() > e.peak_bytes) {
      e.peak_bytes = e.phases[i].bytes();
      e.peak_phase = i;
    }
  return e;
}

}  // namespace chunkflow
