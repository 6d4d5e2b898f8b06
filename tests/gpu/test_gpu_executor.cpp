// GPU tests of the executor: bit-exact offloaded vs no-offload activations, event ordering of a
// measured timeline, H2D bandwidth sanity. Run by chunkflow_gpu_tests (skipped without a device).
#include <catch2/catch.hpp>

#include "hw/bench.hpp"
#include "hw/executor.hpp"
#include "hw/host_data.hpp"
#include "hw/lowering.hpp"
#include "hw/report.hpp"
#include "runtime/policy.hpp"

using namespace chunkflow;
using namespace chunkflow::hw;

namespace {

/// Events are timestamped at about 0.5 µs resolution; orderings are checked to this tolerance.
constexpr double kEventResolutionS = 2e-6;

Program small(const std::string& policy, int ulysses, double chunk_mib, double resident) {
  Workload w;
  w.model = "wan2.1-t2v-1.3b";
  w.height = 128;
  w.width = 128;
  w.frames = 5;
  w.ulysses_degree = ulysses;
  PolicyConfig p;
  p.policy = policy;
  p.chunk_bytes = chunk_mib * kMiB;
  p.resident_fraction = resident;
  p.steps = 2;
  const NodeSpec n = node("1xh100-sxm");
  return lower(build_plan(w, n, p), n);
}

std::vector<std::vector<uint8_t>> final_activation(const Program& p, ProxyMode mode, int runs = 1) {
  ExecutorOptions o;
  o.seed = 11;
  o.proxy_mode = mode;
  Executor ex(p, o);
  for (int i = 0; i < runs; ++i) (void)ex.run();
  return ex.final_activation();
}

}  // namespace

TEST_CASE("offloaded final activation equals no-offload bit for bit (wan2.1-1.3b, 128x128x5)", "[gpu][check]") {
  for (int ulysses : {1, 2}) {
    for (ProxyMode mode : {ProxyMode::kernel, ProxyMode::copy_engine}) {
      if (ulysses == 1 && mode == ProxyMode::copy_engine) continue;
      INFO("P = " << ulysses << ", proxy mode " << (mode == ProxyMode::kernel ? "kernel" : "copy-engine"));
      const auto reference = final_activation(small("no-offload", ulysses, 64, 1.0), mode);
      REQUIRE(reference.size() == 1);
      // Small chunks (many straddling linears, gathers) and no residency, plus layerwise.
      for (const auto& [policy, chunk_mib, resident] :
           std::vector<std::tuple<std::string, double, double>>{{"chunkflow", 1.5, 0.0}, {"chunkflow", 4, 0.37},
                                                                {"layerwise", 64, 0.0}}) {
        INFO(policy << " C=" << chunk_mib << " MiB R=" << resident);
        const auto got = final_activation(small(policy, ulysses, chunk_mib, resident), mode, 2);
        CHECK(count_bf16_mismatches(got.at(0), reference.at(0)) == 0);
      }
    }
  }
}

TEST_CASE("the final activation depends on the weights (a different seed changes it)", "[gpu][check]") {
  const Program p = small("no-offload", 1, 64, 1.0);
  ExecutorOptions a, b;
  a.seed = 1;
  b.seed = 2;
  Executor ea(p, a), eb(p, b);
  (void)ea.run();
  (void)eb.run();
  CHECK(count_bf16_mismatches(ea.final_activation().at(0), eb.final_activation().at(0)) > 0);
}

TEST_CASE("measured events respect every dependency and each lane's order", "[gpu][events]") {
  const Program p = small("chunkflow", 2, 2, 0.2);
  Executor ex(p, ExecutorOptions{});
  (void)ex.run();
  const RunTiming t = ex.run();
  REQUIRE(t.ops.size() == p.ops.size());
  std::map<std::pair<int, int>, int> last_on_lane;  // (rank, lane) → previous op in enqueue order
  for (int id : p.order) {
    const auto& op = p.ops[size_t(id)];
    const auto& ti = t.ops[size_t(id)];
    INFO(op.name);
    CHECK(ti.start_s >= 0);
    CHECK(ti.end_s >= ti.start_s);
    for (int d : op.data_deps) CHECK(ti.start_s + kEventResolutionS >= t.ops[size_t(d)].end_s);
    const auto key = std::make_pair(op.rank, int(op.lane));
    if (auto it = last_on_lane.find(key); it != last_on_lane.end())
      CHECK(ti.start_s + kEventResolutionS >= t.ops[size_t(it->second)].end_s);
    last_on_lane[key] = id;
  }
  const MemoryReport m = ex.memory(0);
  CHECK(m.allocated_bytes == m.resident_weight_bytes + m.slot_bytes + m.activation_bytes + m.workspace_bytes);
  CHECK(m.device_used_bytes >= m.allocated_bytes);
  const Timeline tl = make_timeline(p, t, {m}, {{"gpu_name", "test"}});
  const StepSummary s = summarize(tl);
  CHECK(s.step_time_s > 0);
  CHECK(s.h2d_bytes > 0);
}

TEST_CASE("pinned H2D bandwidth is plausible for PCIe (1 to 100 GB/s at 256 MiB)", "[gpu][bandwidth]") {
  BenchConfig cfg;
  cfg.only = {"h2d_bandwidth"};
  cfg.min_bytes = 256ll << 20;
  cfg.max_bytes = 256ll << 20;
  cfg.repeat = 5;
  const auto results = run_benchmarks(cfg);
  REQUIRE(results.size() == 1);
  REQUIRE(results[0].points.size() == 1);
  double rate = 0;
  for (const auto& [k, v] : results[0].points[0].numbers)
    if (k == "bytes_per_s") rate = v;
  CHECK(rate > 1e9);
  CHECK(rate < 100e9);
}
