// Scenario input (issue 2 §7): every bad input gives an InputError that names the file, the field
// (JSON pointer or option) and the expected form.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "model/error.hpp"
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
  "policy": {"name": "chunkflow", "chunk_mib": 64, "resident_fraction": "auto", "lookahead": 1, "steps": 2}})";

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

TEST_CASE("every shipped scenario file loads", "[scenario]") {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(CHUNKFLOW_SOURCE_DIR) + "/scenarios")) {
    INFO(entry.path().string());
    CHECK_NOTHROW(load_scenario(entry.path().string()));
    ++count;
  }
  CHECK(count >= 20);
}
