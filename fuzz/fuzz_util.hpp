#pragma once
// Helpers of the libFuzzer harnesses (issue 11 §2). Each harness feeds the fuzzer's bytes to one
// parser of user input. The contract checked: malformed input ends in the parser's documented
// error (InputError for the model/runtime/sim parsers, std::runtime_error for traces/), never in
// a crash, a sanitizer report, a hang or any other exception; anything else aborts, which
// libFuzzer reports as a crash and saves as a reproducer (scripts/fuzz.sh).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <typeinfo>

namespace chunkflow::fuzz {

/// Writes the input to a per-process file under /dev/shm (or /tmp) and returns its path: the
/// file parsers take paths, as the programs do.
inline const std::string& write_input(const uint8_t* data, size_t size) {
  static const std::string path = [] {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/chunkflow-fuzz-" + std::to_string(::getpid()) + ".json";
  }();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

/// Runs `parse`; returns normally when it succeeds or throws `Expected`; aborts with the
/// exception's type and message for any other exception.
template <class Expected, class F>
void expect_only(F&& parse) {
  try {
    parse();
  } catch (const Expected&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chunkflow fuzz: unexpected %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

}  // namespace chunkflow::fuzz
