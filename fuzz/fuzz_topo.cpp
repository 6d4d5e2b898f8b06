// libFuzzer harness: `nvidia-smi topo -m` text (model/topo_import.hpp import_topo), and the node
// file it writes read back with parse_node_file, as `chunkflow node import` does.
#include "fuzz/fuzz_util.hpp"
#include "model/error.hpp"
#include "model/node.hpp"
#include "model/topo_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_only<InputError>([&] {
    TopoImportOptions o;
    o.gpu_id = "h100-sxm";
    (void)parse_node_file(import_topo(text, "fuzz.topo.txt", o), "imported.json");
  });
  return 0;
}
