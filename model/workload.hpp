#pragma once
// Workloads: resolution, frames, batch and Ulysses degree → tokens, per-op shapes, FLOPs and bytes
// per rank. Sources: shared/reference/dit-architectures.md §4 (tokens), §5 (FLOPs), §6 (Ulysses).
#include <cstdint>
#include <string>
#include <vector>

#include "model/architecture.hpp"
#include "model/node.hpp"

namespace chunkflow {

/// The attention kernel a stack runs (issue 10 §2). `automatic`: FlashAttention-3 on Hopper,
/// FlashAttention-2 elsewhere (FA3 needs Hopper's wgmma/TMA). `sdpa` is PyTorch's
/// scaled_dot_product_attention, whose flash backend runs FlashAttention-2 kernels; `sage` is
/// SageAttention (INT8 QKᵀ). Efficiencies by kernel are in model/kernel_model.hpp.
/// `tiled`: chunkflow-hw's labelled fallback kernel (cuBLAS batched GEMMs + an online-softmax kernel,
/// model/tiled_attention.hpp); the harness's runs are predicted with it.
enum class AttentionKernel { automatic, fa2, fa3, sdpa, sage, tiled };

/// "auto", "fa2", "fa3", "sdpa", "sage", "tiled". Throws InputError(file, field, ...) naming the
/// expected values for anything else.
AttentionKernel attention_kernel_from(const std::string& name, const std::string& file = "",
                                      const std::string& field = "--attention");
const char* attention_kernel_name(AttentionKernel k);

/// Classifier-free guidance of a generation (issue 9 §3): `none` one forward per denoising step;
/// `sequential` the conditional and unconditional forwards one after the other on the same GPUs
/// (two forwards per step); `parallel` the two forwards on two GPU groups at once (one forward per
/// step per group, one gather of the noise predictions per step). `automatic` = the model's default
/// (default_cfg).
enum class CfgMode { automatic, none, sequential, parallel };

/// "auto", "none", "sequential", "parallel". Throws InputError(file, field, ...) naming the
/// expected values for anything else.
CfgMode cfg_mode_from(const std::string& name, const std::string& file = "", const std::string& field = "--cfg");
const char* cfg_mode_name(CfgMode c);

/// Which collective a collective stage runs (issue 9 §3), each a set of flows in NCCL's algorithm
/// shape on the topology's routes (sim/flows.hpp, with the formulas against nccl-tests' busbw).
enum class CollectiveKind {
  all_to_all,  ///< Ulysses: direct peer-to-peer within each group of `ulysses_degree` ranks
  ring_kv,     ///< ring attention: each rank passes its K/V block to the next rank of its ring R−1
               ///< times, overlapped with the attention (xDiT's ring): the attention does not wait
               ///< for it, the stage after the attention does
  all_reduce,  ///< tensor parallelism: ring all-reduce of a row-split linear's output in its TP group
  all_gather,  ///< FSDP: ring all-gather of a block's weight shards over the fsdp_degree ranks holding
               ///< one TP shard (every GPU used without TP), before the
               ///< block (it needs no activation: it starts as soon as the comm lane is free)
  cfg_gather,  ///< parallel CFG: each rank exchanges its noise prediction with its counterpart in
               ///< the other GPU group, once per step (after the last block)
};
const char* collective_kind_name(CollectiveKind k);  ///< "all_to_all", "ring_kv", ...

struct Workload {
  std::string model = "wan2.1-t2v-14b";  ///< architecture id
  int64_t batch = 1;                      ///< B per forward
  int64_t height = 480;                   ///< pixels
  int64_t width = 832;                    ///< pixels
  int64_t frames = 81;                    ///< 4k+1 for video models, 1 for image models
  int ulysses_degree = 1;                 ///< U (`--ulysses`; "P" where Ulysses is the only layout)
  int ring_degree = 1;                    ///< R (`--ring`): ring attention over R sequence shards
  int tp_degree = 1;                      ///< T (`--tp`): Megatron tensor parallelism
  bool fsdp = false;                      ///< `--fsdp`: block weights sharded over the fsdp_degree ranks
  int dtype_bytes = 2;                    ///< bf16
  int64_t text_tokens = 0;                ///< T entering the blocks; 0 = the architecture's default
  AttentionKernel attention = AttentionKernel::automatic;  ///< `--attention`
  bool compiled = false;                  ///< `--compile`: elementwise ops fused (fewer bytes, launches)
  /// `--harness-ops`: compute ops as chunkflow-hw executes them (model/harness_ops.hpp): its tiled
  /// attention and dataflow kernels instead of the architecture's elementwise ops. The harness plans
  /// with it, so that its plan fits what it runs; `validate` re-simulates its runs with it.
  bool harness_ops = false;
  /// Denoising steps of the generation (`--steps`, as users say it); 0 = the model's default
  /// (default_denoising_steps). Not the number of forwards the simulator plans to reach a steady
  /// state: that is PolicyConfig::steps (`--simulated-steps`).
  int denoising_steps = 0;
  CfgMode cfg = CfgMode::automatic;       ///< `--cfg`
  /// Every field equal: what a cache of results computed from a workload keys on
  /// (runtime/policy_chunkflow.cpp), so a new field counts.
  bool operator==(const Workload&) const = default;
};

/// The model's default denoising steps, as its reference pipeline runs it: Wan2.1 T2V 50
/// (generate.py sample_steps for t2v), Wan2.2 T2V-A14B 40 (its t2v config sample_steps),
/// FLUX.1-dev 28 (diffusers FluxPipeline num_inference_steps), HunyuanVideo 50 (infer_steps).
/// The same figures the published records under traces/published/ state for these pipelines.
int default_denoising_steps(const std::string& model);
/// The model's default CFG: Wan sequential (two forwards per step, guide_scale 5.0); FLUX.1-dev
/// and HunyuanVideo none (guidance-distilled: the guidance scale is an embedding input, one
/// forward per step). traces/published/ records state the same per pipeline.
CfgMode default_cfg(const std::string& model);
/// w.denoising_steps, or the model's default when 0.
int resolved_denoising_steps(const Workload& w);
/// w.cfg, or the model's default when automatic.
CfgMode resolved_cfg(const Workload& w);
/// Forwards one GPU group runs per denoising step: 2 with sequential CFG, else 1 (with parallel CFG
/// each of the two groups runs one).
int forwards_per_step(const Workload& w);
/// Denoising time of the generation on one GPU group, in seconds: steps × forwards_per_step ×
/// step_time_s, where step_time_s is the simulated steady-state time of one forward (the
/// issue 9 §3 definition; VAE, text encoder and scheduler are not included).
double denoise_time_s(const Workload& w, double step_time_s);

/// GPUs one generation uses: U × R × T × (2 with parallel CFG). Ranks are numbered with TP
/// innermost, then Ulysses, ring, CFG group (xDiT's and Megatron's order):
///   rank = ((c·R + r)·U + u)·T + t,   c ∈ {0, 1} the CFG group.
int gpus_used(const Workload& w);
/// Ranks one FSDP all-gather spans: with FSDP gpus_used(w) / T (the ranks that hold the same TP
/// shard: every Ulysses, ring and CFG coordinate at one TP coordinate, as PyTorch's 2-D parallelism
/// shards with FSDP over the data-parallel mesh dimension and splits with TP within; PyTorch
/// tutorial "Large Scale Transformer model training with Tensor Parallel (TP)"); T = 1: every GPU
/// used. 1 without FSDP.
int fsdp_degree(const Workload& w);
/// U × R: the ranks one sequence is split over.
int sequence_parallel_degree(const Workload& w);
/// The coordinates of `rank` (see gpus_used); throws std::out_of_range outside [0, gpus_used).
struct RankCoordinates {
  int cfg = 0, ring = 0, ulysses = 0, tp = 0;
};
RankCoordinates rank_coordinates(const Workload& w, int rank);
int rank_of(const Workload& w, const RankCoordinates& c);
/// "Ulysses U", then " × ring R", " × TP T", ", FSDP", ", CFG parallel" for the layouts in use.
std::string layout_text(const Workload& w);
/// Whether any layout beyond Ulysses is used (ring, TP, FSDP or parallel CFG).
bool uses_layouts_beyond_ulysses(const Workload& w);

/// How tensor parallelism splits a linear (Megatron-LM, Shoeybi et al. 2019 §3): `column` splits
/// the output features (q, k, v, qkv, MLP in; heads split with them), `row` the input features
/// (attention output projection, MLP out; an all-reduce of its output follows), `replicated` keeps
/// it whole (per-sample adaLN modulation). By name: ".o", "proj", "mlp.2", "ffn.2", "fc2",
/// "linear2" are row-split.
enum class TpSplit { replicated, column, row };
TpSplit tp_split(const LinearSpec& l);

/// Ranks the simulator executes for `w` on `node`: with Ulysses alone node.executed_ranks(U)
/// (pcie_proxy stands one GPU in: 1); with ring, TP, FSDP or parallel CFG gpus_used(w), on a
/// routed node with at least that many GPUs. Throws InputError naming the layout field
/// ("/workload/ring_degree", "/workload/tp_degree", "/workload/fsdp" or "/workload/cfg").
int executed_ranks(const Workload& w, const NodeSpec& node);

/// Token counts of one forward (dit-architectures.md §4).
struct TokenCounts {
  int64_t video = 0;        ///< S_v = ((F−1)/4+1)·(H/16)·(W/16) (video) or (H/16)(W/16) (image)
  int64_t text = 0;         ///< T
  int64_t video_padded = 0; ///< S_v rounded up to a multiple of U·R (Wan seq_len padding)
};

/// Validates a workload against its architecture (layouts: Ulysses, ring, TP, FSDP, CFG). Throws InputError naming `file` and the field
/// (JSON pointer under `prefix`, e.g. "/workload/frames") for: unknown model, batch/height/width
/// ≤ 0, height or width not a multiple of 16, frames not 4k+1 (video) or ≠ 1 (image), Ulysses
/// degree < 1 or not dividing the heads, denoising steps outside [0, 10000] (field "/steps"),
/// ring or TP degree < 1 ("/ring_degree", "/tp_degree"), U·T not dividing the heads or T not
/// dividing the hidden size and the MLP width ("/tp_degree"). FSDP with TP is valid: FSDP shards
/// each TP shard over the fsdp_degree ranks that hold it.
void validate(const Workload& w, const std::string& file = "", const std::string& prefix = "/workload");

TokenCounts tokens(const Workload& w);

/// A GEMM on one rank: [m × k] · [k × n], FLOPs = 2·m·k·n.
struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
  double flop() const { return 2.0 * double(m) * double(k) * double(n); }
  /// HBM bytes of one pass: read A [m×k] and W [k×n], write C [m×n], `dtype_bytes` each
  /// (bias and the fused epilogue not counted).
  double bytes(int dtype_bytes) const {
    return double(dtype_bytes) * (double(m) * double(k) + double(k) * double(n) + double(m) * double(n));
  }
};

/// An attention on one rank: batch·heads independent [q × hd]·[hd × kv] and [q × kv]·[kv × hd];
/// FLOPs = 4·batch·heads·q·kv·head_dim (dit-architectures.md §5).
struct AttentionShape {
  int64_t batch = 0, heads = 0, q_tokens = 0, kv_tokens = 0, head_dim = 0;
  double flop() const {
    return 4.0 * double(batch) * double(heads) * double(q_tokens) * double(kv_tokens) * double(head_dim);
  }
};

/// One stage of a block's program as one rank executes it.
struct StageCost {
  BlockStage stage;
  std::string name;            ///< linear name, "attention.self" / "attention.cross" / "attention.joint",
                               ///< or "all_to_all.q" ...
  GemmShape gemm;              ///< stage.kind == linear
  AttentionShape attention;    ///< stage.kind == attention
  double flop = 0;             ///< per rank
  double weight_bytes = 0;     ///< bytes of this linear's weights+bias (linear stages)
  double weight_offset_bytes = 0; ///< offset of those weights in the block's flat weight layout
  /// Per-rank buffer of a collective stage, in bytes (nccl-tests' per-rank size): all_to_all the
  /// send buffer B·S_loc·d/T·dtype; ring_kv one K/V block; all_reduce the reduced tensor; all_gather
  /// the rank's weight shard; cfg_gather the rank's noise prediction.
  double all_to_all_buffer_bytes = 0;
  /// Collective stages (stage.kind == all_to_all, the kind every collective stage has): which one.
  CollectiveKind collective = CollectiveKind::all_to_all;
  int collective_ranks = 1;    ///< ranks of one group of this collective (U, R, T, all, or 2)
  /// false: the collective needs no compute before it (FSDP's all-gather); true: it waits for the
  /// compute stage before it.
  bool waits_for_compute = true;
  /// The collective gates the n-th compute stage after it: 1 the next (it blocks), 2 for ring_kv
  /// (the attention overlaps it, the stage after the attention waits).
  int gates_compute = 1;
  /// all_gather: bytes allocated when it starts (the other ranks' shards), freed by the block's
  /// last compute stage.
  double gather_alloc_bytes = 0;
  /// HBM bytes of the memory-bound (non-GEMM) ops priced inside this stage (norms, modulation,
  /// RoPE, activations, residuals; DitArchitecture ElementwiseOp), eager or fused per the workload.
  double elementwise_bytes = 0;
  /// Of elementwise_bytes: the bytes moved by eager row-reduction and by eager broadcast kernels
  /// (ElementwiseAccess; the rest stream). Whoever sets elementwise_bytes sets these too (0 for
  /// kernels that stream: fused ops, chunkflow-hw's own kernels, packs); model/kernel_model.hpp
  /// elementwise_memory_time_s prices the three classes.
  double elementwise_row_reduction_bytes = 0;
  double elementwise_broadcast_bytes = 0;
  int elementwise_kernels = 0;        ///< their kernel launches
  AttentionKernel attention_kernel = AttentionKernel::automatic;  ///< attention stages
  /// Score tile of the tiled kernel (attention_kernel == tiled): one per forward, from the largest
  /// batch·heads and head dim of its attentions, as the harness sizes its one workspace per rank.
  int64_t attention_tile = 0;
  int dtype_bytes = 2;                ///< bytes per activation/weight element (GEMM traffic)
};

/// A block as one rank of a P-way Ulysses group runs it: stages in program order, all-to-alls
/// dropped when P == 1.
struct BlockCost {
  int block = 0;               ///< index in the stack
  int kind = 0;                ///< index into block_kinds
  std::vector<StageCost> stages;
  double weight_bytes = 0;     ///< whole block (linears + other params), dtype bytes each
  double linear_flop = 0;      ///< per rank
  double attention_flop = 0;   ///< per rank
  double all_to_all_bytes = 0; ///< Σ per-rank buffers of the block's all-to-alls
  /// FSDP: the block's weights are a shard (weight_bytes = whole block / GPUs used) that the
  /// all_gather stage reads; its linears read the gathered copy, no byte of the shard (runtime/
  /// step_plan.hpp stage_weight_range).
  bool weights_gathered = false;
  double flop() const { return linear_flop + attention_flop; }
};

/// Per-rank costs of one forward (one denoising step of one CFG branch).
struct ForwardCost {
  TokenCounts tokens;
  std::vector<BlockCost> blocks;     ///< block_count() entries, stack order
  double non_block_weight_bytes = 0; ///< always resident
  double weight_bytes = 0;           ///< whole model
  double flop = 0;                   ///< per rank, Σ blocks
  double activation_bytes = 0;       ///< per-rank activation/workspace estimate (see .cpp)
  double attention_workspace_bytes = 0; ///< the attention q, k, v, o part of activation_bytes
};

/// Builds the per-rank cost of a forward. Throws as validate().
ForwardCost forward_cost(const Workload& w);

/// Per-block FLOPs of the whole (unsharded) block at batch B and S_v video tokens, with the
/// linear and attention terms apart (dit-architectures.md §5 formulas, P = 1).
struct BlockFlop {
  double linear_flop = 0;
  double attention_flop = 0;
  double total() const { return linear_flop + attention_flop; }
};
BlockFlop block_flop(const DitArchitecture& arch, int kind, int64_t batch, int64_t video_tokens);

}  // namespace chunkflow
