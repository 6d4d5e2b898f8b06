// libFuzzer harness: Chrome traces (traces/chrome_trace.hpp read_chrome_trace), as `chunkflow
// compare` reads predicted and measured traces; then what compare does with what was read (the
// step summary, the op-by-op comparison, its JSON) and writing the timeline back. Documented
// errors: std::runtime_error from the reader, std::invalid_argument from summarize/compare/write.
#include <optional>
#include <sstream>
#include <stdexcept>

#include "fuzz/fuzz_util.hpp"
#include "traces/chrome_trace.hpp"
#include "traces/compare.hpp"
#include "traces/timeline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chunkflow;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::optional<Timeline> t;
  fuzz::expect_only<std::runtime_error>([&] { t = read_chrome_trace(in, "fuzz.trace.json"); });
  if (!t) return 0;
  fuzz::expect_only<std::invalid_argument>([&] { (void)comparison_to_json(compare(*t, *t)); });
  fuzz::expect_only<std::invalid_argument>([&] {
    std::ostringstream out;
    write_chrome_trace(*t, out);
  });
  return 0;
}
