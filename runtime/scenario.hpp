#pragma once
// Scenarios: node + workload + policy, from a JSON file and/or command-line overrides.
// Shared by `chunkflow` (sim/) and `chunkflow-hw` (hw/) so both build the same plan.
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "model/node.hpp"
#include "model/workload.hpp"
#include "runtime/policy.hpp"

namespace CLI {
class App;
}

namespace chunkflow {

struct Scenario {
  std::string file;         ///< where it was read from ("" for the embedded default)
  std::string name;
  std::string description;
  NodeSpec node;
  Workload workload;
  PolicyConfig policy;
  std::string calibration_file;  ///< the --calibration applied to `node` ("" = none)
};

/// The embedded default: Wan2.1-T2V-14B, 480×832, 81 frames, batch 1, Ulysses 2 on 2xh100-pcie,
/// chunkflow with 64 MiB chunks and auto residency.
Scenario default_scenario();

/// Reads a scenario file:
///   {"name": str, "description": str,
///    "node": "2xh100-pcie" | {"id": "2xh100-pcie", <NodeSpec numeric fields to override>},
///    "workload": {"model", "height", "width", "frames", "batch", "ulysses_degree", "ring_degree",
///                 "tp_degree", "fsdp": bool,
///                 "attention": "auto" | "fa2" | "fa3" | "sdpa" | "sage" | "tiled" (default "auto": FA3 on
///                 Hopper, FA2 elsewhere), "compile": bool (default false: eager), "harness_ops": bool
///                 (default false: the architecture's ops; true: as chunkflow-hw executes them),
///                 "steps" (denoising steps; default the model's), "cfg": "none" | "sequential" | "parallel"},
///    "policy": {"name", "chunk_mib", "resident_fraction": number | "auto", "lookahead", "simulated_steps"
///               (forwards simulated; "steps" is accepted as its former name), "memory_budget_gib"}}
/// "policy" and "description" are optional. Throws InputError naming the file and the JSON
/// pointer for malformed JSON, unknown or missing fields, wrong types and invalid values.
Scenario load_scenario(const std::string& path);

/// The same from JSON already in memory; `path` names the origin in errors and Scenario::file
/// (sim/grid.cpp composes a scenario per grid combination this way).
Scenario scenario_from_json(const nlohmann::json& j, const std::string& path);

/// Command-line overrides of a scenario (empty = keep the scenario's value).
struct ScenarioOptions {
  std::string scenario_file;
  std::optional<std::string> node, model, policy, resident_fraction;
  std::optional<int64_t> height, width, frames, batch;
  std::optional<int> ulysses, lookahead;
  std::optional<int> steps;            ///< --simulated-steps (PolicyConfig::steps)
  std::optional<int> denoising_steps;  ///< --steps (Workload::denoising_steps)
  std::optional<std::string> cfg;      ///< --cfg
  std::optional<int> ring, tp;         ///< --ring, --tp
  std::optional<bool> fsdp;            ///< --fsdp (sets true); false only from code (validate: a run without FSDP)
  std::optional<double> chunk_mib;
  std::optional<double> memory_budget_gib;  ///< --memory-budget-gib (policy options only)
  std::optional<std::string> attention;     ///< --attention fa2|fa3|sdpa|sage|tiled|auto (Workload::attention)
  bool compile = false;                     ///< --compile (Workload::compiled; the file's value when absent)
  bool harness_ops = false;                 ///< --harness-ops (Workload::harness_ops)
  std::string calibration_file;  ///< --calibration: model/calibration.hpp JSON applied to the node
};

/// Adds --scenario --node --model --height --width --frames --batch --ulysses --ring --tp --fsdp --steps --cfg
/// --attention
/// --compile --calibration, and with `with_policy` also --policy --chunk-mib --resident-fraction --lookahead
/// --memory-budget-gib (and --simulated-steps when `with_steps`), to a CLI11 (sub)command.
void add_scenario_options(CLI::App& app, ScenarioOptions& options, bool with_policy, bool with_steps);

/// The default scenario (or the --scenario file) with the overrides applied, validated; then the
/// --calibration file, if any, applied to the node (model/calibration.hpp apply_calibration).
/// Throws InputError (field = the option name, e.g. "--frames") for bad values, and InputError
/// naming the calibration file and the JSON pointer for a bad calibration.
Scenario resolve_scenario(const ScenarioOptions& options);

}  // namespace chunkflow
