// The GPU test program's main: exits 77 (ctest SKIP_RETURN_CODE) when no CUDA device is present,
// otherwise runs the Catch2 tests of tests/gpu/.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "hw/executor.hpp"

int main(int argc, char** argv) {
  try {
    chunkflow::hw::require_devices(1);
  } catch (const chunkflow::hw::NoDeviceError& e) {
    std::fprintf(stderr, "skipping the GPU tests: %s\n", e.what());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
