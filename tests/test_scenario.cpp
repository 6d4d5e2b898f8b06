// Scenario input (issue 2 §7): every bad input gives an InputError that names the file, the field
// (JSON pointer or option) and the expected form.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "model/kernel_model.hpp"
#include "runtime/scenario.hpp"

using namespace chunkflow;

namespace {

/// Writes `text` to a scenario file in a fresh temporary folder and returns its path.
std::string scenario_file(const std::string& text) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path() / "chunkflow_test_scenario" / std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto path = dir / (std::to_string(counter++) + ".json");
  std::ofstream(path) << text;
  return path.string();
}

const std::string kGood = R"({"name": "t", "node": "2xh100-pcie",
  "workload": {"model": "wan2.1-t2v-14b", "height": 480, "width": 832, "frames": 81, "batch": 1, "ulysses_degree": 2},
  "policy": {"name": "chunkflow", "chunk_mib": 64, "resident_fraction": "auto", "lookahead": 1, "simulated_steps": 2}})";

/// Replaces the first occurrence of `from` in the good scenario.
std::string with(const std::string& from, const std::string& to) {
  const auto pos = kGood.find(from);
  REQUIRE(pos != std::string::npos);
  return kGood.substr(0, pos) + to + kGood.substr(pos + from.size());
}

/// Loads `text` and checks the error names the file, `field` and contains `expected`.
void check_error(const std::string& text, const std::string& field, const std::string& expected) {
  const std::string path = scenario_file(text);
  try {
    load_scenario(path);
    FAIL("no error for " << field);
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK(e.file() == path);
    CHECK(e.field() == field);
    // Exactly "file: field: message", the field named once.
    CHECK(std::string(e.what()) == path + (field.empty() ? "" : ": " + field) + ": " + e.message());
    CHECK(e.message().find(field.empty() ? std::string("\x01") : field + ":") == std::string::npos);
    CHECK_THAT(e.what(), Catch::Contains(expected));
  }
}

}  // namespace

TEST_CASE("a well-formed scenario loads with its values", "[scenario]") {
  const Scenario s = load_scenario(scenario_file(kGood));
  CHECK(s.workload.frames == 81);
  CHECK(s.workload.ulysses_degree == 2);
  CHECK(s.node.id == "2xh100-pcie");
  CHECK_FALSE(s.policy.resident_fraction.has_value());
  CHECK(s.policy.chunk_bytes == 64 * kMiB);
}

TEST_CASE("bad scenario files name the file, the JSON pointer and the expected form", "[scenario]") {
  check_error("{\"name\": \"t\", ", "", "malformed JSON");
  check_error(with("wan2.1-t2v-14b", "wan9"), "/workload/model", "wan2.1-t2v-14b");
  check_error(with("\"2xh100-pcie\"", "\"8xb200\""), "/node", "2xh100-pcie");
  check_error(with("\"chunkflow\"", "\"magic\""), "/policy/name", "no-offload");
  check_error(with("\"height\": 480, ", ""), "/workload/height", "missing");
  check_error(with("\"batch\": 1", "\"batch\": 1, \"colour\": 3"), "/workload/colour", "unknown field");
  check_error(with("\"frames\": 81", "\"frames\": 80"), "/workload/frames", "4k+1");
  check_error(with("\"frames\": 81", "\"frames\": \"81\""), "/workload/frames", "integer");
  check_error(with("\"ulysses_degree\": 2", "\"ulysses_degree\": 3"), "/workload/ulysses_degree", "divid");
  check_error(with("\"chunk_mib\": 64", "\"chunk_mib\": 0"), "/policy/chunk_mib", "> 0");
  check_error(with("\"chunk_mib\": 64", "\"chunk_mib\": -8"), "/policy/chunk_mib", "> 0");
  check_error(with("\"auto\"", "1.5"), "/policy/resident_fraction", "[0, 1]");
  check_error(with("\"auto\"", "\"most\""), "/policy/resident_fraction", "[0, 1]");
  check_error(with("\"2xh100-pcie\"", "{\"id\": \"2xh100-pcie\", \"copy_engine_bytes_per_s\": -1}"),
              "/node/copy_engine_bytes_per_s", "expected a number in [1e+08, 1e+13] bytes/s");
  // An override is named by the key the file gives (it sets every link's capacity).
  check_error(with("\"2xh100-pcie\"", "{\"id\": \"2xh100-pcie\", \"h2d_link_bytes_per_s\": 0}"), "/node/h2d_link_bytes_per_s",
              "expected a number in [1e+08, 1e+13] bytes/s");
}

TEST_CASE("command-line overrides are validated and named by their option", "[scenario]") {
  ScenarioOptions o;
  o.frames = 80;
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::Contains("--frames") && Catch::Contains("4k+1"));
  o = {};
  o.ulysses = 3;
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::Contains("--ulysses"));
  o = {};
  o.ulysses = 4;  // divides Wan-14B's 40 heads, but the node has two GPUs
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::Contains("--ulysses") && Catch::Contains("at most 2"));
  o = {};
  o.chunk_mib = 0;
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::Contains("--chunk-mib"));
  o = {};
  o.resident_fraction = "-0.1";
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::Contains("--resident-fraction"));
  o = {};
  o.model = "flux.1-dev";  // an image model: frames default to 1, Ulysses 2 divides 24 heads
  o.height = 1024;
  o.width = 1024;
  const Scenario s = resolve_scenario(o);
  CHECK(s.workload.frames == 1);
}

TEST_CASE("attention kernel and compile: scenario fields and options set the workload, FA3 only on Hopper", "[scenario]") {
  // Defaults: auto (FA3 on Hopper, FA2 elsewhere) and eager.
  const Scenario d = load_scenario(scenario_file(kGood));
  CHECK(d.workload.attention == AttentionKernel::automatic);
  CHECK_FALSE(d.workload.compiled);
  CHECK(resolve_attention_kernel(d.workload.attention, d.node) == AttentionKernel::fa3);
  const Scenario f = load_scenario(scenario_file(with("\"ulysses_degree\": 2", "\"ulysses_degree\": 2, \"attention\": \"fa2\", \"compile\": true")));
  CHECK(f.workload.attention == AttentionKernel::fa2);
  CHECK(f.workload.compiled);
  check_error(with("\"ulysses_degree\": 2", "\"ulysses_degree\": 2, \"attention\": \"flash\""), "/workload/attention", "fa2, fa3, sdpa, sage");
  check_error(with("\"ulysses_degree\": 2", "\"ulysses_degree\": 2, \"compile\": \"yes\""), "/workload/compile", "true or false");
  check_error(R"({"name": "t", "node": "4xrtx4090",
    "workload": {"model": "wan2.1-t2v-1.3b", "height": 480, "width": 832, "frames": 81, "attention": "fa3"}})",
              "/workload/attention", "FlashAttention-3 needs Hopper");

  ScenarioOptions o;
  o.attention = "sage";
  o.compile = true;
  Scenario s = resolve_scenario(o);
  CHECK(s.workload.attention == AttentionKernel::sage);
  CHECK(s.workload.compiled);
  CHECK(s.name.find("-sage-compiled") != std::string::npos);  // a different scenario, named after what it is
  o = {};
  o.attention = "fa4";
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::Contains("--attention") && Catch::Contains("fa2, fa3, sdpa, sage"));
  o = {};
  o.node = "4xrtx4090";
  o.model = "wan2.1-t2v-1.3b";
  s = resolve_scenario(o);
  CHECK(resolve_attention_kernel(s.workload.attention, s.node) == AttentionKernel::fa2);  // auto off Hopper
  o.attention = "fa3";
  CHECK_THROWS_WITH(resolve_scenario(o), Catch::Contains("--attention") && Catch::Contains("Hopper"));

  // The options reach the compute model: on H100 FA2 is slower than FA3 (FA3 paper, Fig. 5-7), and
  // compiling fuses elementwise ops (fewer HBM bytes), so a forward gets faster, never slower.
  auto forward_s = [](const ScenarioOptions& opts) {
    const Scenario sc = resolve_scenario(opts);
    const ForwardCost cost = forward_cost(sc.workload);
    double t = 0;
    for (const BlockCost& b : cost.blocks)
      for (const StageCost& st : b.stages) t += stage_compute_time_s(st, sc.node);
    return t;
  };
  ScenarioOptions fa3_opts, fa2_opts, compiled_opts;
  fa3_opts.attention = "fa3";
  fa2_opts.attention = "fa2";
  compiled_opts.attention = "fa3";
  compiled_opts.compile = true;
  CHECK(forward_s(fa2_opts) > forward_s(fa3_opts));
  CHECK(forward_s(compiled_opts) < forward_s(fa3_opts));
}

TEST_CASE("every shipped scenario file loads", "[scenario]") {
  int count = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
    if (entry.path().parent_path().filename() == "grids") continue;  // grid files (sim/grid.hpp)
    INFO(entry.path().string());
    CHECK_NOTHROW(load_scenario(entry.path().string()));
    ++count;
  }
  CHECK(count >= 20);
}
