// Tests of the published data set (model/published.*), its predictions
// (model/published_predict.*) and the scale fit (model/calibration_published.*).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "model/architecture.hpp"
#include "model/workload.hpp"
#include "model/kernel_model.hpp"
#include "model/analytical.hpp"
#include "model/calibration.hpp"
#include "model/calibration_published.hpp"
#include "model/error.hpp"
#include "model/published.hpp"
#include "model/node.hpp"
#include "model/published_predict.hpp"
#include "sim/validate_published.hpp"

using namespace chunkflow;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(CHUNKFLOW_SOURCE_DIR) + "/traces/published";

// Relative tolerance of the synthetic-recovery tests (issue 10 §6: "within 1 %").
constexpr double kRecoveryTolerance = 0.01;

std::string error_of(const std::string& path) {
  try {
    (void)read_published_record(path);
  } catch (const InputError& e) {
    return e.field() + ": " + e.message();
  }
  return "";
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("chunkflow-test-published-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// Writes a copy of record `id` with `edit` applied to its text, as <dir>/<id>.json.
std::string edited_copy(const std::string& id, const std::string& from, const std::string& to, const fs::path& dir) {
  std::ifstream in(kDir + "/" + id + ".json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  const std::string path = (dir / (id + ".json")).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("the published data set parses: ≥ 20 records, unique ids, each with a source and caveats") {
  const auto records = load_published_records(kDir);
  CHECK(records.size() >= 20);
  std::set<std::string> ids;
  int time_records = 0;
  for (const PublishedRecord& r : records) {
    CHECK(ids.insert(r.id).second);
    CHECK(!r.source.empty());
    CHECK(!r.caveats.empty());
    CHECK(r.value > 0);
    time_records += r.is_time();
  }
  CHECK(time_records >= 20);
}

TEST_CASE("every published record is expressible: a finite positive prediction and a dominant part") {
  for (const PublishedRecord& r : load_published_records(kDir)) {
    INFO(r.id);
    const PublishedPrediction p = predict_published(r);
    CHECK(std::isfinite(p.predicted));
    CHECK(p.predicted > 0);
    CHECK(!p.dominant.empty());
    CHECK(p.error == Approx((p.predicted - r.value) / r.value));
  }
}

TEST_CASE("a bad record names the file, the JSON pointer and the expected form") {
  const fs::path d = temp_dir("bad");
  CHECK(error_of(edited_copy("sgl-flux-1-step", "\"gpu_count\": 1", "\"gpu_count\": 0", d)) ==
        "/hardware/gpu_count: expected an integer in [1, 1024], got 0");
  CHECK(error_of(edited_copy("sgl-flux-1-step", "\"h100-sxm\"", "\"h999\"", d)).rfind("/hardware/gpu: expected one of", 0) == 0);
  CHECK(error_of(edited_copy("sgl-flux-1-step", "\"fa3\"", "\"fa9\"", d)) ==
        "/attention: expected one of fa2, fa3, sdpa, sage, got \"fa9\"");
  CHECK(error_of(edited_copy("sgl-flux-1-step", "\"height\": 1024", "\"height\": 1000", d)) ==
        "/shape/height: expected a positive multiple of 16 pixels, got 1000");
  CHECK(error_of(edited_copy("xdit-flux-u2-eager", "\"ulysses\": 2", "\"ulysses\": 4", d)) ==
        "/layout: expected ulysses × ring = hardware/gpu_count (2), got 4 × 1");
  CHECK(error_of(edited_copy("sgl-flux-1-step", "\"unit\": \"s\"", "\"unit\": \"ms\"", d)) ==
        "/figure/unit: expected one of s, got \"ms\"");
  // The id must be the file's stem, so a record cannot be silently shadowed by another file.
  const std::string renamed = (d / "other-name.json").string();
  fs::copy_file(kDir + "/sgl-flux-1-step.json", renamed, fs::copy_options::overwrite_existing);
  CHECK(error_of(renamed).rfind("/id: expected the file's name", 0) == 0);
  // Malformed JSON names the file.
  const std::string broken = (d / "broken.json").string();
  std::ofstream(broken) << "{\"id\": ";
  try {
    (void)read_published_record(broken);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.file() == broken);
  }
  fs::remove_all(d);
}

TEST_CASE("generation = text encoding + steps × forwards per step × forward + VAE decode (+ swaps)") {
  for (const PublishedRecord& r : load_published_records(kDir)) {
    if (r.measures != PublishedMeasure::generation) continue;
    INFO(r.id);
    const PublishedPrediction p = predict_published(r);
    const double expected = p.parts.at("text_encode") + p.parts.at("vae_decode") + p.parts.at("model_swap") +
                            p.parts.at("vae_mask_loop") + double(r.steps) * r.forwards_per_step() * p.forward_time_s;
    CHECK(p.predicted == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("HunyuanVideo's official pipeline: RoPE tables copied per block at the pageable rate (1/P per rank), the VAE mask loop once") {
  // hy-720p-*: framework "hunyuanvideo". Per forward and rank, 60 blocks × (cos, sin) tables of
  // S_v / P rows × 128 float32, each copy synchronous from pageable memory: bytes / (0.5 · pinned
  // H2D) + the H2D latency. The VAE's row loop is hunyuan_vae_mask_loop_time_s, independent of P.
  const fs::path d = temp_dir("hy-framework");
  int seen = 0;
  for (const PublishedRecord& r : load_published_records(kDir)) {
    if (r.framework != "hunyuanvideo") continue;
    INFO(r.id);
    ++seen;
    const PublishedPrediction p = predict_published(r);
    const NodeSpec n = published_record_node(r);
    const double ranks = double(r.gpu_count);
    const double s_v = double(tokens(r.workload).video);
    const double per_copy = s_v / ranks * 128.0 * 4.0 / (0.5 * n.h2d_bytes_per_s(0)) + n.h2d_latency_s;
    CHECK(p.parts.at("rope_table_h2d") == Approx(double(r.steps) * 60.0 * 2.0 * per_copy).epsilon(1e-12));
    CHECK(p.parts.at("vae_mask_loop") == Approx(hunyuan_vae_mask_loop_time_s(r.workload)).epsilon(1e-12));
    CHECK(p.parts.at("vae_mask_loop") == Approx(1'019'616 * 7.5e-6).epsilon(1e-12));
    // The same record priced as another framework's pipeline drops exactly these two parts.
    const PublishedRecord other = read_published_record(
        edited_copy(r.id, "\"framework\": \"hunyuanvideo\"", "\"framework\": \"xdit\"", d));
    const PublishedPrediction q = predict_published(other);
    CHECK(q.parts.at("rope_table_h2d") == 0);
    CHECK(q.parts.at("vae_mask_loop") == 0);
    CHECK(p.predicted - q.predicted == Approx(p.parts.at("rope_table_h2d") + p.parts.at("vae_mask_loop")).epsilon(1e-9));
  }
  CHECK(seen == 4);
  fs::remove_all(d);
}

TEST_CASE("a compiled stack issues its ring loop eagerly (graph break at the P2P): host-bound forward = ((K - K_ring)·0.4 + K_ring)·issue") {
  // Host-bound by construction (issue cost × 1000), so the forward is the host issue time; FLUX has
  // 57 blocks, one joint attention each, and the ring adds 5 kernels per ring step.
  for (const PublishedRecord& base : load_published_records(kDir)) {
    if (base.id != "xdit-flux-r4-compiled") continue;
    PublishedScales host_bound;
    host_bound.host = 1000;
    PublishedRecord compiled = base, eager = base;
    compiled.workload.compiled = true;
    eager.workload.compiled = false;
    const double issue_s = published_record_node(base, host_bound).host_kernel_issue_s;
    const PublishedPrediction pc = predict_published(compiled, host_bound), pe = predict_published(eager, host_bound);
    const double ring_kernels = 57.0 * base.ring_degree * 5.0;
    CHECK(pe.forward_time_s == Approx(pe.kernels_per_forward * issue_s).epsilon(1e-12));
    CHECK(pc.forward_time_s == Approx(((pc.kernels_per_forward - ring_kernels) * 0.4 + ring_kernels) * issue_s).epsilon(1e-9));
    return;
  }
  FAIL("record xdit-flux-r4-compiled not found");
}

TEST_CASE("ring-only attention: the output merge's (r - 1)·10 + 12 B and an 8 B output repack replace the Ulysses pack/unpack") {
  // xdit-flux-r2-compiled against the same record as Ulysses 2: both price the per-rank shapes of a
  // 2-way split (24/2 heads × 4352 tokens × 128 per joint attention), so their elementwise parts
  // differ by the ring's merge (22 B per output element at r = 2), less the Ulysses pack/unpack that
  // a one-rank Ulysses group does not do, plus its 8 B output repack; FLUX's 57 blocks, one joint
  // attention each, 28 steps. Kernels: + r·5 for the ring loop, − (pack kernels − 2) per attention.
  double pack_bytes = 0;
  int pack_kernels = 0;
  for (const ElementwiseOp& op : architecture("flux.1-dev").block_kinds.front().elementwise)
    if (op.ulysses_only) {
      pack_bytes = op.fused_bytes_per_element;
      pack_kernels = op.fused_kernels;
    }
  REQUIRE(pack_bytes > 8);
  for (const PublishedRecord& ring : load_published_records(kDir)) {
    if (ring.id != "xdit-flux-r2-compiled") continue;
    REQUIRE(ring.ring_degree == 2);
    REQUIRE(ring.workload.compiled);
    PublishedRecord ulysses = ring;
    ulysses.ring_degree = 1;
    ulysses.workload.ulysses_degree = 2;
    const PublishedPrediction pr = predict_published(ring), pu = predict_published(ulysses);
    const NodeSpec n = published_record_node(ring, {});
    const double out_elements = 12.0 * 4352.0 * 128.0;
    const double bytes_per_forward = 57.0 * out_elements * (((2 - 1) * 10.0 + 12.0) - (pack_bytes - 8.0));
    const double expected_s = 28.0 * bytes_per_forward / (n.hbm_efficiency * n.hbm_bytes_per_s);
    CHECK(pr.parts.at("elementwise") - pu.parts.at("elementwise") == Approx(expected_s).epsilon(1e-9));
    CHECK(pr.kernels_per_forward - pu.kernels_per_forward == Approx(57.0 * (2 * 5 - (pack_kernels - 2))));
    return;
  }
  FAIL("record xdit-flux-r2-compiled not found");
}

TEST_CASE("a synchronous group computes at its slowest GPU: s(1) = 1, s(8) = 727/752, s(N) = (1 - wN/(N+1))/(1 - w/2) decreasing") {
  CHECK(slowest_gpu_rate(1) == 1.0);
  CHECK(slowest_gpu_rate(8) == Approx(727.0 / 752.0).epsilon(1e-12));
  const double r8 = 727.0 / 752.0, w = (1 - r8) / (8.0 / 9.0 - r8 / 2.0);
  for (int n : {2, 3, 4, 6, 8, 16}) {
    CHECK(slowest_gpu_rate(n) == Approx((1 - w * n / (n + 1.0)) / (1 - w / 2)).epsilon(1e-12));
    CHECK(slowest_gpu_rate(n) < slowest_gpu_rate(n / 2));  // more GPUs, a slower slowest one
  }
  // Never below the slowest rate the spread allows (1 − w against the median 1 − w/2).
  CHECK(slowest_gpu_rate(1 << 20) > (1 - w) / (1 - w / 2));
}

TEST_CASE("a multi-GPU record's GEMM and attention parts are its ranks' cores divided by s(N), one GPU is unchanged") {
  // xDiT's Ulysses-2 and Ulysses-4 FLUX records (no ring, so the stages are the kernel model's
  // per-rank stages unchanged): the GEMM part is Σ (stage − elementwise − launch) / s(N).
  const std::vector<PublishedRecord> all = load_published_records(kDir);
  for (const PublishedRecord& r : all) {
    if (r.id != "xdit-flux-u2-compiled" && r.id != "xdit-flux-u4-compiled") continue;
    const PublishedPrediction p = predict_published(r);
    PublishedScales none;
    const NodeSpec n = published_record_node(r, none);
    // Recompute the cores with the kernel model alone: Σ (stage time − elementwise − launch).
    Workload w = r.workload;
    w.ulysses_degree = r.workload.ulysses_degree * r.ring_degree;
    const ForwardCost cost = forward_cost(w);
    double gemm = 0;
    for (const BlockCost& b : cost.blocks)
      for (const StageCost& st : b.stages)
        if (st.stage.kind == BlockStage::Kind::linear)
          gemm += stage_compute_time_s(st, n) - st.elementwise_bytes / (n.hbm_efficiency * n.hbm_bytes_per_s) -
                  double(stage_kernels(st)) * n.compute_launch_s;
    const double mult = double(r.steps) * r.forwards_per_step();
    CHECK(p.parts.at("gemm") == Approx(mult * gemm / slowest_gpu_rate(r.gpu_count)).epsilon(1e-9));
  }
}

TEST_CASE("the published predictor's all-to-all rate equals the NVLink capacity of the built-in NVSwitch node of that GPU") {
  // One figure per box for the simulator's links and the published predictor: a Ulysses all-to-all
  // among N GPUs takes (N-1)/N S / busbw in both (README "Describe your node").
  const std::pair<const char*, const char*> boxes[] = {
      {"h100-sxm", "8xh100-sxm"}, {"h20", "8xh20"}, {"a100-sxm-80gb", "8xa100-sxm"}, {"h800-sxm", "8xh800-sxm"}};
  for (const auto& [gpu, node_id] : boxes) {
    INFO(gpu << " on " << node_id);
    int nvlinks = 0;
    for (const chunkflow::LinkSpec& l : chunkflow::node(node_id).links) {
      if (l.kind != chunkflow::LinkKind::nvlink) continue;
      ++nvlinks;
      CHECK(l.a_to_b_bytes_per_s == published_all_to_all_bytes_per_s(gpu));
      CHECK(l.b_to_a_bytes_per_s == published_all_to_all_bytes_per_s(gpu));
    }
    CHECK(nvlinks == 8);
  }
}

TEST_CASE("scaling series: speedups are ratios of the series' own predictions and figures") {
  const auto records = load_published_records(kDir);
  const PublishedValidation v = validate_published(records, {}, {}, {});
  REQUIRE(!v.series.empty());
  for (const ScalingSeries& s : v.series) {
    REQUIRE(s.points.size() >= 2);
    CHECK(s.points.front().published_speedup == 1.0);
    CHECK(s.points.front().predicted_speedup == 1.0);
    for (size_t i = 1; i < s.points.size(); ++i) CHECK(s.points[i].gpu_count > s.points[i - 1].gpu_count);
  }
}

TEST_CASE("the scale fit recovers known scales from a synthetic linear-in-inverse-scale model within 1 %") {
  // t_i = a_i/gemm + b_i/attention + c_i/hbm + d_i·host, with generic coefficients.
  const PublishedScales truth{0.83, 1.21, 0.67, 1.9};
  std::vector<std::array<double, 4>> coeff;
  for (int i = 0; i < 12; ++i)
    coeff.push_back({1.0 + (i % 3), 0.5 + ((i * 7) % 5) * 0.4, 0.2 + ((i * 3) % 4) * 0.3, 0.1 + (i % 2) * 0.7});
  auto model = [&](const PublishedScales& s, int i) {
    const auto& c = coeff[size_t(i)];
    return c[0] / s.gemm + c[1] / s.attention + c[2] / s.hbm + c[3] * s.host;
  };
  auto residuals = [&](const PublishedScales& s) {
    std::vector<double> r;
    for (int i = 0; i < 12; ++i) r.push_back(std::log(model(s, i) / model(truth, i)));
    return r;
  };
  const PublishedFit fit = fit_scales(residuals, 12);
  CHECK(fit.scales.gemm == Approx(truth.gemm).epsilon(kRecoveryTolerance));
  CHECK(fit.scales.attention == Approx(truth.attention).epsilon(kRecoveryTolerance));
  CHECK(fit.scales.hbm == Approx(truth.hbm).epsilon(kRecoveryTolerance));
  CHECK(fit.scales.host == Approx(truth.host).epsilon(kRecoveryTolerance));
  CHECK(fit.rms_log_residual < 1e-6);
}

TEST_CASE("fit_published recovers the scales that generated synthetic figures for real records within 1 %") {
  // Figures generated by the predictor itself at known scales (never written to the data set):
  // a record set where every scale matters (GEMM-, attention-, HBM- and host-dominated records).
  const PublishedScales truth{0.9, 1.15, 0.8, 1.3};
  std::vector<PublishedRecord> records;
  std::vector<std::string> ids;
  for (PublishedRecord r : load_published_records(kDir)) {
    if (!r.is_time()) continue;
    r.value = predict_published(r, truth).predicted;
    ids.push_back(r.id);
    records.push_back(r);
  }
  const PublishedFit fit = fit_published(records, ids);
  CHECK(fit.scales.gemm == Approx(truth.gemm).epsilon(kRecoveryTolerance));
  CHECK(fit.scales.attention == Approx(truth.attention).epsilon(kRecoveryTolerance));
  CHECK(fit.scales.hbm == Approx(truth.hbm).epsilon(kRecoveryTolerance));
  CHECK(fit.scales.host == Approx(truth.host).epsilon(kRecoveryTolerance));
}

TEST_CASE("a published calibration round-trips through its file and applies its scales to a node") {
  const auto records = load_published_records(kDir);
  PublishedFit fit;
  fit.scales = {0.9, 1.1, 0.95, 2.0};
  fit.fitted_ids = {"sgl-flux-1-step"};
  fit.parameter_names = {"gemm", "attention", "hbm", "host"};
  fit.values = {0.9, 1.1, 0.95, 2.0};
  fit.relative_standard_error = {0.01, 0.02, 0.03, 0.04};
  const Calibration c = published_calibration(fit, records);
  const fs::path d = temp_dir("cal");
  const std::string path = (d / "cal.json").string();
  std::ofstream(path) << calibration_to_json(c, "{}");
  const Calibration back = load_calibration(path);
  REQUIRE(back.gemm_efficiency_scale);
  CHECK(*back.gemm_efficiency_scale == 0.9);
  CHECK(*back.host_kernel_issue_scale == 2.0);
  REQUIRE(back.sources.size() == 1);
  CHECK(back.sources[0].context.at("record") == "sgl-flux-1-step");
  NodeSpec n = node("1xh100-sxm");
  const NodeSpec before = n;
  apply_calibration(back, n);
  CHECK(n.gemm_efficiency == Approx(before.gemm_efficiency * 0.9));
  CHECK(n.attention_efficiency == Approx(std::min(1.0, before.attention_efficiency * 1.1)));
  CHECK(n.host_kernel_issue_s == Approx(before.host_kernel_issue_s * 2.0));
  fs::remove_all(d);
}
