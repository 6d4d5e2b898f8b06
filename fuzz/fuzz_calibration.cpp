// libFuzzer harness: calibration JSON (model/calibration.hpp load_calibration), then its
// application to each built-in node and the node range check, as --calibration does.
#include "fuzz/fuzz_util.hpp"
#include "model/calibration.hpp"
#include "model/error.hpp"
#include "model/limits.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  const std::string& path = fuzz::write_input(data, size);
  fuzz::expect_only<InputError>([&] {
    const Calibration c = load_calibration(path);
    for (const std::string& id : node_ids()) {
      NodeSpec n = node(id);
      apply_calibration(c, n);
      check_node_ranges(n, path, "/node (calibrated)");
    }
  });
  return 0;
}
