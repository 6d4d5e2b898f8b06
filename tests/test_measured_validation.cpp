// CI gate on real hardware data: for every device folder under traces/measured/ that holds
// measured runs, the calibrated simulator's step-time error on the held-out runs is at most 5 %
// mean and 10 % max (mission fidelity goal; systems-and-hardware.md §6 for what published
// simulators reach). The calibration of a device is traces/measured/<device>/calibration.json
// (written by `chunkflow calibrate`); its `sources` mark the runs used for fitting, which are
// left out (sim/validate.hpp). With no measured runs the test passes vacuously and says so.
#include <catch2/catch.hpp>
#include <filesystem>
#include <iostream>

#include "sim/validate.hpp"

using namespace chunkflow;
namespace fs = std::filesystem;

namespace {
/// Acceptance: mean and max |step-time error| over held-out runs (the thresholds).
constexpr double kMeanAbsErrorLimit = 0.05;
constexpr double kMaxAbsErrorLimit = 0.10;
}  // namespace

TEST_CASE("calibrated simulator: held-out step-time error <= 5 % mean and <= 10 % max on traces/measured") {
  const fs::path root = fs::path(CHUNKFLOW_SOURCE_DIR) / "traces" / "measured";
  std::vector<fs::path> devices;
  std::error_code ec;
  if (fs::is_directory(root, ec))
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.is_directory()) devices.push_back(e.path());
  std::sort(devices.begin(), devices.end());
  int validated = 0;
  for (const fs::path& dev : devices) {
    const auto runs = find_measured_runs(dev.string(), true);
    if (runs.empty()) continue;
    const fs::path cal = dev / "calibration.json";
    INFO("device folder " << dev.string() << ": " << runs.size() << " measured runs, calibration "
                          << (fs::exists(cal) ? cal.string() : std::string("none (built-in node parameters)")));
    const ValidationResult v = validate_runs(runs, fs::exists(cal) ? cal.string() : "");
    INFO("held-out runs " << v.held_out << ", mean |error| " << v.mean_abs_error << ", max |error| " << v.max_abs_error
                          << " (limits " << kMeanAbsErrorLimit << ", " << kMaxAbsErrorLimit << ")");
    REQUIRE(v.held_out > 0);  // every run used for fitting: nothing validates the calibration
    CHECK(v.mean_abs_error <= kMeanAbsErrorLimit);
    CHECK(v.max_abs_error <= kMaxAbsErrorLimit);
    ++validated;
  }
  if (validated == 0) {
    std::cout << "test_measured_validation: no measured runs under " << root.string()
              << " (none recorded yet); nothing to validate, passing vacuously\n";
    WARN("no measured runs under " << root.string() << ": skipped (passes vacuously)");
  }
  SUCCEED();
}
