#pragma once
// 64-bit FNV-1a (Fowler–Noll–Vo; offset basis 0xcbf29ce484222325, prime 0x100000001b3), the one
// content hash of the project: files named in calibrations and validations (model/calibration.hpp
// file_fnv1a64), the harness's activation checksums (hw/host_data.hpp), and a plan's identity
// (runtime/step_plan.hpp plan_fnv1a64). Not cryptographic: it tells equal contents from different
// ones, it does not defend against a crafted collision.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace chunkflow {

/// An FNV-1a 64 state fed byte ranges in order; value() is the hash of everything fed so far.
class Fnv1a64 {
 public:
  /// Feeds `bytes` bytes at `data` (none when `bytes` is 0).
  void add(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  uint64_t value() const { return h_; }
  /// value() as "0x" and 16 lower-case hex digits (the form files and summaries record).
  std::string hex() const {
    char out[24];
    std::snprintf(out, sizeof out, "0x%016llx", static_cast<unsigned long long>(h_));
    return out;
  }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace chunkflow
