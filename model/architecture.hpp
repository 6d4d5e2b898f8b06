#pragma once
// DiT architectures: every linear of every block kind, with the order in which a block runs them.
// Source: shared/reference/dit-architectures.md §1–§2 (shapes), §6 (Ulysses text handling).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chunkflow {

/// Which rows a linear is applied to (dit-architectures.md §2 "applied to").
enum class TokenScope {
  video,   ///< video / image tokens only (S_v rows per sample)
  text,    ///< text tokens only (T rows per sample)
  joint,   ///< the concatenated sequence (S_v + T rows per sample; FLUX/Hunyuan single blocks)
  sample,  ///< one row per sample (adaLN modulation; memory-bound)
};

/// One nn.Linear: y = x W^T + b with W of shape [out_features, in_features].
struct LinearSpec {
  std::string name;       ///< e.g. "self_attn.q", "img_mlp.0"
  int64_t in_features;    ///< K of the GEMM
  int64_t out_features;   ///< N of the GEMM
  bool bias;
  TokenScope scope;
  /// Parameters (weights + bias): in·out + (bias ? out : 0).
  int64_t params() const { return in_features * out_features + (bias ? out_features : 0); }
};

/// Attention flavours (dit-architectures.md §1 "text ↔ image", §6).
enum class AttentionKind {
  self_video,  ///< Wan self-attention over video tokens (Ulysses: 4 all-to-alls around it)
  cross_text,  ///< Wan cross-attention: video queries, text K/V; local under Ulysses
  joint,       ///< FLUX / Hunyuan joint attention over [text, video] (4 all-to-alls around it)
};

/// Which tensor an all-to-all moves (dit-architectures.md §6: Q, K, V before, O after attention).
enum class AllToAllTensor { q, k, v, o };

/// One step of a block's program, in execution order.
struct BlockStage {
  enum class Kind { linear, attention, all_to_all } kind;
  int linear_index = -1;                        ///< index into BlockKind::linears (kind == linear)
  AttentionKind attention = AttentionKind::joint;  ///< kind == attention
  AllToAllTensor tensor = AllToAllTensor::q;    ///< kind == all_to_all (skipped when P == 1)
};

/// How an elementwise kernel touches memory, which sets the share of the GPU's streaming HBM rate
/// it reaches (model/kernel_model.hpp elementwise_bytes_per_s):
enum class ElementwiseAccess {
  streaming,      ///< same-shape contiguous operands (residual add, casts, copies, activations)
  row_reduction,  ///< a reduction along each row (LayerNorm, the mean of an RMSNorm)
  broadcast,      ///< a full-size tensor with a broadcast operand (x·(1+scale)+shift, gate·y, x·cos)
};

/// A memory-bound (non-GEMM) operation of a block: norms, adaLN modulation, QK-norm, RoPE,
/// activations, gated residuals, concatenations and the Ulysses pack/unpack copies. Its HBM
/// traffic is rows · hidden · width_over_hidden · bytes_per_element, with rows those of `scope`
/// on one rank (model/workload.cpp). Eager figures count the reads and writes of every PyTorch
/// kernel the upstream forward code issues (fp32 upcasts included); fused figures are what one
/// fused kernel per op reads and writes (torch.compile / SGLang fused kernels). The counts per op
/// are in model/architecture.cpp with the code they come from.
struct ElementwiseOp {
  std::string name;
  int attach_linear = -1;               ///< the linear whose stage includes it, or −1: the attention
  AttentionKind attach_attention = AttentionKind::joint;  ///< the attention stage (attach_linear < 0)
  TokenScope scope = TokenScope::video; ///< which rows it runs over
  double width_over_hidden = 1;         ///< tensor width / d (F/d for an FFN activation)
  double eager_bytes_per_element = 0;   ///< HBM bytes read + written per element, eager
  /// Of eager_bytes_per_element: the bytes of row-reduction and of broadcast kernels (the rest are
  /// streaming; ElementwiseAccess). PyTorch eager kernels, counted from the upstream code.
  double eager_row_reduction_bytes_per_element = 0;
  double eager_broadcast_bytes_per_element = 0;
  int eager_kernels = 0;                ///< kernel launches, eager
  /// HBM bytes per element, compiled / fused, priced as streaming: a generated kernel (Inductor,
  /// SGLang's fused norms) reads a broadcast operand as a vector per tile, not through PyTorch's
  /// per-element broadcast indexing that slows the eager kernels; its row reductions are assumed
  /// to stream too (no fused kernel was measured).
  double fused_bytes_per_element = 0;
  int fused_kernels = 0;                ///< kernel launches, compiled / fused
  bool ulysses_only = false;            ///< only under sequence parallelism (P > 1)
};

/// A block kind (e.g. FLUX "double", "single"; Wan "attention_block").
struct BlockKind {
  std::string name;
  int count = 0;                      ///< how many blocks of this kind the stack has
  std::vector<LinearSpec> linears;    ///< every linear, in weight-layout order
  int64_t other_params = 0;           ///< non-linear parameters (norm scales, modulation tables)
  std::vector<BlockStage> program;    ///< execution order of linears, attentions, all-to-alls
  std::vector<ElementwiseOp> elementwise;  ///< non-GEMM ops, each priced inside one stage
  /// Parameters of one block: Σ linear params + other_params.
  int64_t params() const;
};

/// How text tokens are placed across Ulysses ranks (dit-architectures.md §6).
enum class UlyssesTextMode {
  none,        ///< no text in the self-attention sequence (Wan: cross-attention, replicated K/V)
  split,       ///< text split along the sequence with the image (diffusers FLUX _cp_plan)
  replicated,  ///< text replicated on every rank (HunyuanVideo "rear" joint strategy)
};

struct DitArchitecture {
  std::string id;                 ///< "flux.1-dev", "wan2.1-t2v-14b", ...
  std::string display_name;
  int64_t hidden = 0;             ///< d
  int heads = 0;
  int head_dim = 0;
  int64_t ffn = 0;                ///< F
  int text_tokens = 0;            ///< T entering the blocks (512 FLUX/Wan, 256 Hunyuan)
  bool video = false;             ///< frames must be 4k+1; false: images (frames must be 1)
  int vae_temporal_stride = 1;    ///< 4 for Wan/Hunyuan
  int vae_spatial_stride = 8;
  int patch_temporal = 1;
  int patch_spatial = 2;
  UlyssesTextMode text_mode = UlyssesTextMode::none;
  std::vector<BlockKind> block_kinds;   ///< in stack order (FLUX: double then single)
  int64_t non_block_params = 0;   ///< embedders, final layer (always resident)
  std::string source;             ///< where the shapes come from
  /// Mixture-of-experts over timesteps (Wan2.2 A14B): `experts` full transformers of this shape,
  /// one active per step; the first `expert_boundary` fraction of the steps run expert 0 (the
  /// high-noise expert), the rest expert 1. Parameter and weight figures are per expert.
  int experts = 1;
  double expert_boundary = 0;

  int block_count() const;        ///< Σ kind counts
  int64_t params_total() const;   ///< Σ count·block params + non_block_params
  /// Index into block_kinds of the i-th block of the stack, 0 ≤ i < block_count().
  int kind_of_block(int block) const;
};

/// The built-in architectures. Throws InputError(file="", field, ...) for an unknown id,
/// listing the known ids.
const DitArchitecture& architecture(std::string_view id, const std::string& field = "model");
std::vector<std::string> architecture_ids();

}  // namespace chunkflow
