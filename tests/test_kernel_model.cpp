// Tests of the kernel-aware compute model (model/kernel_model.*, stage_compute_time_s): per-op
// closed forms (GEMM FLOPs and bytes, wave quantization, an elementwise op's bytes, attention FLOPs
// by kernel) and the contract that non-GEMM work is priced inside the existing stages.
#include <catch2/catch.hpp>

#include <cmath>

#include "model/analytical.hpp"
#include "model/architecture.hpp"
#include "model/error.hpp"
#include "model/kernel_model.hpp"

using namespace chunkflow;

namespace {

Workload wan14b_480p(int p, bool compiled) {
  Workload w;
  w.model = "wan2.1-t2v-14b";
  w.ulysses_degree = p;
  w.compiled = compiled;
  return w;
}

const StageCost& stage_named(const BlockCost& b, const std::string& name) {
  for (const StageCost& s : b.stages)
    if (s.name == name) return s;
  FAIL("no stage " << name);
  return b.stages.front();
}

}  // namespace

TEST_CASE("a GEMM's FLOPs are 2mkn and its bytes dtype·(mk + kn + mn)") {
  const GemmShape g{4096, 3072, 12288};
  CHECK(g.flop() == 2.0 * 4096 * 3072 * 12288);
  CHECK(g.bytes(2) == 2.0 * (4096.0 * 3072 + 3072.0 * 12288 + 4096.0 * 12288));
}

TEST_CASE("wave quantization: one wave of full tiles is exact, one tile more costs a whole wave") {
  NodeSpec n = node("1xh100-sxm");  // 132 SMs
  REQUIRE(n.sm_count == 132);
  // Relative to 8192³ (2048 tiles of 128×256 = 15.5 → 16 waves; fill 8192/8448), where η is measured.
  const double reference = (2048.0 / (16 * 132)) * (8192.0 / (8192 + 256));
  CHECK(gemm_shape_factor(GemmShape{8192, 8192, 8192}, n) == Approx(1.0));
  const double k = 8192, fill = k / (k + 256);
  // 128×256 tiles: m = 128·12, n = 256·11 → 132 tiles = exactly one full wave: better than the
  // reference, capped at 1.
  CHECK(gemm_shape_factor(GemmShape{128 * 12, int64_t(k), 256 * 11}, n) == 1.0);
  // 133 tiles would need 2 waves: the best tile reaches less than a full wave.
  const double one_more = gemm_shape_factor(GemmShape{128 * 133, int64_t(k), 256}, n);
  CHECK(one_more < 1.0);
  CHECK(one_more > 0.5);
  // A single tile of any size leaves 131 of 132 SMs idle; the largest tile is then the best: 1/132.
  CHECK(gemm_shape_factor(GemmShape{64, int64_t(k), 128}, n) == Approx(1.0 / 132 * fill / reference));
  // Unknown shape or SM count: no refinement.
  CHECK(gemm_shape_factor(GemmShape{}, n) == 1.0);
  n.sm_count = 0;
  CHECK(gemm_shape_factor(GemmShape{128, 1024, 256}, n) == 1.0);
}

TEST_CASE("an elementwise op's bytes are rows · d · width · bytes per element, eager or fused") {
  // Wan norm1+modulate before self_attn.q: 42 B eager, 6 B fused per element of [S_loc × d].
  for (bool compiled : {false, true}) {
    const ForwardCost f = forward_cost(wan14b_480p(2, compiled));
    const StageCost& q = stage_named(f.blocks[0], "self_attn.q");
    const double elements = double(q.gemm.m) * 5120.0;
    CHECK(q.elementwise_bytes == Approx(elements * (compiled ? 6.0 : 42.0)));
    CHECK(q.elementwise_kernels == (compiled ? 1 : 6));
    // GELU over [S_loc × F] plus norm2+modulate over [S_loc × d] on ffn.0.
    const StageCost& ffn0 = stage_named(f.blocks[0], "ffn.0");
    CHECK(ffn0.elementwise_bytes ==
          Approx(elements * ((compiled ? 6.0 : 30.0) + 4.0 * 13824.0 / 5120.0)));
  }
}

TEST_CASE("Ulysses pack/unpack copies exist only under sequence parallelism") {
  const ForwardCost f1 = forward_cost(wan14b_480p(1, false)), f2 = forward_cost(wan14b_480p(2, false));
  const StageCost& a1 = stage_named(f1.blocks[0], "attention.self");
  const StageCost& a2 = stage_named(f2.blocks[0], "attention.self");
  // Per element of [S_loc × d]: 72 + 92 + 12 eager (+ 32 with P > 1).
  CHECK(a1.elementwise_bytes == Approx(double(f1.tokens.video) * 5120 * (72 + 92 + 12)));
  CHECK(a2.elementwise_bytes == Approx(double(f2.tokens.video_padded / 2) * 5120 * (72 + 92 + 12 + 32)));
}

TEST_CASE("non-GEMM work is priced inside the existing stages: op ids and stage lists are unchanged") {
  const ForwardCost eager = forward_cost(wan14b_480p(2, false)), fused = forward_cost(wan14b_480p(2, true));
  REQUIRE(eager.blocks[0].stages.size() == fused.blocks[0].stages.size());
  const NodeSpec n = node("2xh100-pcie");
  double eager_s = 0, fused_s = 0;
  for (size_t i = 0; i < eager.blocks[0].stages.size(); ++i) {
    const StageCost &a = eager.blocks[0].stages[i], &b = fused.blocks[0].stages[i];
    CHECK(a.name == b.name);
    CHECK(a.flop == b.flop);
    CHECK(stage_compute_time_s(a, n) >= stage_compute_time_s(b, n));  // compiling never slows a stage
    eager_s += stage_compute_time_s(a, n);
    fused_s += stage_compute_time_s(b, n);
  }
  // The difference is exactly the elementwise traffic saved over η_hbm·HBM plus the launches saved.
  double bytes_saved = 0, kernels_saved = 0;
  for (size_t i = 0; i < eager.blocks[0].stages.size(); ++i) {
    bytes_saved += eager.blocks[0].stages[i].elementwise_bytes - fused.blocks[0].stages[i].elementwise_bytes;
    kernels_saved += eager.blocks[0].stages[i].elementwise_kernels - fused.blocks[0].stages[i].elementwise_kernels;
  }
  CHECK(eager_s - fused_s ==
        Approx(bytes_saved / (n.hbm_efficiency * n.hbm_bytes_per_s) + kernels_saved * n.compute_launch_s).epsilon(1e-9));
}

TEST_CASE("attention FLOPs are 4·B·H·q·kv·hd whatever the kernel, the kernel changes only the rate") {
  NodeSpec n = node("1xh100-sxm");
  n.compute_launch_s = 0;
  StageCost s;
  s.stage.kind = BlockStage::Kind::attention;
  s.attention = AttentionShape{1, 24, 16384, 16384, 128};
  s.flop = s.attention.flop();
  CHECK(s.flop == 4.0 * 24 * 16384.0 * 16384.0 * 128);
  s.attention_kernel = AttentionKernel::fa3;
  const double fa3 = stage_compute_time_s(s, n);
  CHECK(fa3 == Approx(s.flop / (n.attention_efficiency * n.peak_flop_per_s)));  // 16k: FA3 at its ceiling
  s.attention_kernel = AttentionKernel::fa2;
  const double fa2 = stage_compute_time_s(s, n);
  s.attention_kernel = AttentionKernel::sdpa;
  CHECK(stage_compute_time_s(s, n) == fa2);  // SDPA's flash backend runs FA2 kernels
  // FA2 on H100 at 16k: 370 TFLOP/s (FA3 paper) at sustained clocks (× 743/794.5).
  CHECK(s.flop / fa2 == Approx(370e12 * 743.0 / 794.5));
  CHECK(fa2 > fa3);
  s.attention_kernel = AttentionKernel::automatic;
  CHECK(stage_compute_time_s(s, n) == fa3);  // Hopper default: FA3
}

TEST_CASE("kernel resolution: FA3 on Hopper by default, FA2 elsewhere, FA3 falls back to FA2 off Hopper") {
  NodeSpec n = node("1xh100-sxm");
  CHECK(resolve_attention_kernel(AttentionKernel::automatic, n) == AttentionKernel::fa3);
  CHECK(resolve_attention_kernel(AttentionKernel::sdpa, n) == AttentionKernel::fa2);
  n.gpu_architecture = "ampere";
  CHECK(resolve_attention_kernel(AttentionKernel::automatic, n) == AttentionKernel::fa2);
  CHECK(resolve_attention_kernel(AttentionKernel::fa3, n) == AttentionKernel::fa2);
  CHECK(resolve_attention_kernel(AttentionKernel::sage, n) == AttentionKernel::sage);
  CHECK(attention_kernel_from("fa3") == AttentionKernel::fa3);
  CHECK_THROWS_AS(attention_kernel_from("flash"), InputError);
}

TEST_CASE("shorter KV sequences run attention at a lower rate (FA3 paper curve)") {
  const NodeSpec n = node("1xh100-sxm");
  double last = 0;
  for (int64_t kv : {512, 1024, 2048, 4096, 8192, 16384}) {
    const double f = attention_kernel_factor(AttentionShape{1, 24, 16384, kv, 128}, AttentionKernel::fa3, n);
    CHECK(f > last);
    CHECK(f <= 1.0);
    last = f;
  }
  CHECK(attention_kernel_factor(AttentionShape{1, 24, 16384, 512, 128}, AttentionKernel::fa3, n) == Approx(467.0 / 648.0));
}

TEST_CASE("attention CTAs (B·H·ceil(q/128)) run in waves of SMs × CTAs per SM (FA3 1, FA2 2), relative to the curves' 2048 CTAs") {
  // fill(c, slots) = c / (ceil(c / slots) · slots); the factor is fill(shape) / fill(2048), capped at 1.
  auto fill = [](double c, double slots) { return c / (std::ceil(c / slots) * slots); };
  const NodeSpec h100 = node("1xh100-sxm");  // 132 SMs, Hopper: FA3, 1 CTA per SM
  REQUIRE(h100.sm_count == 132);
  // 133 CTAs (1 head × 133 query blocks): two waves of 132, the second almost empty. KV 16k: the
  // curve is at its ceiling, so the factor is the wave fill alone.
  const AttentionShape one_over{1, 1, 133 * 128, 16384, 128};
  CHECK(attention_kernel_factor(one_over, AttentionKernel::fa3, h100) == Approx(fill(133, 132) / fill(2048, 132)));
  CHECK(fill(133, 132) / fill(2048, 132) < 0.53);
  // Whole waves (264 CTAs) fill better than the curves' 2048 (15.5 waves): capped at 1.
  CHECK(attention_kernel_factor(AttentionShape{1, 2, 132 * 128, 16384, 128}, AttentionKernel::fa3, h100) == 1.0);
  // A partial last query block still occupies a CTA: 129 rows are two blocks.
  CHECK(attention_kernel_factor(AttentionShape{1, 66, 129, 16384, 128}, AttentionKernel::fa3, h100) == 1.0);
  // FA2 (A100: 108 SMs, 2 CTAs per SM = 216 slots): 217 CTAs take two waves.
  const NodeSpec a100 = node("8xa100-sxm");
  REQUIRE(a100.sm_count == 108);
  CHECK(attention_kernel_factor(AttentionShape{1, 1, 217 * 128, 16384, 128}, AttentionKernel::fa2, a100) ==
        Approx(fill(217, 216) / fill(2048, 216)));
}

TEST_CASE("wan2.2-t2v-a14b: two experts of the Wan2.1-14B shape, boundary 0.875") {
  const DitArchitecture& a = architecture("wan2.2-t2v-a14b");
  const DitArchitecture& b = architecture("wan2.1-t2v-14b");
  CHECK(a.experts == 2);
  CHECK(a.expert_boundary == 0.875);
  CHECK(a.params_total() == b.params_total());  // per expert
  CHECK(a.block_count() == b.block_count());
}
