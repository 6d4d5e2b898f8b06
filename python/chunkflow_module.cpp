// The `chunkflow` Python module (issue 12 §4), pybind11: the planner and simulator for serving
// frameworks and notebooks, with the command line's options and the JSON rows' keys.
//
//   import chunkflow
//   chunkflow.model(model="flux.1-dev", height=1024, width=1024)         -> dict (`model --json`)
//   chunkflow.simulate(policy="chunkflow", chunk_mib=64, resident_fraction="auto") -> dict (`simulate --json`)
//   chunkflow.tune(memory_budget_gib=24)                                  -> dict (`tune --json`)
//   chunkflow.sweep({"models": [...], ...} | "grid.json", threads=0)     -> list of dicts (grid rows)
//
// model/simulate/tune run the command itself in-process (the same option parsing, validation and
// JSON as the CLI): keyword `snake_case=value` is the option `--snake-case value`, True a flag,
// a list several values. sweep runs a grid (sim/grid.hpp) and returns its rows in configuration
// order, each the JSON Lines object of `sweep --grid`. An input error raises chunkflow.InputError
// (a ValueError) with the CLI's message; other failures RuntimeError.
#include <pybind11/pybind11.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.hpp"
#include "sim/cli.hpp"
#include "sim/grid.hpp"
#include "sim/grid_run.hpp"

namespace py = pybind11;

namespace {

/// std::cout into a string for the lifetime of the object.
class CaptureStdout {
 public:
  CaptureStdout() : old_(std::cout.rdbuf(buffer_.rdbuf())) {}
  ~CaptureStdout() { std::cout.rdbuf(old_); }
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::streambuf* old_;
};

std::string option_value(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  return py::str(v).cast<std::string>();
}

/// Runs `chunkflow <command> --json <options>` in-process and returns its JSON as Python objects.
py::object run_command(const std::string& command, const py::kwargs& kwargs) {
  std::vector<std::string> args = {"chunkflow", command, "--json"};
  for (const auto& [key, value] : kwargs) {
    std::string opt = "--" + key.cast<std::string>();
    for (char& c : opt)
      if (c == '_') c = '-';
    if (py::isinstance<py::bool_>(value)) {
      if (value.cast<bool>()) args.push_back(opt);
      continue;
    }
    if (value.is_none()) continue;
    args.push_back(opt);
    if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
      std::string joined;
      for (const auto& item : value) joined += (joined.empty() ? "" : ",") + option_value(item);
      args.push_back(joined);
    } else {
      args.push_back(option_value(value));
    }
  }
  chunkflow::CliContext context;
  for (std::size_t i = 0; i < args.size(); ++i) context.command_line += (i ? " " : "") + args[i];
  std::string out;
  {
    CLI::App app{"chunkflow"};
    std::string main_out;
    app.add_option("--out", main_out);
    app.require_subcommand(1, 1);
    chunkflow::register_simulator_commands(app, context);
    chunkflow::register_calibration_commands(app, context);
    chunkflow::register_node_commands(app, context);
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 takes them reversed, no argv[0]
    CaptureStdout capture;
    try {
      app.parse(reversed);
    } catch (const CLI::ParseError& e) {
      throw chunkflow::InputError("", "", e.what());
    }
    out = capture.text();
  }
  return py::module_::import("json").attr("loads")(out);
}

}  // namespace

PYBIND11_MODULE(chunkflow, m) {
  m.doc() = "ChunkFlow: communication-aware, chunk-granular weight offloading for DiT inference (simulator and planner)";
  static py::exception<chunkflow::InputError> input_error(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const chunkflow::InputError& e) {
      input_error(e.what());
    }
  });
  m.def(
      "model", [](const py::kwargs& kw) { return run_command("model", kw); },
      "Shapes, FLOPs, bytes and the analytical model of a scenario: the dict of `chunkflow model --json`. "
      "Keywords are its options (scenario, node, model, height, width, frames, batch, ulysses, calibration).");
  m.def(
      "simulate", [](const py::kwargs& kw) { return run_command("simulate", kw); },
      "One policy on one scenario: the dict of `chunkflow simulate --json` (step_time_s, peak_memory_bytes, ...). "
      "Keywords are its options (policy, chunk_mib, resident_fraction, lookahead, memory_budget_gib, ...).");
  m.def(
      "tune", [](const py::kwargs& kw) { return run_command("tune", kw); },
      "The fastest configuration under a memory budget and the Pareto frontier: the dict of `chunkflow tune --json`. "
      "memory_budget_gib is required; out='' writes no files.");
  m.def(
      "sweep",
      [](const py::object& grid, int threads) {
        chunkflow::Grid g;
        if (py::isinstance<py::str>(grid)) {
          g = chunkflow::load_grid(grid.cast<std::string>());
        } else {
          const std::string text = py::module_::import("json").attr("dumps")(grid).cast<std::string>();
          g = chunkflow::grid_from_text(text, "<grid>", "");
        }
        std::vector<std::string> lines;
        {
          py::gil_scoped_release release;
          chunkflow::for_each_grid_row(g, threads, [&](const std::string& line) { lines.push_back(line); });
        }
        py::list rows;
        const py::object loads = py::module_::import("json").attr("loads");
        for (const auto& l : lines) rows.append(loads(l));
        return rows;
      },
      py::arg("grid"), py::arg("threads") = 0,
      "Every configuration of a grid (a dict with the grid file's keys, or a grid file path; "
      "scenarios/grids/README.md): a list of row dicts in configuration order, the rows of `sweep --grid`'s grid.jsonl.");
}
