// libFuzzer harness: microbenchmark JSON (model/calibration.hpp read_measurement_file, the
// chunkflow-hw bench output of hw/BENCH_SCHEMA.md), then the fits `chunkflow calibrate` makes
// from it on the 1xh100-sxm node.
#include "fuzz/fuzz_util.hpp"
#include "model/calibration.hpp"
#include "model/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  const std::string& path = fuzz::write_input(data, size);
  fuzz::expect_only<InputError>([&] {
    const MeasurementFile f = read_measurement_file(path);
    (void)fit_calibration({f}, node("1xh100-sxm"));
  });
  return 0;
}
