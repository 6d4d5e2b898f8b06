// libFuzzer harness: a measured run's summary (sim/validate.hpp read_measured_run: chunkflow-hw
// run --output summaries and simulate --json output) and the scenario it resolves to.
#include "fuzz/fuzz_util.hpp"
#include "model/error.hpp"
#include "runtime/scenario.hpp"
#include "sim/validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  const std::string& path = fuzz::write_input(data, size);
  fuzz::expect_only<InputError>([&] {
    const std::optional<MeasuredRun> run = read_measured_run(path);
    if (run) (void)resolve_scenario(run->options);
  });
  return 0;
}
