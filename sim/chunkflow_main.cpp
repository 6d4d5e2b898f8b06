// chunkflow: predicts what an offload policy does to step time and GPU memory (simulator side).
// Exit codes: 0 ok, 1 runtime failure, 2 bad input (InputError or a command-line error),
// 128 + signal when SIGINT/SIGTERM stopped a sweep (130 for SIGINT; sim/interrupt.hpp).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#include "model/error.hpp"
#include "sim/cli.hpp"
#include "sim/interrupt.hpp"

int main(int argc, char** argv) {
  chunkflow::CliContext context;
  for (int i = 0; i < argc; ++i) context.command_line += (i ? " " : "") + std::string(argv[i]);
  std::error_code ec;
  context.program_dir = std::filesystem::absolute(argv[0], ec).parent_path().string();

  CLI::App app{"chunkflow: communication-aware, chunk-granular layerwise offloading for DiT inference.\n"
               "With no command: sweep the three policies on the embedded default (Wan2.1-T2V-14B 480x832x81,\n"
               "Ulysses 2 on 2xh100-pcie) and write out/sweep.{csv,json,png}."};
  std::string out_dir = "out";
  app.add_option("--out", out_dir, "Output folder of the main job")->capture_default_str();
  app.require_subcommand(0, 1);
  chunkflow::install_interrupt_handlers();
  try {
    chunkflow::register_simulator_commands(app, context);
    chunkflow::register_calibration_commands(app, context);
    chunkflow::register_node_commands(app, context);
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) return chunkflow::run_main_job(context, out_dir);
    return 0;
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const chunkflow::Interrupted& e) {
    std::cerr << "chunkflow: " << e.what() << "\n";
    return 128 + e.signal();
  } catch (const chunkflow::InputError& e) {
    std::cerr << "chunkflow: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "chunkflow: error: " << e.what() << "\n";
    return 1;
  }
}
