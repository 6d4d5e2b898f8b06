// libFuzzer harness: kernel timings (scripts/measure_kernels.py's JSON) as `chunkflow validate
// --kernels` reads them: the file, the GPU its context names (catalogue_gpu_for_device), each point
// priced on the H200 node and on an Ada node (model/kernel_check.hpp), and the JSON report.
#include "fuzz/fuzz_util.hpp"
#include "model/error.hpp"
#include "model/json_file.hpp"
#include "model/kernel_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  const std::string& path = fuzz::write_input(data, size);
  static const NodeSpec h200 = node("1xh200"), rtx4090 = node("4xrtx4090");
  fuzz::expect_only<InputError>([&] {
    const nlohmann::json k = read_json_file(path, "the kernels file");
    const auto [gpu_name, sm_count] = kernels_device(k, path);
    (void)catalogue_gpu_for_device(gpu_name, sm_count);
    for (const NodeSpec* n : {&h200, &rtx4090}) {
      try {
        (void)kernel_check_to_json(check_kernels(k, path, *n)).dump();
      } catch (const InputError& e) {
        // A file of one GPU fails on the other node; anything else is an error of the file itself.
        if (e.field() != "/context/sm_count" && e.field() != "/context/gpu_name") throw;
      }
    }
  });
  return 0;
}
