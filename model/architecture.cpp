// Built-in DiT architectures. Every shape and parameter count below comes from
// shared/reference/dit-architectures.md §1 (summary), §2 (every Linear of a block), §4 (tokens)
// and §6 (Ulysses text handling); the reference cites the upstream source files.
#include "model/architecture.hpp"

#include <stdexcept>

#include "model/error.hpp"

namespace chunkflow {

int64_t BlockKind::params() const {
  int64_t total = other_params;
  for (const LinearSpec& l : linears) total += l.params();
  return total;
}

int DitArchitecture::block_count() const {
  int total = 0;
  for (const BlockKind& k : block_kinds) total += k.count;
  return total;
}

int64_t DitArchitecture::params_total() const {
  int64_t total = non_block_params;
  for (const BlockKind& k : block_kinds) total += int64_t(k.count) * k.params();
  return total;
}

int DitArchitecture::kind_of_block(int block) const {
  if (block >= 0) {
    int first = 0;
    for (int i = 0; i < int(block_kinds.size()); ++i) {
      first += block_kinds[size_t(i)].count;
      if (block < first) return i;
    }
  }
  throw std::out_of_range("kind_of_block: block " + std::to_string(block) + " outside [0, " +
                          std::to_string(block_count()) + ") of " + id);
}

namespace {

// Program builders. The program lists the stages in execution order; all-to-all stages are
// kept here unconditionally and dropped by forward_cost() when the Ulysses degree is 1.
BlockStage linear_stage(int index) {
  BlockStage s{BlockStage::Kind::linear};
  s.linear_index = index;
  return s;
}

BlockStage attention_stage(AttentionKind kind) {
  BlockStage s{BlockStage::Kind::attention};
  s.attention = kind;
  return s;
}

BlockStage all_to_all_stage(AllToAllTensor tensor) {
  BlockStage s{BlockStage::Kind::all_to_all};
  s.tensor = tensor;
  return s;
}

// Elementwise op helpers (see ElementwiseOp). An op attached to a linear runs just before it
// (norms, modulation) or just after the previous one (residuals); either way its time is part of
// that linear's stage.
ElementwiseOp on_linear(std::string name, int linear, TokenScope scope, double width, double eager_b, int eager_k,
                        double fused_b, int fused_k) {
  ElementwiseOp op;
  op.name = std::move(name);
  op.attach_linear = linear;
  op.scope = scope;
  op.width_over_hidden = width;
  op.eager_bytes_per_element = eager_b;
  op.eager_kernels = eager_k;
  op.fused_bytes_per_element = fused_b;
  op.fused_kernels = fused_k;
  return op;
}

ElementwiseOp on_attention(std::string name, AttentionKind kind, TokenScope scope, double eager_b, int eager_k,
                           double fused_b, int fused_k, bool ulysses_only = false) {
  ElementwiseOp op = on_linear(std::move(name), -1, scope, 1.0, eager_b, eager_k, fused_b, fused_k);
  op.attach_attention = kind;
  op.ulysses_only = ulysses_only;
  return op;
}

// Splits an op's eager bytes by access class (ElementwiseAccess): `row_reduction_b` and
// `broadcast_b` of its eager_bytes_per_element, the rest streaming.
ElementwiseOp split(ElementwiseOp op, double row_reduction_b, double broadcast_b) {
  if (row_reduction_b < 0 || broadcast_b < 0 || row_reduction_b + broadcast_b > op.eager_bytes_per_element)
    throw std::logic_error("elementwise op " + op.name + ": class bytes exceed its eager bytes");
  op.eager_row_reduction_bytes_per_element = row_reduction_b;
  op.eager_broadcast_bytes_per_element = broadcast_b;
  return op;
}

// Ulysses pack/unpack around the 4 all-to-alls (yunchang SeqAllToAll4D: reshape + contiguous
// before, and after, the collective): q, k, v, o each read and written twice in bf16 = 4 · 2 · 4 B.
ElementwiseOp ulysses_pack(AttentionKind kind, TokenScope scope) {
  return on_attention("ulysses.pack_unpack", kind, scope, 32, 8, 32, 8, true);
}

// Appends the Ulysses pattern around one attention: a2a q, k, v → attention → a2a o
// (dit-architectures.md §6: 4 all_to_all_single calls per attention layer).
void append_ulysses_attention(std::vector<BlockStage>& program, AttentionKind kind) {
  program.push_back(all_to_all_stage(AllToAllTensor::q));
  program.push_back(all_to_all_stage(AllToAllTensor::k));
  program.push_back(all_to_all_stage(AllToAllTensor::v));
  program.push_back(attention_stage(kind));
  program.push_back(all_to_all_stage(AllToAllTensor::o));
}

// FLUX DoubleStreamBlock / Hunyuan MMDoubleStreamBlock (§2): both streams' modulation and QKV, the
// joint attention, then projections and MLPs. `n` holds the ten linear names in layout order:
// img_mod, txt_mod, img_qkv, txt_qkv, img_proj, txt_proj, img_mlp_in, img_mlp_out, txt_mlp_in,
// txt_mlp_out. The layout order equals the order of first use.
BlockKind double_stream_block(int count, int64_t d, int64_t mlp, const std::vector<std::string>& n,
                              int64_t qk_norm_params) {
  BlockKind k;
  k.name = "double";
  k.count = count;
  k.linears = {
      {n[0], d, 6 * d, true, TokenScope::sample},  // adaLN: shift/scale/gate × 2
      {n[1], d, 6 * d, true, TokenScope::sample},
      {n[2], d, 3 * d, true, TokenScope::video},
      {n[3], d, 3 * d, true, TokenScope::text},
      {n[4], d, d, true, TokenScope::video},
      {n[5], d, d, true, TokenScope::text},
      {n[6], d, mlp, true, TokenScope::video},
      {n[7], mlp, d, true, TokenScope::video},
      {n[8], d, mlp, true, TokenScope::text},
      {n[9], mlp, d, true, TokenScope::text},
  };
  k.other_params = qk_norm_params;
  for (int i = 0; i < 4; ++i) k.program.push_back(linear_stage(i));
  append_ulysses_attention(k.program, AttentionKind::joint);
  for (int i = 4; i < 10; ++i) k.program.push_back(linear_stage(i));
  // Non-GEMM work per element of [joint rows × d], both streams together (diffusers
  // FluxTransformerBlock / hyvideo MMDoubleStreamBlock, bf16 activations):
  //  norm1 LayerNorm (r2 w2) + x·(1+scale)+shift (1+scale on [B, d], then 2 full-size kernels with
  //  a broadcast [B, 1, d] operand, r2 w2 each) = 12 B, 4 kernels per stream;
  //  QK RMSNorm on q and k (to fp32, pow, mean, rsqrt·x, to bf16, ·weight ≈ 30 B each: the mean a
  //  row reduction 4 B, rsqrt·x and ·weight broadcasts ≈ 10 B) = 60 B;
  //  RoPE on q and k in fp32 (rotate-half stack 8 B, x·cos 14, x_rot·sin 14, add 12, cast 6; cos and
  //  sin broadcast over batch and heads) = 108 B;
  //  cat of text and image q, k, v (r2 w2 each) = 12 B; split of the output 4 B;
  //  gate·attn + residual (gate [B, 1, d] broadcast mul 4, add 6) = 10 B; norm2 + modulation 12 B;
  //  GELU-tanh over [rows × F] (r2 w2); gate·mlp + residual 10 B.
  // Fused: one read and one write per op (norm+mod 4, QK-norm+RoPE 8, residual 6), the cat kept.
  k.elementwise = {
      split(on_linear("norm1+modulate", 2, TokenScope::joint, 1, 12, 8, 4, 2), 4, 8),
      split(on_attention("qk_rmsnorm", AttentionKind::joint, TokenScope::joint, 60, 24, 0, 0), 8, 20),
      split(on_attention("rope", AttentionKind::joint, TokenScope::joint, 108, 14, 8, 2), 0, 56),
      on_attention("joint_cat_split", AttentionKind::joint, TokenScope::joint, 16, 5, 16, 5),
      ulysses_pack(AttentionKind::joint, TokenScope::joint),
      split(on_linear("gated_residual.attn", 4, TokenScope::joint, 1, 10, 4, 6, 2), 0, 4),
      split(on_linear("norm2+modulate", 6, TokenScope::joint, 1, 12, 8, 4, 2), 4, 8),
      on_linear("gelu_tanh", 6, TokenScope::joint, double(mlp) / double(d), 4, 2, 4, 2),
      split(on_linear("gated_residual.mlp", 7, TokenScope::joint, 1, 10, 4, 6, 2), 0, 4),
  };
  return k;
}

// FLUX SingleStreamBlock / Hunyuan MMSingleStreamBlock (§2): modulation, fused qkv+mlp_in
// (3d + mlp), joint attention, fused proj+mlp_out ((d + mlp) → d), on the joint sequence.
BlockKind single_stream_block(int count, int64_t d, int64_t mlp, const std::vector<std::string>& n,
                              int64_t qk_norm_params) {
  BlockKind k;
  k.name = "single";
  k.count = count;
  k.linears = {
      {n[0], d, 3 * d, true, TokenScope::sample},
      {n[1], d, 3 * d + mlp, true, TokenScope::joint},
      {n[2], d + mlp, d, true, TokenScope::joint},
  };
  k.other_params = qk_norm_params;
  k.program.push_back(linear_stage(0));
  k.program.push_back(linear_stage(1));
  append_ulysses_attention(k.program, AttentionKind::joint);
  k.program.push_back(linear_stage(2));
  // Non-GEMM work per element of [joint rows × d] (diffusers FluxSingleTransformerBlock /
  // hyvideo MMSingleStreamBlock): norm + modulation 12 B (LayerNorm, 1+scale, two broadcast
  // kernels); QK RMSNorm 60 B; RoPE 108 B (as the double block); GELU over [rows × F];
  // cat(attn, mlp) into [rows × (d+F)] (r2 w2); gate·out + residual 10 B. Access classes and
  // fusion as in the double block.
  k.elementwise = {
      split(on_linear("norm+modulate", 1, TokenScope::joint, 1, 12, 4, 4, 1), 4, 8),
      split(on_attention("qk_rmsnorm", AttentionKind::joint, TokenScope::joint, 60, 12, 0, 0), 8, 20),
      split(on_attention("rope", AttentionKind::joint, TokenScope::joint, 108, 14, 8, 1), 0, 56),
      ulysses_pack(AttentionKind::joint, TokenScope::joint),
      on_linear("gelu_tanh", 2, TokenScope::joint, double(mlp) / double(d), 4, 1, 4, 1),
      on_linear("cat_attn_mlp", 2, TokenScope::joint, double(d + mlp) / double(d), 4, 1, 4, 1),
      split(on_linear("gated_residual", 2, TokenScope::joint, 1, 10, 2, 6, 1), 0, 4),
  };
  return k;
}

// Wan2.1 WanAttentionBlock (§2): self-attention (Ulysses), cross-attention to the 512 text
// tokens (local), FFN. other_params = modulation table (6d) + norm_q/norm_k of both attentions
// (4d, RMSNorm over the full dim) + norm3 LayerNorm affine (2d) = 12d.
BlockKind wan_block(int count, int64_t d, int64_t ffn) {
  BlockKind k;
  k.name = "attention_block";
  k.count = count;
  k.linears = {
      {"self_attn.q", d, d, true, TokenScope::video},   // 0
      {"self_attn.k", d, d, true, TokenScope::video},   // 1
      {"self_attn.v", d, d, true, TokenScope::video},   // 2
      {"self_attn.o", d, d, true, TokenScope::video},   // 3
      {"cross_attn.q", d, d, true, TokenScope::video},  // 4
      {"cross_attn.k", d, d, true, TokenScope::text},   // 5
      {"cross_attn.v", d, d, true, TokenScope::text},   // 6
      {"cross_attn.o", d, d, true, TokenScope::video},  // 7
      {"ffn.0", d, ffn, true, TokenScope::video},       // 8
      {"ffn.2", ffn, d, true, TokenScope::video},       // 9
  };
  k.other_params = 12 * d;
  for (int i = 0; i < 3; ++i) k.program.push_back(linear_stage(i));
  append_ulysses_attention(k.program, AttentionKind::self_video);
  k.program.push_back(linear_stage(3));
  for (int i = 4; i < 7; ++i) k.program.push_back(linear_stage(i));
  k.program.push_back(attention_stage(AttentionKind::cross_text));
  for (int i = 7; i < 10; ++i) k.program.push_back(linear_stage(i));
  // Non-GEMM work per element of [S_loc × d] (Wan2.1 wan/modules/model.py WanAttentionBlock; the
  // residual stream x is fp32 because the modulation runs under autocast(float32)):
  //  norm1 LayerNorm fp32 (r4 w4, row reduction) + 1+e1 on [B, d] + ·(1+e1)+e0 (r4 w4 twice,
  //  broadcast [B, 1, d] operands) + bf16 casts of the input of q, k, v under autocast (r4 w2,
  //  three times) = 8 + 16 + 18 = 42 B, 7 kernels;
  //  RMSNorm over d of q and k (float, pow, mean, rsqrt·x, type_as, ·weight ≈ 36 B each: the mean a
  //  row reduction 4 B, rsqrt·x and ·weight broadcasts ≈ 14 B) = 72 B;
  //  rope_apply in float64 complex on q and k (to f64 r2 w8, complex mul by the freqs broadcast
  //  over batch and heads r8 w8, back r8 w4, cat r4 w4 ≈ 46 B each) = 92 B; fp32 → bf16 casts of
  //  q, k for flash attention 12 B;
  //  x + y·e2 in fp32 (broadcast mul r2 w4, add r4 r4 w4) = 18 B; norm3 (row reduction 8 B) + cast
  //  14 B; cross q RMSNorm 36 B; cross residual 10 B; norm2 + modulation + cast 30 B (8 row
  //  reduction, 16 broadcast); GELU-tanh over [S × F] (r2 w2); x + y·e5 18 B.
  //  Fused: norm+mod 6 B (r4 w2), QK-norm+RoPE 8 B, residuals 10 B (fp32 stream).
  k.elementwise = {
      split(on_linear("norm1+modulate", 0, TokenScope::video, 1, 42, 7, 6, 1), 8, 16),
      split(on_attention("qk_rmsnorm", AttentionKind::self_video, TokenScope::video, 72, 12, 0, 0), 8, 28),
      split(on_attention("rope_f64", AttentionKind::self_video, TokenScope::video, 92, 16, 8, 1), 0, 32),
      on_attention("qk_casts", AttentionKind::self_video, TokenScope::video, 12, 2, 0, 0),
      ulysses_pack(AttentionKind::self_video, TokenScope::video),
      split(on_linear("gated_residual.self", 3, TokenScope::video, 1, 18, 2, 10, 1), 0, 6),
      split(on_linear("norm3", 4, TokenScope::video, 1, 14, 2, 6, 1), 8, 0),
      split(on_attention("cross_q_rmsnorm", AttentionKind::cross_text, TokenScope::video, 36, 6, 4, 1), 4, 14),
      on_linear("residual.cross", 7, TokenScope::video, 1, 10, 1, 10, 1),
      split(on_linear("norm2+modulate", 8, TokenScope::video, 1, 30, 5, 6, 1), 8, 16),
      on_linear("gelu_tanh", 8, TokenScope::video, double(ffn) / double(d), 4, 1, 4, 1),
      split(on_linear("gated_residual.ffn", 9, TokenScope::video, 1, 18, 2, 10, 1), 0, 6),
  };
  return k;
}

DitArchitecture flux_dev() {
  DitArchitecture a;
  a.id = "flux.1-dev";
  a.display_name = "FLUX.1-dev";
  a.hidden = 3072;
  a.heads = 24;
  a.head_dim = 128;
  a.ffn = 4 * 3072;
  a.text_tokens = 512;  // T5 max_length 512 (flux cli.py load_t5)
  a.video = false;
  a.vae_temporal_stride = 1;
  a.text_mode = UlyssesTextMode::split;  // diffusers FluxTransformer2DModel._cp_plan
  const std::vector<std::string> dn = {"img_mod.lin", "txt_mod.lin", "img_attn.qkv", "txt_attn.qkv",
                                       "img_attn.proj", "txt_attn.proj", "img_mlp.0", "img_mlp.2",
                                       "txt_mlp.0", "txt_mlp.2"};
  a.block_kinds.push_back(double_stream_block(19, a.hidden, a.ffn, dn, 4 * 128));
  a.block_kinds.push_back(single_stream_block(38, a.hidden, a.ffn, {"modulation.lin", "linear1", "linear2"}, 2 * 128));
  a.non_block_params = 64'124'992;
  a.source = "black-forest-labs/flux@802fb471 src/flux/util.py configs[\"flux-dev\"], modules/layers.py; "
             "dit-architectures.md §2";
  return a;
}

DitArchitecture wan(const std::string& id, const std::string& display, int64_t d, int heads, int64_t ffn,
                    int layers, int64_t non_block) {
  DitArchitecture a;
  a.id = id;
  a.display_name = display;
  a.hidden = d;
  a.heads = heads;
  a.head_dim = 128;
  a.ffn = ffn;
  a.text_tokens = 512;  // shared_config.py text_len 512, all attended (context_lens=None)
  a.video = true;
  a.vae_temporal_stride = 4;
  a.text_mode = UlyssesTextMode::none;  // cross-attention K/V computed on every rank
  a.block_kinds.push_back(wan_block(layers, d, ffn));
  a.non_block_params = non_block;
  a.source = "Wan-Video/Wan2.1@9737cba9 wan/configs/" + std::string(d == 5120 ? "wan_t2v_14B.py" : "wan_t2v_1_3B.py") +
             ", wan/modules/model.py; dit-architectures.md §2";
  return a;
}

DitArchitecture hunyuan_video() {
  DitArchitecture a;
  a.id = "hunyuanvideo";
  a.display_name = "HunyuanVideo (HYVideo-T/2-cfgdistill)";
  a.hidden = 3072;
  a.heads = 24;
  a.head_dim = 128;
  a.ffn = 4 * 3072;
  a.text_tokens = 256;  // hyvideo/config.py --text-len 256
  a.video = true;
  a.vae_temporal_stride = 4;  // "884-16c-hy" VAE
  a.text_mode = UlyssesTextMode::replicated;  // xDiT joint_strategy="rear"
  const std::vector<std::string> dn = {"img_mod.linear", "txt_mod.linear", "img_attn_qkv", "txt_attn_qkv",
                                       "img_attn_proj", "txt_attn_proj", "img_mlp.fc1", "img_mlp.fc2",
                                       "txt_mlp.fc1", "txt_mlp.fc2"};
  a.block_kinds.push_back(double_stream_block(20, a.hidden, a.ffn, dn, 4 * 128));
  a.block_kinds.push_back(
      single_stream_block(40, a.hidden, a.ffn, {"modulation.linear", "linear1", "linear2"}, 2 * 128));
  a.non_block_params = 360'714'304;
  a.source = "Tencent-Hunyuan/HunyuanVideo@fa14b001 hyvideo/modules/models.py HUNYUAN_VIDEO_CONFIG; "
             "dit-architectures.md §2";
  return a;
}

// Wan2.2 T2V-A14B: two experts, each a Wan2.1-14B-shaped transformer (published-measurements.md
// "wan22-*": "two 14B experts, one active per step; same block shape as Wan2.1-14B"); the
// high-noise expert runs the steps before the boundary 0.875 (step 35 of 40), the low-noise one
// the rest.
DitArchitecture wan22_a14b() {
  DitArchitecture a = wan("wan2.2-t2v-a14b", "Wan2.2 T2V-A14B (two 14B experts)", 5120, 40, 13824, 40, 232'719'424);
  a.experts = 2;
  a.expert_boundary = 0.875;
  a.source = "Wan-Video/Wan2.2 README.md (T2V-A14B: two experts of the Wan2.1-14B shape, boundary 0.875); "
             "dit-architectures.md §2 (the Wan2.1-14B block)";
  return a;
}

const std::vector<DitArchitecture>& registry() {
  static const std::vector<DitArchitecture> all = {
      flux_dev(),
      wan("wan2.1-t2v-14b", "Wan2.1 T2V-14B", 5120, 40, 13824, 40, 232'719'424),
      wan("wan2.1-t2v-1.3b", "Wan2.1 T2V-1.3B", 1536, 12, 8960, 30, 25'775'680),
      hunyuan_video(),
      wan22_a14b(),
  };
  return all;
}

}  // namespace

const DitArchitecture& architecture(std::string_view id, const std::string& field) {
  for (const DitArchitecture& a : registry())
    if (a.id == id) return a;
  std::string known;
  for (const std::string& k : architecture_ids()) known += (known.empty() ? "" : ", ") + k;
  throw InputError("", field, "expected one of " + known + ", got \"" + std::string(id) + "\"");
}

std::vector<std::string> architecture_ids() {
  std::vector<std::string> ids;
  for (const DitArchitecture& a : registry()) ids.push_back(a.id);
  return ids;
}

}  // namespace chunkflow
