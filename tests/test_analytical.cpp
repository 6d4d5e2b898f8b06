// Tests of model/analytical: the closed forms of its header (T_comp, T_pref, F*, B_hide, auto R).
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

#include "model/analytical.hpp"

using namespace chunkflow;

namespace {

constexpr double kRelTolerance = 1e-12;  // closed forms evaluated in the same double arithmetic

Workload make(const std::string& model, int64_t h, int64_t w, int64_t frames, int p) {
  Workload x;
  x.model = model;
  x.height = h;
  x.width = w;
  x.frames = frames;
  x.ulysses_degree = p;
  return x;
}

// A node with round numbers: peak 100 FLOP/s, η_comp 0.5, η_attn 0.25, HBM 10 B/s, H2D 4 B/s,
// no launch cost.
NodeSpec toy_node() {
  NodeSpec n;
  n.id = "toy";
  n.gpu_count = 1;
  n.peak_flop_per_s = 100;
  n.hbm_bytes_per_s = 10;
  n.gpu_memory_bytes = 1e9;
  n.gemm_efficiency = 0.5;
  n.attention_efficiency = 0.25;
  n.compute_launch_s = 0;
  n.copy_engine_bytes_per_s = 4;
  n.collective_flow_bytes_per_s = 1;
  LinkSpec l;
  l.name = "pcie.gpu0";
  l.a = "host";
  l.b = "gpu0";
  l.a_to_b_bytes_per_s = 8;  // the copy engine (4) is the narrower
  l.b_to_a_bytes_per_s = 8;
  n.links.push_back(l);
  return n;
}

StageCost linear(double flop, double weight_bytes) {
  StageCost s;
  s.stage.kind = BlockStage::Kind::linear;
  s.flop = flop;
  s.weight_bytes = weight_bytes;
  return s;
}

StageCost attention(double flop) {
  StageCost s;
  s.stage.kind = BlockStage::Kind::attention;
  s.flop = flop;
  return s;
}

StageCost all_to_all(double buffer_bytes) {
  StageCost s;
  s.stage.kind = BlockStage::Kind::all_to_all;
  s.all_to_all_buffer_bytes = buffer_bytes;
  return s;
}

// A block of one linear (flop, bytes), one attention (attn_flop) and one all-to-all (buffer).
BlockCost toy_block(double flop, double bytes, double attn_flop, double buffer) {
  BlockCost b;
  b.stages = {linear(flop, bytes), all_to_all(buffer), attention(attn_flop)};
  b.weight_bytes = bytes;
  b.linear_flop = flop;
  b.attention_flop = attn_flop;
  b.all_to_all_bytes = buffer;
  return b;
}

}  // namespace

TEST_CASE("stage time: linear max(flop/(η·peak), bytes/HBM) + launch, attention flop/(η_attn·peak) + launch, a2a 0") {
  NodeSpec n = toy_node();
  n.compute_launch_s = 0.5;
  CHECK(stage_compute_time_s(linear(100, 1), n) == Approx(2.0 + 0.5));   // compute-bound: 100/50
  CHECK(stage_compute_time_s(linear(10, 100), n) == Approx(10.0 + 0.5)); // memory-bound: 100/10
  CHECK(stage_compute_time_s(attention(50), n) == Approx(2.0 + 0.5));    // 50/25
  CHECK(stage_compute_time_s(all_to_all(1e9), n) == 0);
  const BlockCost b = toy_block(100, 1, 50, 8);
  CHECK(block_compute_time_s(b, n) == Approx(2.5 + 2.5));
}

TEST_CASE("doubling peak FLOP/s halves the compute-bound time (no launch cost)") {
  const ForwardCost f = forward_cost(make("wan2.1-t2v-14b", 480, 832, 81, 2));
  NodeSpec n = node("2xh100-pcie");
  n.compute_launch_s = 0;
  n.hbm_bytes_per_s = std::numeric_limits<double>::infinity();  // drop the memory floor
  n.sm_clock_hz = 0;  // and the per-SM limit of eager broadcast kernels (kernel_model.hpp)
  const double t1 = block_compute_time_s(f.blocks[0], n);
  n.peak_flop_per_s *= 2;
  const double t2 = block_compute_time_s(f.blocks[0], n);
  CHECK(t2 == Approx(t1 / 2).epsilon(kRelTolerance));
}

TEST_CASE("collective inbound bytes are (P-1)/P of the block's all-to-all buffers, 0 at P=1") {
  const BlockCost b = toy_block(1, 1, 1, 12);
  CHECK(collective_inbound_bytes(b, 1) == 0);
  CHECK(collective_inbound_bytes(b, 2) == Approx(6));
  CHECK(collective_inbound_bytes(b, 4) == Approx(9));
  const ForwardCost f = forward_cost(make("wan2.1-t2v-14b", 480, 832, 81, 2));
  CHECK(collective_inbound_bytes(f.blocks[0], 2) == Approx(f.blocks[0].all_to_all_bytes / 2));
}

TEST_CASE("F*, B_hide, regime and auto R on a hand-computed two-block case") {
  // Toy node: GEMM η·peak = 50 FLOP/s, η_pref·BW_h2d = min(8, 4) = 4 B/s, P = 2.
  // Block 0: linear 100 FLOP, 20 B; attention 25 FLOP; a2a buffer 8 B.
  //   T_comp = max(100/50, 20/10) + 25/25 = 2 + 1 = 3 s
  //   B_coll_in = 8·1/2 = 4 B;   B_hide = 4·3 − 4 = 8 B;   1 − 8/20 = 0.6
  // Block 1: linear 50 FLOP, 40 B; attention 0; a2a buffer 0.
  //   T_comp = max(50/50, 40/10) = 4 s;  B_coll_in = 0;  B_hide = 16 B;  1 − 16/40 = 0.6 → also 0.6
  ForwardCost f;
  f.blocks = {toy_block(100, 20, 25, 8), toy_block(50, 40, 0, 0)};
  f.blocks[1].stages.pop_back();  // no attention stage in block 1
  const AnalyticalResult r = analyze(f, toy_node(), 2);
  CHECK(r.effective_flop_per_s == Approx(87.5 / 3.5));  // F_block / T_comp = 25 FLOP/s
  CHECK(r.h2d_bytes_per_s == 4);
  CHECK(r.block_flop == Approx((125.0 + 50.0) / 2));
  CHECK(r.block_weight_bytes == Approx(30));
  CHECK(r.collective_inbound_bytes == Approx(2));
  CHECK(r.compute_time_s == Approx(3.5));
  CHECK(r.prefetch_time_s == Approx(30.0 / 4));
  // F* = 25 · (30 + 2) / 4 = 200 FLOP
  CHECK(r.critical_flop == Approx(200));
  CHECK(r.regime == "prefetch-bound");  // 87.5 < 200, i.e. T_comp 3.5 s < (30 + 2) / 4 = 8 s
  CHECK(r.hideable_bytes == Approx((8.0 + 16.0) / 2));
  CHECK(r.auto_resident_fraction == Approx(0.6));
}

TEST_CASE("auto resident fraction is the worst block's 1 − B_hide/B_block, clamped to [0, 1]") {
  ForwardCost f;
  // Block 0 hides everything (T_comp = 100 s, 4·100 ≫ 10 B) → 0; block 1: T_comp = 1 s, a2a
  // inbound 10·1/2 = 5 B > 4·1 B → B_hide = 0 → 1.
  f.blocks = {toy_block(5000, 10, 0, 0), toy_block(50, 10, 0, 10)};
  const AnalyticalResult r = analyze(f, toy_node(), 2);
  CHECK(r.auto_resident_fraction == 1.0);
  f.blocks.pop_back();
  CHECK(analyze(f, toy_node(), 2).auto_resident_fraction == 0.0);
}

TEST_CASE("with infinite H2D bandwidth the regime is compute-bound and auto R = 0") {
  NodeSpec n = node("2xh100-pcie");
  n.copy_engine_bytes_per_s = std::numeric_limits<double>::infinity();
  for (auto& l : n.links) l.a_to_b_bytes_per_s = std::numeric_limits<double>::infinity();
  const AnalyticalResult r = analyze(forward_cost(make("flux.1-dev", 512, 512, 1, 2)), n, 2);
  CHECK(r.critical_flop == 0);
  CHECK(r.prefetch_time_s == 0);
  CHECK(r.regime == "compute-bound");
  CHECK(r.auto_resident_fraction == 0);
}

TEST_CASE("F* is the achieved rate times the link time of a block, it scales with peak and inversely with H2D rate") {
  const ForwardCost f = forward_cost(make("wan2.1-t2v-14b", 480, 832, 81, 2));
  NodeSpec n = node("2xh100-pcie");
  n.compute_launch_s = 0;                 // so that every stage time is FLOPs / (η · peak) exactly
  n.hbm_bytes_per_s = std::numeric_limits<double>::infinity();
  n.sm_clock_hz = 0;  // no per-SM limit on eager broadcast kernels (kernel_model.hpp)
  const AnalyticalResult a = analyze(f, n, 2);
  const double link_s = (a.block_weight_bytes + a.collective_inbound_bytes) / n.h2d_bytes_per_s(0);
  CHECK(a.effective_flop_per_s == Approx(a.block_flop / a.compute_time_s).epsilon(kRelTolerance));
  CHECK(a.critical_flop == Approx(a.effective_flop_per_s * link_s).epsilon(kRelTolerance));
  // The achieved rate lies between the attention and the GEMM efficiency times peak.
  CHECK(a.effective_flop_per_s >= n.attention_efficiency * n.peak_flop_per_s * (1 - kRelTolerance));
  CHECK(a.effective_flop_per_s <= n.gemm_efficiency * n.peak_flop_per_s * (1 + kRelTolerance));
  NodeSpec faster = n;
  faster.peak_flop_per_s *= 2;
  CHECK(analyze(f, faster, 2).critical_flop == Approx(2 * a.critical_flop).epsilon(kRelTolerance));
  NodeSpec slower_link = n;
  slower_link.copy_engine_bytes_per_s /= 2;
  CHECK(analyze(f, slower_link, 2).critical_flop == Approx(2 * a.critical_flop).epsilon(kRelTolerance));
}

TEST_CASE("the regime agrees with B_hide: prefetch-bound exactly when the mean block cannot hide its prefetch") {
  for (const auto& w : {make("wan2.1-t2v-14b", 480, 832, 81, 2), make("wan2.1-t2v-14b", 720, 1280, 17, 2),
                        make("hunyuanvideo", 544, 960, 33, 2), make("flux.1-dev", 1024, 1024, 1, 2)}) {
    const AnalyticalResult r = analyze(forward_cost(w), node("2xh100-pcie"), 2);
    const double hide_mean = r.h2d_bytes_per_s * r.compute_time_s - r.collective_inbound_bytes;
    INFO(w.model << " " << w.height << "x" << w.width << "x" << w.frames << ": " << r.regime);
    CHECK((r.regime == "prefetch-bound") == (hide_mean < r.block_weight_bytes));
  }
}

TEST_CASE("Wan-14B 480p P=2 on 2xh100-pcie is compute-bound (F_block ≈ 21 TF > F*)") {
  const AnalyticalResult r = analyze(forward_cost(make("wan2.1-t2v-14b", 480, 832, 81, 2)), node("2xh100-pcie"), 2);
  INFO("F_block " << r.block_flop << " F* " << r.critical_flop << " auto R " << r.auto_resident_fraction);
  CHECK(r.regime == "compute-bound");
  CHECK(r.block_flop / 1e12 == Approx(20.98 + 0.027).margin(0.01));  // 41.96/2 + replicated text K/V half
  CHECK(r.critical_flop < r.block_flop);
  CHECK(r.auto_resident_fraction == 0);
}

TEST_CASE("FLUX 512² P=2 on 2xh100-pcie is prefetch-bound and needs residency") {
  const AnalyticalResult r = analyze(forward_cost(make("flux.1-dev", 512, 512, 1, 2)), node("2xh100-pcie"), 2);
  INFO("F_block " << r.block_flop << " F* " << r.critical_flop << " auto R " << r.auto_resident_fraction);
  CHECK(r.regime == "prefetch-bound");
  // ≥ 5× short of F*: the kernel model's elementwise traffic and wave quantization lengthen T_comp
  // (issue 10), so the margin is smaller than with flat efficiencies (it was 10×).
  CHECK(r.block_flop < r.critical_flop / 5);
  CHECK(r.auto_resident_fraction > 0.5);
  CHECK(r.auto_resident_fraction <= 1.0);
}

TEST_CASE("B_coll_in counts every collective kind of a layout: closed forms per kind", "[analytical][layouts]") {
  // Per rank, bytes arriving per collective (nccl-tests' per-rank size S): all-to-all (U−1)/U·S,
  // ring K/V pass (R−1)·S, TP all-reduce 2(T−1)/T·S, FSDP all-gather (N−1)·S, CFG gather S.
  struct Layout {
    int U, R, T;
    bool fsdp;
    CfgMode cfg;
  };
  for (const Layout& l : {Layout{2, 1, 2, false, CfgMode::automatic}, Layout{2, 2, 1, false, CfgMode::automatic},
                          Layout{4, 1, 1, true, CfgMode::automatic}, Layout{2, 1, 1, false, CfgMode::parallel}}) {
    Workload w = make("wan2.1-t2v-14b", 480, 832, 17, l.U);
    w.ring_degree = l.R;
    w.tp_degree = l.T;
    w.fsdp = l.fsdp;
    w.cfg = l.cfg;
    const int N = gpus_used(w);
    const ForwardCost f = forward_cost(w);
    INFO(layout_text(w));
    double total = 0;
    for (const BlockCost& b : f.blocks) {
      double expected = 0;
      for (const StageCost& s : b.stages) {
        if (s.stage.kind != BlockStage::Kind::all_to_all) continue;
        const double S = s.all_to_all_buffer_bytes;
        switch (s.collective) {
          case CollectiveKind::all_to_all: expected += double(l.U - 1) / l.U * S; break;
          case CollectiveKind::ring_kv: expected += double(l.R - 1) * S; break;
          case CollectiveKind::all_reduce: expected += 2.0 * (l.T - 1) / l.T * S; break;
          case CollectiveKind::all_gather: expected += double(N - 1) * S; break;
          case CollectiveKind::cfg_gather: expected += S; break;
        }
      }
      CHECK(collective_inbound_bytes(b, w) == Approx(expected).epsilon(1e-12));
      total += expected;
    }
    const NodeSpec n = node("8xh100-pcie");
    CHECK(analyze(f, n, w).collective_inbound_bytes == Approx(total / double(f.blocks.size())).epsilon(1e-12));
  }
  // Ulysses alone: the same as the Ulysses-degree form.
  const Workload u = make("wan2.1-t2v-14b", 480, 832, 17, 2);
  const ForwardCost fu = forward_cost(u);
  for (const BlockCost& b : fu.blocks) CHECK(collective_inbound_bytes(b, u) == Approx(collective_inbound_bytes(b, 2)).epsilon(1e-12));
}

TEST_CASE("η_pref·BW_h2d is the per-GPU share of the host routes: half a PCIe-switch uplink on 8xh100-pcie, "
          "a whole link on 2xh100-pcie",
          "[analytical][routes]") {
  // Every executed rank prefetches at once; each copy is one flow host → its GPU, max-min fair
  // (model/link_model.hpp WorkloadLinkModel::copy_alone_bytes_per_s): x = min(CE, cap_d / k_d) over
  // the link directions d that k_d copies cross. Pinned host memory is socket 0's ("host").
  auto link = [](const NodeSpec& n, const std::string& name) -> const LinkSpec& {
    for (const LinkSpec& l : n.links)
      if (l.name == name) return l;
    FAIL("no link " << name << " in " << n.id);
    return n.links.front();
  };
  auto h2d_of = [](const NodeSpec& n, int U) {
    Workload w = make("wan2.1-t2v-14b", 480, 832, 17, U);
    return analyze(forward_cost(w), n, w);
  };
  const NodeSpec two = node("2xh100-pcie");
  const NodeSpec eight = node("8xh100-pcie");
  const double ce2 = two.copy_engine_bytes_per_s, ce8 = eight.copy_engine_bytes_per_s;
  // 2xh100-pcie: each GPU has its own x16 link to the root complex; DRAM (mem0) carries both copies.
  {
    const double gpu_link = link(two, "pcie.gpu0").a_to_b_bytes_per_s;
    const double expected = std::min({ce2, gpu_link, link(two, "mem0").a_to_b_bytes_per_s / 2});
    const AnalyticalResult r = h2d_of(two, 2);
    CHECK(r.h2d_bytes_per_s == Approx(expected).epsilon(kRelTolerance));
    CHECK(r.h2d_bytes_per_s == Approx(two.h2d_bytes_per_s(0)).epsilon(kRelTolerance));  // nothing shared
    CHECK(r.prefetch_time_s == Approx(r.block_weight_bytes / expected).epsilon(kRelTolerance));
  }
  // 8xh100-pcie: GPU pairs under one switch (sw0: gpu0, gpu1; sw1: gpu2, gpu3 on socket 0).
  const double uplink = link(eight, "pcie.sw0").a_to_b_bytes_per_s;
  const double gpu_link = link(eight, "pcie.gpu0").a_to_b_bytes_per_s;
  const double dram = link(eight, "mem0").a_to_b_bytes_per_s;
  const double upi = link(eight, "upi").a_to_b_bytes_per_s;
  CHECK(h2d_of(eight, 1).h2d_bytes_per_s == Approx(std::min({ce8, gpu_link, uplink, dram})).epsilon(kRelTolerance));
  for (int U : {2, 4}) {  // ranks 0..U−1 on socket 0: two per uplink
    INFO("Ulysses " << U);
    const double expected = std::min({ce8, gpu_link, uplink / 2, dram / U});
    const AnalyticalResult r = h2d_of(eight, U);
    CHECK(r.h2d_bytes_per_s == Approx(expected).epsilon(kRelTolerance));
    CHECK(r.h2d_bytes_per_s < eight.h2d_bytes_per_s(0));  // one GPU's full rate overstated it
    CHECK(r.h2d_bytes_per_s == Approx(eight.h2d_bytes_per_s(0) / 2).epsilon(0.02));  // ≈ half: 28 vs 55.3 GB/s
  }
  {  // all 8: GPUs 4–7 read socket 0's pinned memory over UPI (4 copies), DRAM carries 8
    const double expected = std::min({ce8, gpu_link, uplink / 2, upi / 4, dram / 8});
    const AnalyticalResult r = h2d_of(eight, 8);
    CHECK(r.h2d_bytes_per_s == Approx(expected).epsilon(kRelTolerance));
    // F* scales inversely with the copy rate: the same workload on one GPU's full rate.
    Workload w = make("wan2.1-t2v-14b", 480, 832, 17, 8);
    const AnalyticalResult full = analyze(forward_cost(w), eight, 8);
    CHECK(full.h2d_bytes_per_s == Approx(eight.h2d_bytes_per_s(0)).epsilon(kRelTolerance));
    CHECK(r.critical_flop == Approx(full.critical_flop * full.h2d_bytes_per_s / expected).epsilon(1e-9));
  }
}
