// Workloads → tokens, per-rank stage shapes, FLOPs and bytes.
// Sources: shared/reference/dit-architectures.md §4 (tokens), §5 (FLOPs), §6 (Ulysses).
//
// Per-rank rows under Ulysses degree P (B = batch, S_v = video tokens, T = text tokens). All
// sequence shards are rounded up (ceil), so every shape is an integer and the gathered sequence
// after an all-to-all is P × the local shard, as when the sequence is padded to a multiple of P
// (Wan text2video.py seq_len = ceil(S/P)·P). With S_v and T divisible by P the ceilings are exact.
//   S_v_loc = ceil(S_v/P) = video_padded/P
//   video scope  → B·S_v_loc
//   text scope   → split: B·ceil(T/P); replicated (Hunyuan) and none (Wan cross K/V, computed
//                  redundantly on every rank): B·T
//   joint scope  → split: B·(S_v_loc + ceil(T/P)) (diffusers shards image and text tokens
//                  separately); replicated: B·(S_v_loc + T); none: B·(S_v_loc + T)
//   sample scope → B
#include "model/workload.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/error.hpp"
#include "model/limits.hpp"
#include "model/harness_ops.hpp"

namespace chunkflow {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Values of the noise prediction per video token: 16 latent channels × a 1×2×2 (Wan, Hunyuan) or
/// 2×2 (FLUX) patch = 64 for every catalogued model (dit-architectures.md §2).
constexpr double kLatentValuesPerToken = 64;

std::string join_divisors(int n) {
  std::string out;
  for (int p = 1; p <= n; ++p)
    if (n % p == 0) out += (out.empty() ? "" : ", ") + std::to_string(p);
  return out;
}

// Local sequence shards of one rank (see the file comment).
struct Shards {
  int64_t batch = 1;
  int p = 1;                ///< sequence-parallel degree U·R
  int u = 1, r = 1, t = 1;  ///< Ulysses, ring, TP degrees
  int64_t video = 0;        ///< S_v
  int64_t text = 0;         ///< T
  int64_t video_local = 0;  ///< ceil(S_v/P)
  int64_t text_local = 0;   ///< rows of text-scope linears on one rank (per sample)
  int64_t joint_local = 0;  ///< rows of joint-scope linears on one rank (per sample)
};

Shards shards(const DitArchitecture& a, const TokenCounts& t, const Workload& w) {
  Shards s;
  const int p = sequence_parallel_degree(w);
  s.batch = w.batch;
  s.p = p;
  s.u = w.ulysses_degree;
  s.r = w.ring_degree;
  s.t = w.tp_degree;
  s.video = t.video;
  s.text = t.text;
  s.video_local = t.video_padded / p;
  s.text_local = a.text_mode == UlyssesTextMode::split ? ceil_div(t.text, p) : t.text;
  s.joint_local = s.video_local + s.text_local;
  return s;
}

int64_t rows(const Shards& s, TokenScope scope) {
  switch (scope) {
    case TokenScope::video: return s.batch * s.video_local;
    case TokenScope::text: return s.batch * s.text_local;
    case TokenScope::joint: return s.batch * s.joint_local;
    case TokenScope::sample: return s.batch;
  }
  return 0;
}

// Per-rank attention shape (dit-architectures.md §5, §6) under Ulysses U, ring R (P = U·R) and
// TP T. After the Ulysses all-to-all a rank holds H/(U·T) heads of its ring shard of U·S_loc query
// tokens; ring attention brings it every K/V block of the ring, so kv covers the whole sequence
// (P·S_loc). With R = T = 1 these are the Ulysses shapes of §6:
//   Wan self:        heads H/(U·T), q = U·S_v_loc, kv = P·S_v_loc (= video_padded)
//   Wan cross:       heads H/T (local), q = S_v_loc, kv = T_text
//   joint, split:    heads H/(U·T), q = U·(S_v_loc + ceil(T/P)), kv = P·(S_v_loc + ceil(T/P))
//   joint, replicated (Hunyuan "rear", T_valid = T): heads H/(U·T), q = U·(S_v_loc + T),
//                    kv = P·S_v_loc + T (§6 at R = 1: 4·B·(S_v + P·T)·(S_v + T)·d/P)
// FLOPs per rank are then the unsharded attention's / (U·R·T) (ring: xDiT's ring attention,
// Liu et al. 2023 "Ring Attention" §3, each rank's queries against every K/V block).
AttentionShape attention_shape(const DitArchitecture& a, const Shards& s, AttentionKind kind) {
  AttentionShape at;
  at.batch = s.batch;
  at.head_dim = a.head_dim;
  at.heads = a.heads / (s.u * s.t);
  switch (kind) {
    case AttentionKind::self_video:
      at.q_tokens = s.u * s.video_local;
      at.kv_tokens = s.p * s.video_local;
      break;
    case AttentionKind::cross_text:
      at.heads = a.heads / s.t;
      at.q_tokens = s.video_local;
      at.kv_tokens = s.text;
      break;
    case AttentionKind::joint:
      if (a.text_mode == UlyssesTextMode::replicated) {
        at.q_tokens = s.u * (s.video_local + s.text);
        at.kv_tokens = s.p * s.video_local + s.text;
      } else {
        at.q_tokens = s.u * s.joint_local;
        at.kv_tokens = s.p * s.joint_local;
      }
      break;
  }
  return at;
}

// The ring attention's K/V block of one rank, in bytes: K and V of its local heads for 1/R of the
// attended sequence, 2·B·(H/(U·T))·(kv/R)·head_dim·dtype (xDiT ring: one send/recv per ring step).
double ring_kv_block_bytes(const AttentionShape& at, int ring, double dtype_bytes) {
  return 2.0 * dtype_bytes * double(at.batch) * double(at.heads) * double(at.head_dim) * double(at.kv_tokens) /
         double(ring);
}

// Local sequence length S_loc of one all-to-all buffer (§6): Wan S_v_loc; FLUX (split) the joint
// shard; Hunyuan q and o S_v_loc + T (text queries/outputs ride along), k and v S_v_loc (text K/V
// are sliced by head locally).
int64_t all_to_all_local_tokens(const DitArchitecture& a, const Shards& s, AttentionKind kind, AllToAllTensor t) {
  if (kind == AttentionKind::self_video) return s.video_local;
  if (a.text_mode == UlyssesTextMode::replicated)
    return (t == AllToAllTensor::q || t == AllToAllTensor::o) ? s.video_local + s.text : s.video_local;
  return s.joint_local;
}

// The attention an all-to-all at program position `i` belongs to: the next attention stage
// (q, k, v come before it), or the previous one for o.
AttentionKind attention_of(const BlockKind& k, size_t i) {
  const BlockStage& st = k.program[i];
  if (st.tensor == AllToAllTensor::o) {
    for (size_t j = i; j-- > 0;)
      if (k.program[j].kind == BlockStage::Kind::attention) return k.program[j].attention;
  } else {
    for (size_t j = i + 1; j < k.program.size(); ++j)
      if (k.program[j].kind == BlockStage::Kind::attention) return k.program[j].attention;
  }
  return AttentionKind::joint;
}

const char* attention_name(AttentionKind k) {
  switch (k) {
    case AttentionKind::self_video: return "attention.self";
    case AttentionKind::cross_text: return "attention.cross";
    case AttentionKind::joint: return "attention.joint";
  }
  return "attention";
}

const char* tensor_name(AllToAllTensor t) {
  switch (t) {
    case AllToAllTensor::q: return "all_to_all.q";
    case AllToAllTensor::k: return "all_to_all.k";
    case AllToAllTensor::v: return "all_to_all.v";
    case AllToAllTensor::o: return "all_to_all.o";
  }
  return "all_to_all";
}

// One block of kind `k` as one rank runs it (block index filled in by the caller).
// Rows of an elementwise op's scope on one rank, per sample. Wan's cross-attention query norm
// and the other video-scope ops run on S_v_loc rows; joint-scope ops on the joint shard.
double elementwise_rows(const Shards& s, TokenScope scope) { return double(rows(s, scope)); }

// Parameters of one linear on one rank under TP degree t: column-split weights and bias / t;
// row-split weights / t, bias whole (added once after the all-reduce); replicated whole.
double linear_params_per_rank(const LinearSpec& l, int t) {
  if (t == 1) return double(l.params());
  const double weights = double(l.in_features) * double(l.out_features), bias = l.bias ? double(l.out_features) : 0.0;
  switch (tp_split(l)) {
    case TpSplit::column: return (weights + bias) / t;
    case TpSplit::row: return weights / t + bias;
    case TpSplit::replicated: break;
  }
  return weights + bias;
}

BlockCost block_cost(const DitArchitecture& a, const BlockKind& k, const Shards& s, int dtype_bytes,
                     const Workload& w) {
  BlockCost b;
  const double dt = double(dtype_bytes);
  // Flat weight layout: linears in `linears` order, each weight then bias, other params last
  // (per rank: TP shards of the split linears).
  std::vector<double> offsets(k.linears.size(), 0.0);
  double offset = 0;
  for (size_t i = 0; i < k.linears.size(); ++i) {
    offsets[i] = offset;
    offset += linear_params_per_rank(k.linears[i], s.t) * dt;
  }
  b.weight_bytes = s.t == 1 ? double(k.params()) * dt : offset + double(k.other_params) * dt;
  const int gpus = fsdp_degree(w);
  if (w.fsdp) {
    // FSDP: each rank holds 1/N of the block (a flat shard; with TP, of its TP shard, N = the ranks
    // holding that TP shard); the all-gather before the block brings the other N−1 shards, freed
    // after the block (PyTorch FSDP FULL_SHARD, reshard after forward).
    b.weights_gathered = true;
    StageCost g;
    g.stage.kind = BlockStage::Kind::all_to_all;
    g.name = "all_gather.weights";
    g.collective = CollectiveKind::all_gather;
    g.collective_ranks = gpus;
    g.waits_for_compute = false;
    g.all_to_all_buffer_bytes = b.weight_bytes / gpus;
    g.gather_alloc_bytes = b.weight_bytes - g.all_to_all_buffer_bytes;
    g.dtype_bytes = dtype_bytes;
    b.stages.push_back(std::move(g));
    b.weight_bytes /= gpus;  // what the rank holds (and an offload policy moves): its shard
  }

  for (size_t i = 0; i < k.program.size(); ++i) {
    const BlockStage& st = k.program[i];
    StageCost c;
    c.stage = st;
    switch (st.kind) {
      case BlockStage::Kind::linear: {
        const LinearSpec& l = k.linears[size_t(st.linear_index)];
        c.name = l.name;
        const TpSplit split = s.t > 1 ? tp_split(l) : TpSplit::replicated;
        c.gemm = GemmShape{rows(s, l.scope), split == TpSplit::row ? l.in_features / s.t : l.in_features,
                           split == TpSplit::column ? l.out_features / s.t : l.out_features};
        c.flop = c.gemm.flop();
        c.weight_bytes = linear_params_per_rank(l, s.t) * dt;
        c.weight_offset_bytes = offsets[size_t(st.linear_index)];
        b.linear_flop += c.flop;
        break;
      }
      case BlockStage::Kind::attention:
        c.name = attention_name(st.attention);
        c.attention = attention_shape(a, s, st.attention);
        if (s.r > 1 && st.attention != AttentionKind::cross_text) {
          // Ring attention: the K/V blocks circulate while the attention runs (gates_compute 2).
          StageCost ring;
          ring.stage.kind = BlockStage::Kind::all_to_all;
          ring.name = "ring.kv";
          ring.collective = CollectiveKind::ring_kv;
          ring.collective_ranks = s.r;
          ring.gates_compute = 2;
          ring.all_to_all_buffer_bytes = ring_kv_block_bytes(c.attention, s.r, dt);
          ring.dtype_bytes = dtype_bytes;
          b.stages.push_back(std::move(ring));
        }
        c.flop = c.attention.flop();
        c.attention_kernel = w.attention;
        b.attention_flop += c.flop;
        break;
      case BlockStage::Kind::all_to_all: {
        if (s.u == 1) continue;  // no all-to-all without Ulysses
        c.name = tensor_name(st.tensor);
        c.collective_ranks = s.u;
        const int64_t local = all_to_all_local_tokens(a, s, attention_of(k, i), st.tensor);
        c.all_to_all_buffer_bytes = dt * double(s.batch) * double(local) * double(a.hidden / s.t);
        b.all_to_all_bytes += c.all_to_all_buffer_bytes;
        break;
      }
    }
    c.dtype_bytes = dtype_bytes;
    // The block's elementwise ops attached to this stage (ArchitectureElementwiseOp).
    for (const ElementwiseOp& op : k.elementwise) {
      if (op.ulysses_only && s.u == 1) continue;
      const bool here = st.kind == BlockStage::Kind::linear
                            ? op.attach_linear == st.linear_index
                            : (st.kind == BlockStage::Kind::attention && op.attach_linear < 0 &&
                               op.attach_attention == st.attention);
      if (!here) continue;
      const double elements = elementwise_rows(s, op.scope) * double(a.hidden) * op.width_over_hidden;
      if (w.compiled) {  // fused kernels stream (ElementwiseOp::fused_bytes_per_element)
        c.elementwise_bytes += elements * op.fused_bytes_per_element;
        c.elementwise_kernels += op.fused_kernels;
      } else {
        c.elementwise_bytes += elements * op.eager_bytes_per_element;
        c.elementwise_row_reduction_bytes += elements * op.eager_row_reduction_bytes_per_element;
        c.elementwise_broadcast_bytes += elements * op.eager_broadcast_bytes_per_element;
        c.elementwise_kernels += op.eager_kernels;
      }
    }
    const bool all_reduce = st.kind == BlockStage::Kind::linear && s.t > 1 &&
                            tp_split(k.linears[size_t(st.linear_index)]) == TpSplit::row;
    const double reduced_bytes = all_reduce ? dt * double(c.gemm.m) * double(c.gemm.n) : 0.0;
    b.stages.push_back(std::move(c));
    if (all_reduce) {  // Megatron: the row-split linear's partial sums are all-reduced in the TP group
      StageCost r;
      r.stage.kind = BlockStage::Kind::all_to_all;
      r.name = "all_reduce." + b.stages.back().name;
      r.collective = CollectiveKind::all_reduce;
      r.collective_ranks = s.t;
      r.all_to_all_buffer_bytes = reduced_bytes;
      r.dtype_bytes = dtype_bytes;
      b.stages.push_back(std::move(r));
    }
  }
  return b;
}

// Per-rank activation/workspace estimate of one block kind, in bytes:
//   dtype · B · rows_loc · (kResidentActivations · d + widest)         (token-parallel part)
// + dtype · Σ over attentions of B · (H/P or H) · head_dim · (2·q + 2·kv)  (q, k, v, o after the
//   all-to-all, full sequence for the local heads; under ring attention of degree R the K/V held
//   are two blocks, 2·kv/R: the rank's own and the one in flight)
// with rows_loc the largest per-rank row count of the block's token-scope linears and `widest`
// the largest output width of those linears (FFN/fused MLP inner activation). kResidentActivations
// counts the residual stream, the modulated-norm input, the attention output and the block output.
// A first-order figure for peak-memory accounting, not a measurement; caching allocator slack and
// attention kernel workspace are not included.
constexpr double kResidentActivations = 4.0;

/// The estimate above, and its attention part (the second term) apart.
struct ActivationBytes {
  double total = 0;
  double attention = 0;
};

ActivationBytes block_activation_bytes(const BlockCost& b, const BlockKind& k, int dtype_bytes, int64_t hidden) {
  double rows_loc = 0, widest = 0, attention_elems = 0;
  int ring = 1;  // ring attention holds two K/V blocks at a time (its own and the one in flight)
  for (const StageCost& c : b.stages) {
    if (c.stage.kind == BlockStage::Kind::linear && k.linears[size_t(c.stage.linear_index)].scope != TokenScope::sample) {
      rows_loc = std::max(rows_loc, double(c.gemm.m));
      widest = std::max(widest, double(c.gemm.n));
    } else if (c.stage.kind == BlockStage::Kind::all_to_all && c.collective == CollectiveKind::ring_kv) {
      ring = c.collective_ranks;
    } else if (c.stage.kind == BlockStage::Kind::attention) {
      const AttentionShape& at = c.attention;
      const double kv_held = ring > 1 ? std::min(1.0, 2.0 / ring) * double(at.kv_tokens) : double(at.kv_tokens);
      attention_elems += double(at.batch) * double(at.heads) * double(at.head_dim) *
                         (2.0 * double(at.q_tokens) + 2.0 * kv_held);
      ring = 1;
    }
  }
  return {double(dtype_bytes) * (rows_loc * (kResidentActivations * double(hidden) + widest) + attention_elems),
          double(dtype_bytes) * attention_elems};
}

}  // namespace

void validate(const Workload& w, const std::string& file, const std::string& prefix) {
  const std::vector<std::string> ids = architecture_ids();
  if (std::find(ids.begin(), ids.end(), w.model) == ids.end()) {
    std::string known;
    for (const std::string& id : ids) known += (known.empty() ? "" : ", ") + id;
    throw InputError(file, prefix + "/model", "expected one of " + known + ", got \"" + w.model + "\"");
  }
  const DitArchitecture& a = architecture(w.model);
  if (w.batch < 1)
    throw InputError(file, prefix + "/batch", "expected a positive integer, got " + std::to_string(w.batch));
  const int64_t pixel_multiple = int64_t(a.vae_spatial_stride) * a.patch_spatial;  // 16
  for (auto [name, value] : {std::pair{"/height", w.height}, std::pair{"/width", w.width}}) {
    if (value < 1 || value % pixel_multiple != 0)
      throw InputError(file, prefix + name,
                       "expected a positive multiple of " + std::to_string(pixel_multiple) + " pixels, got " +
                           std::to_string(value));
  }
  if (a.video) {
    const int64_t s = a.vae_temporal_stride;
    if (w.frames < 1 || (w.frames - 1) % s != 0)
      throw InputError(file, prefix + "/frames",
                       "expected an integer " + std::to_string(s) + "k+1 ≥ 1, got " + std::to_string(w.frames));
  } else if (w.frames != 1) {
    throw InputError(file, prefix + "/frames",
                     "expected 1 for the image model " + a.id + ", got " + std::to_string(w.frames));
  }
  if (w.ulysses_degree < 1 || a.heads % w.ulysses_degree != 0)
    throw InputError(file, prefix + "/ulysses_degree",
                     "expected a Ulysses degree dividing the " + std::to_string(a.heads) + " heads of " + a.id +
                         " (valid: " + join_divisors(a.heads) + "), got " + std::to_string(w.ulysses_degree));
  // The documented ranges (model/limits.hpp), after the shape rules above so that their messages
  // keep naming the rule a value breaks.
  for (auto [name, value] : {std::pair{"/height", double(w.height)}, std::pair{"/width", double(w.width)},
                             std::pair{"/frames", double(w.frames)}, std::pair{"/batch", double(w.batch)},
                             std::pair{"/ulysses_degree", double(w.ulysses_degree)},
                             std::pair{"/ring_degree", double(w.ring_degree)},
                             std::pair{"/tp_degree", double(w.tp_degree)}})
    check_range(value, std::string("/workload") + name, file, prefix + name);
  if (w.text_tokens < 0 || w.text_tokens > 1'000'000)
    throw InputError(file, prefix + "/text_tokens",
                     "expected 0 (the model's default) or a token count in [1, 1000000], got " +
                         std::to_string(w.text_tokens));
  if (w.denoising_steps < 0 || w.denoising_steps > 10000)
    throw InputError(file, prefix + "/steps",
                     "expected 0 (the model's default) or a number of denoising steps in [1, 10000], got " +
                         std::to_string(w.denoising_steps));
  if (w.ring_degree < 1)
    throw InputError(file, prefix + "/ring_degree",
                     "expected a ring attention degree ≥ 1, got " + std::to_string(w.ring_degree));
  if (w.tp_degree < 1)
    throw InputError(file, prefix + "/tp_degree",
                     "expected a tensor-parallel degree ≥ 1, got " + std::to_string(w.tp_degree));
  if (w.tp_degree > 1) {
    const int64_t ut = int64_t(w.ulysses_degree) * w.tp_degree;
    if (a.heads % ut != 0 || a.hidden % w.tp_degree != 0 || a.ffn % w.tp_degree != 0)
      throw InputError(file, prefix + "/tp_degree",
                       "expected ulysses × tp to divide the " + std::to_string(a.heads) + " heads of " + a.id +
                           " and tp to divide its hidden size " + std::to_string(a.hidden) + " and MLP width " +
                           std::to_string(a.ffn) + ", got ulysses " + std::to_string(w.ulysses_degree) + " × tp " +
                           std::to_string(w.tp_degree));
  }
  if (w.dtype_bytes < 1)
    throw InputError(file, prefix + "/dtype_bytes",
                     "expected a positive number of bytes per element, got " + std::to_string(w.dtype_bytes));
}

const char* collective_kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_to_all: return "all_to_all";
    case CollectiveKind::ring_kv: return "ring_kv";
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::cfg_gather: return "cfg_gather";
  }
  return "all_to_all";
}

int fsdp_degree(const Workload& w) { return w.fsdp ? gpus_used(w) / std::max(1, w.tp_degree) : 1; }

int sequence_parallel_degree(const Workload& w) { return w.ulysses_degree * w.ring_degree; }

int gpus_used(const Workload& w) {
  return w.ulysses_degree * w.ring_degree * w.tp_degree * (resolved_cfg(w) == CfgMode::parallel ? 2 : 1);
}

std::string layout_text(const Workload& w) {
  std::string s = "Ulysses " + std::to_string(w.ulysses_degree);
  if (w.ring_degree > 1) s += " x ring " + std::to_string(w.ring_degree);
  if (w.tp_degree > 1) s += " x TP " + std::to_string(w.tp_degree);
  if (w.fsdp) s += ", FSDP";
  if (resolved_cfg(w) == CfgMode::parallel) s += ", CFG parallel";
  return s;
}

bool uses_layouts_beyond_ulysses(const Workload& w) {
  return w.ring_degree > 1 || w.tp_degree > 1 || w.fsdp || resolved_cfg(w) == CfgMode::parallel;
}

RankCoordinates rank_coordinates(const Workload& w, int rank) {
  if (rank < 0 || rank >= gpus_used(w))
    throw std::out_of_range("rank_coordinates: rank " + std::to_string(rank) + " outside [0, " +
                            std::to_string(gpus_used(w)) + ")");
  RankCoordinates c;
  c.tp = rank % w.tp_degree;
  rank /= w.tp_degree;
  c.ulysses = rank % w.ulysses_degree;
  rank /= w.ulysses_degree;
  c.ring = rank % w.ring_degree;
  c.cfg = rank / w.ring_degree;
  return c;
}

int rank_of(const Workload& w, const RankCoordinates& c) {
  return ((c.cfg * w.ring_degree + c.ring) * w.ulysses_degree + c.ulysses) * w.tp_degree + c.tp;
}

TpSplit tp_split(const LinearSpec& l) {
  if (l.scope == TokenScope::sample) return TpSplit::replicated;
  const std::string& n = l.name;
  for (const char* suffix : {".o", "proj", "mlp.2", "ffn.2", "fc2", "linear2"}) {
    const std::size_t len = std::char_traits<char>::length(suffix);
    if (n.size() >= len && n.compare(n.size() - len, len, suffix) == 0) return TpSplit::row;
  }
  return TpSplit::column;
}

int executed_ranks(const Workload& w, const NodeSpec& node) {
  if (!uses_layouts_beyond_ulysses(w)) return node.executed_ranks(w.ulysses_degree);
  const std::string field = w.ring_degree > 1   ? "/workload/ring_degree"
                            : w.tp_degree > 1   ? "/workload/tp_degree"
                            : w.fsdp            ? "/workload/fsdp"
                                                : "/workload/cfg";
  if (node.collective == CollectiveBackend::pcie_proxy)
    throw InputError("", field,
                     "node " + node.id + " stands one GPU in for a Ulysses group (pcie-proxy); ring, TP, FSDP and "
                     "parallel CFG need a node with every GPU they use");
  const int used = gpus_used(w);
  if (used > node.gpu_count)
    throw InputError("", field,
                     "expected ulysses × ring × tp × (2 with parallel CFG) ≤ the " + std::to_string(node.gpu_count) +
                         " GPUs of node " + node.id + ", got " + std::to_string(w.ulysses_degree) + " × " +
                         std::to_string(w.ring_degree) + " × " + std::to_string(w.tp_degree) + " × " +
                         (resolved_cfg(w) == CfgMode::parallel ? "2" : "1") + " = " + std::to_string(used));
  return used;
}

CfgMode cfg_mode_from(const std::string& name, const std::string& file, const std::string& field) {
  if (name == "auto") return CfgMode::automatic;
  if (name == "none") return CfgMode::none;
  if (name == "sequential") return CfgMode::sequential;
  if (name == "parallel") return CfgMode::parallel;
  throw InputError(file, field, "expected one of none, sequential, parallel, auto, got \"" + name + "\"");
}

const char* cfg_mode_name(CfgMode c) {
  switch (c) {
    case CfgMode::automatic: return "auto";
    case CfgMode::none: return "none";
    case CfgMode::sequential: return "sequential";
    case CfgMode::parallel: return "parallel";
  }
  return "auto";
}

int default_denoising_steps(const std::string& model) {
  if (model.rfind("wan2.2", 0) == 0) return 40;
  if (model.rfind("flux", 0) == 0) return 28;
  return 50;  // Wan2.1, HunyuanVideo
}

CfgMode default_cfg(const std::string& model) {
  return model.rfind("wan", 0) == 0 ? CfgMode::sequential : CfgMode::none;
}

int resolved_denoising_steps(const Workload& w) {
  return w.denoising_steps > 0 ? w.denoising_steps : default_denoising_steps(w.model);
}

CfgMode resolved_cfg(const Workload& w) { return w.cfg == CfgMode::automatic ? default_cfg(w.model) : w.cfg; }

int forwards_per_step(const Workload& w) { return resolved_cfg(w) == CfgMode::sequential ? 2 : 1; }

double denoise_time_s(const Workload& w, double step_time_s) {
  return double(resolved_denoising_steps(w)) * double(forwards_per_step(w)) * step_time_s;
}

AttentionKernel attention_kernel_from(const std::string& name, const std::string& file, const std::string& field) {
  if (name == "auto") return AttentionKernel::automatic;
  if (name == "fa2") return AttentionKernel::fa2;
  if (name == "fa3") return AttentionKernel::fa3;
  if (name == "sdpa") return AttentionKernel::sdpa;
  if (name == "sage") return AttentionKernel::sage;
  if (name == "tiled") return AttentionKernel::tiled;
  throw InputError(file, field, "expected one of auto, fa2, fa3, sdpa, sage, tiled, got \"" + name + "\"");
}

const char* attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::automatic: return "auto";
    case AttentionKernel::fa2: return "fa2";
    case AttentionKernel::fa3: return "fa3";
    case AttentionKernel::sdpa: return "sdpa";
    case AttentionKernel::sage: return "sage";
    case AttentionKernel::tiled: return "tiled";
  }
  return "auto";
}

TokenCounts tokens(const Workload& w) {
  validate(w);
  const DitArchitecture& a = architecture(w.model);
  const int64_t spatial = int64_t(a.vae_spatial_stride) * a.patch_spatial;
  const int64_t latent_frames = (w.frames - 1) / a.vae_temporal_stride + 1;
  // Overflow-checked products: validate() caps the shapes so that these fit in 64 bits with a wide
  // margin (model/limits.hpp), and the check keeps a future cap change from silently wrapping.
  int64_t spatial_tokens = 0, video = 0, padded = 0;
  if (__builtin_mul_overflow(w.height / spatial, w.width / spatial, &spatial_tokens) ||
      __builtin_mul_overflow(latent_frames / a.patch_temporal, spatial_tokens, &video) ||
      __builtin_mul_overflow(ceil_div(video, sequence_parallel_degree(w)), int64_t(sequence_parallel_degree(w)), &padded) ||
      __builtin_mul_overflow(padded + (w.text_tokens > 0 ? w.text_tokens : a.text_tokens), w.batch, &spatial_tokens))
    throw InputError("", "/workload", "the token count of this shape overflows 64-bit integers");
  TokenCounts t;
  t.video = video;
  t.text = w.text_tokens > 0 ? w.text_tokens : a.text_tokens;
  t.video_padded = padded;
  return t;
}

ForwardCost forward_cost(const Workload& w) {
  const TokenCounts t = tokens(w);  // validates
  const DitArchitecture& a = architecture(w.model);
  const Shards s = shards(a, t, w);
  const double dt = double(w.dtype_bytes);

  ForwardCost f;
  f.tokens = t;
  std::vector<BlockCost> per_kind;
  for (const BlockKind& k : a.block_kinds) {
    per_kind.push_back(block_cost(a, k, s, w.dtype_bytes, w));
    const ActivationBytes act = block_activation_bytes(per_kind.back(), k, w.dtype_bytes, a.hidden);
    if (act.total > f.activation_bytes) {
      f.activation_bytes = act.total;
      f.attention_workspace_bytes = act.attention;
    }
  }
  if (w.harness_ops) {
    price_as_harness(per_kind, w);  // its tiled attention included
  } else if (w.attention == AttentionKernel::tiled) {
    // The harness sizes one score workspace per rank for the largest batch·heads and head dim of
    // the plan's attentions; every attention then runs with its tile (hw/executor.cu).
    const int64_t tile = harness_attention_tile(per_kind);
    for (BlockCost& b : per_kind)
      for (StageCost& st : b.stages)
        if (st.stage.kind == BlockStage::Kind::attention) st.attention_tile = tile;
  }
  for (int i = 0; i < a.block_count(); ++i) {
    const int kind = a.kind_of_block(i);
    BlockCost b = per_kind[size_t(kind)];
    b.block = i;
    b.kind = kind;
    f.flop += b.flop();
    f.blocks.push_back(std::move(b));
  }
  if (resolved_cfg(w) == CfgMode::parallel) {
    // One exchange of the noise predictions per step, after the last block: each rank sends its
    // B·S_v_loc·64 values (16 latent channels × the 1×2×2 or 2×2 patch of every catalogued model)
    // to its counterpart in the other CFG group (xDiT's CFG parallel all-gather of the two halves).
    StageCost g;
    g.stage.kind = BlockStage::Kind::all_to_all;
    g.name = "cfg_gather";
    g.collective = CollectiveKind::cfg_gather;
    g.collective_ranks = 2;
    g.all_to_all_buffer_bytes = dt * double(w.batch) * double(s.video_local) * kLatentValuesPerToken;
    g.dtype_bytes = w.dtype_bytes;
    f.blocks.back().stages.push_back(std::move(g));
  }
  f.non_block_weight_bytes = double(a.non_block_params) * dt;
  f.weight_bytes = double(a.params_total()) * dt;
  if (w.tp_degree > 1 || w.fsdp) {  // per rank: TP shards and FSDP shards of the blocks
    f.weight_bytes = f.non_block_weight_bytes;
    for (const BlockCost& b : f.blocks) f.weight_bytes += b.weight_bytes;
  }
  return f;
}

// Unsharded formulas of dit-architectures.md §5 (2 FLOPs per MAC, biases ignored):
//   double (FLUX/Hunyuan): linear 2·B·12d²·(S_v+T) + 2·B·12d²;  attention 4·B·(S_v+T)²·d
//   single (FLUX/Hunyuan): linear 2·B·12d²·(S_v+T) + 2·B·3d²;   attention 4·B·(S_v+T)²·d
// where the per-token 12d² is written as 4d² + 2dF (qkv 3d², proj d², MLP 2dF; = 12d² at F = 4d).
//   Wan:                   linear 2·B·S_v·(6d²+2dF) + 2·B·T·2d²; attention 4·B·S_v²·d + 4·B·S_v·T·d
// Hunyuan's attention uses T_valid = T (all text attended with the image). Written from the
// formulas, not from the linear list, so that tests can check forward_cost against them.
BlockFlop block_flop(const DitArchitecture& arch, int kind, int64_t batch, int64_t video_tokens) {
  const double b = double(batch), d = double(arch.hidden), f = double(arch.ffn), t = double(arch.text_tokens),
               s = double(video_tokens);
  const BlockKind& k = arch.block_kinds.at(size_t(kind));
  BlockFlop out;
  if (arch.text_mode == UlyssesTextMode::none) {  // Wan: self + cross attention + FFN
    out.linear_flop = 2 * b * s * (6 * d * d + 2 * d * f) + 2 * b * t * 2 * d * d;
    out.attention_flop = 4 * b * s * s * d + 4 * b * s * t * d;
  } else {
    const double joint = s + t;
    const double modulation = k.name == "double" ? 12 * d * d : 3 * d * d;
    out.linear_flop = 2 * b * (4 * d * d + 2 * d * f) * joint + 2 * b * modulation;
    out.attention_flop = 4 * b * joint * joint * d;
  }
  return out;
}

}  // namespace chunkflow
