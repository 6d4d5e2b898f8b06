// GPU tests of the executor: bit-exact offloaded vs no-offload activations, event ordering of a
// measured timeline, H2D bandwidth sanity. Run by chunkflow_gpu_tests (skipped without a device).
#include <catch2/catch.hpp>

#include "hw/bench.hpp"
#include "hw/executor.hpp"
#include "hw/cuda_util.cuh"
#include "hw/host_data.hpp"
#include "hw/kernels.cuh"
#include "hw/lowering.hpp"
#include "hw/report.hpp"
#include "runtime/policy.hpp"

#include <memory>

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

std::vector<std::vector<uint8_t>> final_activation(const Program& p, ProxyMode mode, int runs = 1,
                                                   LaunchMode launch = LaunchMode::graph) {
  ExecutorOptions o;
  o.seed = 11;
  o.proxy_mode = mode;
  o.launch = launch;
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
  for (const auto& op : p.ops) CHECK(t.ops[size_t(op.id)].wait_s == 0);  // one GPU: no peer to wait for
  const MemoryReport m = ex.memory(0);
  CHECK(m.allocated_bytes == m.resident_weight_bytes + m.slot_bytes + m.activation_bytes + m.workspace_bytes);
  CHECK(m.device_used_bytes >= m.allocated_bytes);
  CHECK(m.peak_memory_bytes >= m.device_used_bytes);
  const Timeline tl = make_timeline(p, t, {m}, {{"gpu_name", "test"}});
  const StepSummary s = summarize(tl);
  CHECK(s.step_time_s > 0);
  CHECK(s.h2d_bytes > 0);
}

TEST_CASE("graph launch and direct launch compute the same activation", "[gpu][check]") {
  const Program p = small("chunkflow", 2, 1.5, 0.0);
  const auto graph = final_activation(p, ProxyMode::kernel, 2, LaunchMode::graph);
  const auto direct = final_activation(p, ProxyMode::kernel, 1, LaunchMode::direct);
  CHECK(count_bf16_mismatches(graph.at(0), direct.at(0)) == 0);
}

TEST_CASE("rate-capped H2D ops take at least bytes/cap and keep the activation bit-exact", "[gpu][rate-cap]") {
  constexpr double kCapBytesPerS = 20e9;
  const auto reference = final_activation(small("no-offload", 2, 64, 1.0), ProxyMode::kernel);
  Program p = small("chunkflow", 2, 3, 0.0);
  int capped = 0;
  for (auto& op : p.ops)
    if (op.work == Work::h2d) {
      op.rate_cap_bytes_per_s = kCapBytesPerS;
      ++capped;
    }
  REQUIRE(capped > 0);
  ExecutorOptions o;
  o.seed = 11;
  o.pace_sub_chunk_bytes = 256 << 10;
  Executor ex(p, o);
  (void)ex.run();
  const RunTiming t = ex.run();
  for (const auto& op : p.ops)
    if (op.work == Work::h2d) {
      INFO(op.name << ": " << op.h2d_bytes << " bytes at cap " << kCapBytesPerS);
      const double d = t.ops[size_t(op.id)].end_s - t.ops[size_t(op.id)].start_s;
      // Paced to the cap: never faster than bytes/cap (the pacing's own clock is the GPU's
      // globaltimer, the events' resolution is kEventResolutionS).
      CHECK(d + kEventResolutionS >= double(op.h2d_bytes) / kCapBytesPerS);
    }
  CHECK(count_bf16_mismatches(ex.final_activation().at(0), reference.at(0)) == 0);
}

TEST_CASE("a run past its deadline is aborted with the rank and the op named", "[gpu][abort]") {
  const Program p = small("chunkflow", 2, 2, 0.2);
  ExecutorOptions o;
  o.run_deadline_s = 1e-6;  // far shorter than the plan: the first poll finds it unfinished
  auto ex = std::make_unique<Executor>(p, o);
  std::string message;
  try {
    (void)ex->run();
  } catch (const RunAbortedError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("rank 0") != std::string::npos);
  CHECK(message.find("op ") != std::string::npos);
  CHECK(message.find("deadline") != std::string::npos);
  CHECK_THROWS_AS(ex->run(), RunAbortedError);  // poisoned: no second run
  ex.reset();  // releases nothing that could block
}

TEST_CASE("copy-cap bench: a paced copy achieves its cap within 10 % and never exceeds it by more than 2 %",
          "[gpu][rate-cap][bench]") {
  BenchConfig cfg;
  cfg.only = {"copy_cap"};
  cfg.max_bytes = 64ll << 20;
  cfg.copy_caps_bytes_per_s = {10e9, 25e9};
  cfg.warmup = 1;
  cfg.repeat = 3;
  const auto results = run_benchmarks(cfg);
  REQUIRE(results.size() == 1);
  REQUIRE(results[0].points.size() == 4);  // 2 caps × 2 proxy modes
  for (const auto& pt : results[0].points) {
    double cap = 0, achieved = 0;
    for (const auto& [k, v] : pt.numbers) {
      if (k == "cap_bytes_per_s") cap = v;
      if (k == "achieved_bytes_per_s") achieved = v;
    }
    INFO("cap " << cap << " bytes/s, achieved " << achieved);
    CHECK(achieved <= 1.02 * cap);
    CHECK(achieved >= 0.90 * cap);
  }
}

TEST_CASE("pinned H2D bandwidth at 256 MiB is at least 0.8 of the node's copy-engine figure", "[gpu][bandwidth]") {
  // The node's pinned H2D figure (copy_engine_bytes_per_s, systems-and-hardware.md §3: 55.3 GB/s
  // on PCIe Gen5 x16); a GPU on a slower link or a pageable path fails here, as it should.
  const NodeSpec n = node("1xh100-sxm");
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
  const double link = n.host_link(0).a_to_b_bytes_per_s;
  INFO("measured " << rate << " bytes/s, node copy engine " << n.copy_engine_bytes_per_s << ", link " << link);
  CHECK(rate >= 0.8 * n.copy_engine_bytes_per_s);
  CHECK(rate <= link);  // no faster than the link itself (PCIe Gen5 x16: 63 GB/s)
}

TEST_CASE("launch_device_copy copies every byte at any co-alignment and length, as cudaMemcpy does", "[gpu][copy]") {
  // The harness's gathers (hw/executor.cu op_linear) copy on the SMs; their pieces start at any
  // byte offset, with destination ≡ source (mod 256). Also checked: offsets that differ mod 16
  // (the byte-by-byte path).
  constexpr int64_t kSpan = (1 << 20) + 64;
  std::vector<uint8_t> src_host(static_cast<size_t>(kSpan));
  for (size_t i = 0; i < src_host.size(); ++i) src_host[i] = uint8_t((i * 2654435761u) >> 13);
  DeviceBuffer src{static_cast<size_t>(kSpan)}, dst{static_cast<size_t>(kSpan)};
  CF_CUDA(cudaMemcpy(src.get(), src_host.data(), size_t(kSpan), cudaMemcpyHostToDevice));
  std::vector<uint8_t> got(static_cast<size_t>(kSpan));
  for (int64_t src_off : {0, 1, 7, 15, 16, 17}) {
    for (int64_t dst_off : {src_off, (src_off + 3) % 18}) {
      for (int64_t n : {int64_t(0), int64_t(1), int64_t(15), int64_t(16), int64_t(17), int64_t(4095), int64_t((1 << 20) + 3)}) {
        INFO("src offset " << src_off << ", dst offset " << dst_off << ", bytes " << n);
        CF_CUDA(cudaMemset(dst.get(), 0xA5, size_t(kSpan)));
        launch_device_copy(dst.get() + dst_off, src.get() + src_off, n, nullptr);
        CF_CUDA(cudaDeviceSynchronize());
        CF_CUDA(cudaMemcpy(got.data(), dst.get(), size_t(kSpan), cudaMemcpyDeviceToHost));
        int64_t wrong = 0;
        for (int64_t i = 0; i < kSpan; ++i) {
          const bool inside = i >= dst_off && i < dst_off + n;
          const uint8_t want = inside ? src_host[size_t(i - dst_off + src_off)] : uint8_t(0xA5);
          wrong += got[size_t(i)] != want;
        }
        CHECK(wrong == 0);
      }
    }
  }
}
