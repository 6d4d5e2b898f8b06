// libFuzzer harness: node files (model/node.hpp parse_node_file, format model/nodes/README.md),
// then the node's validation and documented ranges, as `--node FILE` uses them.
#include "fuzz/fuzz_util.hpp"
#include "model/error.hpp"
#include "model/limits.hpp"
#include "model/node.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_only<InputError>([&] {
    const NodeSpec n = parse_node_file(text, "fuzz.node.json");
    validate(n, "fuzz.node.json", "/node");
    check_node_ranges(n, "fuzz.node.json", "/node");
  });
  return 0;
}
