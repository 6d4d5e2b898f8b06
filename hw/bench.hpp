#pragma once
// Microbenchmarks of `chunkflow-hw bench` (nvbandwidth style): a registry of measurements, each a
// key, a one-line description and a run; one that cannot run here is reported as waived with the
// reason. Every point is timed with CUDA events after warm-up, `repeat` times, and reported as
// median, min and max. The JSON schema is hw/BENCH_SCHEMA.md. CUDA-free header.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hw/executor.hpp"

namespace chunkflow::hw {

/// One measured point: named numbers (SI units in the names) and labels.
struct BenchPoint {
  std::vector<std::pair<std::string, std::string>> labels;
  std::vector<std::pair<std::string, double>> numbers;
};

struct BenchResult {
  std::string key;
  std::string description;
  std::string status = "ok";  ///< "ok" or "waived"
  std::string reason;         ///< why it was waived
  std::vector<BenchPoint> points;
};

/// A GEMM shape to time: Y[m × n] = X[m × k] · W[n × k]ᵀ (one linear of a block kind).
struct BenchGemm {
  std::string model, block_kind, linear;
  int64_t m = 0, k = 0, n = 0;
};

/// An attention shape to time: rows = batch·heads on one rank.
struct BenchAttention {
  std::string model;
  int64_t rows = 0, q_tokens = 0, kv_tokens = 0, head_dim = 0;
};

struct BenchConfig {
  int warmup = 3;                      ///< untimed repetitions per point
  int repeat = 10;                     ///< timed repetitions per point (median, min, max)
  int64_t min_bytes = 4 << 10;         ///< transfer sweep: min_bytes, ×4, … ≤ max_bytes
  int64_t max_bytes = 1ll << 30;
  int ulysses_degree = 2;              ///< P of the proxy all-to-all
  std::vector<BenchGemm> gemms;
  std::vector<BenchAttention> attentions;
  int64_t attention_tile_bytes = kTiledAttentionWorkspaceBytes;  ///< as the executor (model/tiled_attention.hpp)
  std::vector<std::string> only;       ///< keys to run (empty: all)
  /// copy_cap: the caps to pace an H2D copy to, in bytes/s (0 = no cap).
  std::vector<double> copy_caps_bytes_per_s{0, 5e9, 10e9, 20e9, 30e9, 40e9, 50e9};
  int64_t pace_sub_chunk_bytes = 1ll << 20;  ///< copy_cap: sub-chunk of the paced copy
};

/// Keys and descriptions of every measurement, in run order.
std::vector<std::pair<std::string, std::string>> bench_registry();

/// Runs the selected measurements on device 0 (and every device for the NCCL one). Throws
/// NoDeviceError without a device, std::invalid_argument for an unknown key in `only`,
/// DeviceError on CUDA errors.
std::vector<BenchResult> run_benchmarks(const BenchConfig& config);

}  // namespace chunkflow::hw
