// GPU tests of the non-Ulysses collectives (hw/collective_calls.hpp): ring K/V passes, TP
// all-reduces, FSDP all-gathers and the CFG gather run as their NCCL calls, and an offloaded run's
// final activation equals the no-offload run's bit for bit. Run by chunkflow_gpu_tests (skipped
// without a device); the multi-GPU cases need as many devices as the layout uses and say so
// (WARN) when the machine has fewer. Written without a GPU: not run yet when this was committed.
#include <catch2/catch.hpp>

#include <optional>

#include "hw/executor.hpp"
#include "hw/host_data.hpp"
#include "hw/lowering.hpp"
#include "runtime/policy.hpp"
#include "../sim_fixtures.hpp"

using namespace chunkflow;
using namespace chunkflow::hw;

namespace {

Workload small_layout(int ulysses, int ring, int tp, bool fsdp, CfgMode cfg) {
  return test::layout("wan2.1-t2v-1.3b", 128, 128, 5, ulysses, ring, tp, fsdp, cfg);
}

Program lowered(const Workload& w, const std::string& policy, double chunk_mib, std::optional<double> resident) {
  PolicyConfig p;
  p.policy = policy;
  p.chunk_bytes = chunk_mib * kMiB;
  p.resident_fraction = resident;
  p.steps = 2;
  const NodeSpec n = node("8xh100-sxm");  // routed: every layout's collectives go through NCCL
  return lower(build_plan(w, n, p), n);
}

bool have_devices(int n) {
  try {
    require_devices(n);
    return true;
  } catch (const NoDeviceError&) {
    return false;
  }
}

std::vector<std::vector<uint8_t>> final_activation(const Program& p) {
  ExecutorOptions o;
  o.seed = 5;
  Executor ex(p, o);
  (void)ex.run();
  (void)ex.run();
  return ex.final_activation();
}

void check_offload_equals_no_offload(const Workload& w) {
  const Program reference_program = lowered(w, "no-offload", 64, std::nullopt);
  const auto reference = final_activation(reference_program);
  REQUIRE(int(reference.size()) == reference_program.ranks);
  for (const auto& [policy, chunk_mib, resident] :
       std::vector<std::tuple<std::string, double, double>>{{"chunkflow", 1.5, 0.0}, {"layerwise", 64, 0.0}}) {
    INFO(policy << " C=" << chunk_mib << " MiB R=" << resident);
    const auto got = final_activation(lowered(w, policy, chunk_mib, resident));
    REQUIRE(got.size() == reference.size());
    for (size_t r = 0; r < got.size(); ++r) CHECK(count_bf16_mismatches(got[r], reference[r]) == 0);
  }
}

}  // namespace

TEST_CASE("FSDP on one GPU (a one-rank NCCL all-gather): offloaded equals no-offload bit for bit", "[gpu][collectives]") {
  check_offload_equals_no_offload(small_layout(1, 1, 1, true, CfgMode::none));
}

TEST_CASE("ring, TP, FSDP, FSDP + TP and parallel CFG on their GPUs: offloaded equals no-offload bit for bit",
          "[gpu][collectives]") {
  for (const Workload& w : {small_layout(1, 2, 1, false, CfgMode::none), small_layout(1, 1, 2, false, CfgMode::none),
                            small_layout(2, 1, 1, true, CfgMode::none), small_layout(1, 1, 2, true, CfgMode::none),
                            small_layout(1, 1, 1, false, CfgMode::parallel),
                            small_layout(2, 1, 2, true, CfgMode::parallel)}) {
    INFO(layout_text(w));
    if (!have_devices(gpus_used(w))) {
      WARN("not run: " << layout_text(w) << " needs " << gpus_used(w) << " GPUs");
      continue;
    }
    check_offload_equals_no_offload(w);
  }
}
