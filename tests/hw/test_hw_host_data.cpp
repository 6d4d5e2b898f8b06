// Host data and reporters of the harness: seeded weights, bf16 rounding, checksums, spread,
// atomic writes, step times (hw/host_data.hpp, hw/report.hpp). CPU only.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "hw/host_data.hpp"
#include "hw/lowering.hpp"
#include "hw/report.hpp"
#include "model/node.hpp"
#include "runtime/policy.hpp"

using namespace chunkflow;
using namespace chunkflow::hw;

namespace {
Program small_program(const std::string& policy) {
  Workload w;
  w.model = "wan2.1-t2v-1.3b";
  w.height = 128;
  w.width = 128;
  w.frames = 5;
  w.ulysses_degree = 1;
  PolicyConfig p;
  p.policy = policy;
  p.chunk_bytes = 4 * kMiB;
  p.resident_fraction = 0.3;
  return lower(build_plan(w, node("1xh100-sxm"), p), node("1xh100-sxm"));
}
}  // namespace

TEST_CASE("bf16 rounding is round-to-nearest-even and exact on bf16 values", "[hw][host]") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(float_to_bf16(-2.0f) == 0xc000);
  // 1 + 2^-8 is halfway between bf16 1 and 1 + 2^-7: ties to even (1).
  CHECK(float_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  CHECK(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  for (uint16_t b : {0x0000, 0x3f80, 0x4049, 0xbf00, 0x7f7f}) CHECK(float_to_bf16(bf16_to_float(b)) == b);
}

TEST_CASE("weights depend only on the seed, not on the thread count, linears are scaled by sqrt(3/k)",
          "[hw][host]") {
  const Program p = small_program("no-offload");
  std::vector<std::byte> a(size_t(p.host_weight_bytes)), b(a.size()), c(a.size());
  fill_weights(p, 7, a.data(), 1);
  fill_weights(p, 7, b.data(), 8);
  fill_weights(p, 8, c.data(), 4);
  CHECK(a == b);
  CHECK(a != c);
  // Every W element of the first linear lies in ±sqrt(3/k).
  const auto& r = p.block_linears.at(0).at(0);
  const float bound = std::sqrt(3.0f / float(r.k)) * 1.01f;
  float max_abs = 0;
  for (int64_t i = r.begin; i < r.end; i += 2) {
    uint16_t v;
    std::memcpy(&v, &a[size_t(i)], 2);
    max_abs = std::max(max_abs, std::fabs(bf16_to_float(v)));
  }
  CHECK(max_abs <= bound);
  CHECK(max_abs > 0.5f * bound);
}

TEST_CASE("checksums and #wrong count differing bf16 elements", "[hw][host]") {
  std::vector<uint8_t> x(64, 1), y = x;
  CHECK(fnv1a64(x.data(), x.size()) == fnv1a64(y.data(), y.size()));
  CHECK(count_bf16_mismatches(x, y) == 0);
  y[3] ^= 1;
  y[10] ^= 0x80;
  CHECK(count_bf16_mismatches(x, y) == 2);
  CHECK(fnv1a64(x.data(), x.size()) != fnv1a64(y.data(), y.size()));
  y.resize(60);
  CHECK(count_bf16_mismatches(x, y) == 4);
  CHECK(fnv1a64("", 0) == 0xcbf29ce484222325ull);
}

TEST_CASE("spread: median of odd and even counts, min, max", "[hw][report]") {
  auto s = spread({3, 1, 2});
  CHECK(s.median == 2);
  CHECK(s.min == 1);
  CHECK(s.max == 3);
  s = spread({4, 1, 2, 3});
  CHECK(s.median == 2.5);
  CHECK_THROWS_AS(spread({}), std::invalid_argument);
}

TEST_CASE("atomic writes leave no partial file on failure", "[hw][report]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("chunkflow_hw_atomic_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "out.json").string();
  CHECK_THROWS(write_file_atomically(path, [](std::ostream& o) {
    o << "{\"partial\":";
    throw std::runtime_error("failed half way");
  }));
  CHECK(fs::is_empty(dir));
  write_file_atomically(path, [](std::ostream& o) { o << "{}\n"; });
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  CHECK(text == "{}");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  fs::remove_all(dir);
}

TEST_CASE("a measured timeline carries op ids, data deps, source and context, step times per step",
          "[hw][report]") {
  const Program p = small_program("chunkflow");
  RunTiming t;
  t.ops.resize(p.ops.size());
  for (size_t i = 0; i < p.ops.size(); ++i) t.ops[i] = {double(i) * 1e-3, double(i) * 1e-3 + 5e-4};
  MemoryReport m;
  m.allocated_bytes = 1234;
  const Timeline tl = make_timeline(p, t, {m}, {{"gpu_name", "test"}});
  CHECK(tl.source == "hardware");
  REQUIRE(tl.rows.size() == p.ops.size());
  for (const auto& r : tl.rows) {
    CHECK(r.op_id == p.ops[size_t(r.op_id)].id);
    CHECK(r.deps == p.ops[size_t(r.op_id)].data_deps);
  }
  CHECK(tl.memory.size() == 1);
  CHECK(tl.memory[0].bytes == 1234);
  CHECK(tl.context.at("gpu_name") == "test");
  const auto steps = step_times_s(tl);
  REQUIRE(steps.size() == size_t(p.steps));
  double sum = 0;
  for (double s : steps) sum += s;
  double last_end = 0;
  for (const auto& r : tl.rows)
    if (r.kind == OpKind::compute) last_end = std::max(last_end, r.end_s);
  CHECK(sum == Approx(last_end));
  CHECK_NOTHROW(summarize(tl));
  CHECK(utc_iso8601_now().size() == 20);
  const char* argv[] = {"chunkflow-hw", "run", "--model", "a b"};
  CHECK(command_line(4, argv) == "chunkflow-hw run --model 'a b'");
}
