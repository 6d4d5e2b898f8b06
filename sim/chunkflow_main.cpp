// chunkflow: predicts what an offload policy does to step time and GPU memory (simulator side).
// Exit codes: 0 ok, 1 runtime failure, 2 bad input (InputError or a command-line error),
// killed by the signal itself when SIGINT/SIGTERM stopped a sweep (a shell reports 130 for SIGINT,
// 143 for SIGTERM; sim/interrupt.hpp).
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "model/error.hpp"
#include "sim/cli.hpp"
#include "sim/interrupt.hpp"

#if defined(CHUNKFLOW_JEMALLOC)
/// jemalloc's options, read when it starts (the build links it into this program: CMakeLists.txt
/// CHUNKFLOW_JEMALLOC). A sweep builds, simulates and frees one plan per configuration; a 1 MiB-chunk
/// plan of the main job's Wan-14B is ~10^5 ops (~23 MB of them) plus the simulator's and the
/// bound's arrays, and on 4 KiB pages their first touches were ~30,000 page faults, ~38 % of the
/// default sweep's CPU time on this machine's kernel (README "Speed", the main job).
/// - dirty_decay_ms, muzzy_decay_ms -1: freed pages are never handed back to the kernel, so the
///   next configuration reuses them without faulting. The process holds its peak footprint to
///   exit: the largest configurations running at once, not a sum over configurations.
/// Measured 2026-11-27 (this 2-core machine, against glibc's allocator tuned as below, alternating;
/// jemalloc then on huge pages, see the last item):
/// `chunkflow sweep --no-plot` 0.30–0.33 s → 0.13–0.19 s wall, ~30,600 → ~3,300 page faults, peak
/// RSS 129 → 120–166 MB; scenarios/grids/large.json on 2 threads 48.7–52.1 s (median 49.9, 6 runs)
/// → 44.3–54.6 s (median 46.1, 4 runs), peak RSS 260–267 → 418–451 MB (385 MB for half its
/// configurations, lookahead 1 only); rows byte-identical (session 22, without narenas).
/// - narenas:1 (session 24): one arena for every thread (besides the one jemalloc keeps for
///   allocations over 8 MiB), so the pages one thread's configuration freed serve the next
///   configuration of either thread; with an arena per thread, each held its own peak. The default
///   sweep on 2 threads, 30 alternating runs each: system time median 40 → 28 ms (wall within the
///   host's noise), huge-page faults 64 → 55, peak RSS 138–147 → 130–134 MB; the large grid: peak
///   RSS 395–417 → 340–348 MB, time 64.2 and 75.6 s against 73.6 and 66.5 s (noise), rows identical.
/// - No transparent huge pages asked for (session 26: jemalloc's thp and metadata_thp at their
///   defaults, so the kernel's own THP mode decides; sessions 22–25 set thp:always and
///   metadata_thp:always). This machine is a VM whose balloon reports free 2 MiB blocks to the host
///   (virtio_balloon free page reporting, page_reporting_order 9), which drops them: a huge page
///   is such a block, so one faulted in after a pause is backed again by the host while the kernel
///   zeroes it (no compaction: /proc/vmstat compact_stall 0). `chunkflow sweep --no-plot` after
///   15–25 s idle, alternating (2026-11-28 00:15–00:46 UTC): 0.31–0.42 s wall, 0.36–0.54 s system
///   time with huge pages (15 runs), 0.14–0.27 s and 0.06–0.26 s without (19 runs); medians of the
///   last 5 pairs 0.35 → 0.18 s. Back to back, huge pages win a little: medians 0.13 against
///   0.16 s (10 runs each), system time 0.03 against 0.07 s. A run after a pause is what a user
///   starts, so the pause case decides. The main job (its plot's time) and the grids do not move
///   beyond the noise: main job after a pause 1.22 against 1.25 s (medians of 5); medium.json
///   4.55 → 4.05 s (medians of 5 pairs); large.json 61.1, 65.3 and 67.6 s with against 71.2,
///   62.2 and 66.4 s without, rows identical.
extern "C" {
// NOLINTNEXTLINE(cppcoreguidelines-avoid-non-const-global-variables): jemalloc reads this symbol
const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1,narenas:1";
}
#endif

namespace {

/// Without jemalloc: glibc's allocator by default maps every block over 128 KiB (the threshold
/// rises to the largest mapped block freed, up to 32 MiB) and returns the top of the heap to the
/// kernel once 128 KiB of it are free. A sweep builds, simulates and frees one plan per
/// configuration, so each one paid first-touch page faults again for memory the one before had
/// just given back. Here blocks under 32 MiB (glibc's largest dynamic threshold; a 1 MiB-chunk
/// plan's op array is ~20 MB) come from the heap, and the heap's top is returned only past
/// 256 MiB free. Measured 2026-11-25 (this 2-core machine, load 3-4): `chunkflow sweep --no-plot
/// --threads 1` 30,140 → 19,740 page faults, 359 → 330 ms CPU (median of 9), peak RSS 84.6 →
/// 86.1 MB (2 threads: 122.8 → 138.0 MB, each thread's arena keeps its free top);
/// scenarios/grids/medium.json on 2 threads 174-177 → 173-178 MB peak RSS, CPU time unchanged
/// within noise.
void tune_allocator() {
#if defined(__GLIBC__) && !defined(CHUNKFLOW_JEMALLOC)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

/// Ends the process by `sig` itself, after the standard streams are flushed: the default action is
/// restored and the signal raised. A shell then sees a child killed by SIGINT and stops a loop of
/// chunkflow calls (bash's "wait and cooperative exit"), which a normal exit with status 130 does
/// not tell it; `$?` is 128 + sig either way. Returns 128 + sig only if the signal did not end the
/// process.
int end_by_signal(int sig) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
  return 128 + sig;
}

}  // namespace

int main(int argc, char** argv) {
  tune_allocator();
  // The plotting scripts run as child processes that chunkflow waits for (sim/python_process.hpp);
  // a parent that started chunkflow with SIGCHLD ignored would make them unwaitable.
  std::signal(SIGCHLD, SIG_DFL);
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
    const int rc = app.get_subcommands().empty() ? chunkflow::run_main_job(context, out_dir) : 0;
    // A command that does not stop early (all but the sweeps: they take milliseconds, or a plot
    // that run_python terminates) has run to its end when a signal came: it still ends by the
    // signal, so that a shell loop of calls stops as it does for a sweep.
    if (const int sig = chunkflow::interrupt_signal()) {
      std::cerr << "chunkflow: interrupted by " << chunkflow::signal_name(sig)
                << " as the command ended; the files it names above are complete\n";
      return end_by_signal(sig);
    }
    return rc;
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const chunkflow::Interrupted& e) {
    std::cerr << "chunkflow: " << e.what() << "\n";
    return end_by_signal(e.signal());
  } catch (const chunkflow::InputError& e) {
    std::cerr << "chunkflow: error: " << e.what() << "\n";
    if (const int sig = chunkflow::interrupt_signal()) return end_by_signal(sig);  // a signal came too
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "chunkflow: error: " << e.what() << "\n";
    if (const int sig = chunkflow::interrupt_signal()) return end_by_signal(sig);
    return 1;
  }
}
