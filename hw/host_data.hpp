#pragma once
// Host-side data of the harness: seeded bf16 weights and hidden states, checksums and
// comparisons of activations. Host-only (no CUDA headers).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hw/program.hpp"

namespace chunkflow::hw {

/// bf16 bits of a float, rounded to nearest even (NaN kept quiet).
uint16_t float_to_bf16(float x);
/// The float a bf16 bit pattern stands for (exact).
float bf16_to_float(uint16_t b);

/// Fills the pinned host weights of `program` (program.host_weight_bytes bytes at `host`):
/// every bf16 element of a linear's W is uniform in ±sqrt(3/k) (unit-variance outputs for
/// unit-RMS inputs), every other element (biases, norm scales, modulation tables) uniform in
/// ±0.02. The value of element i of block b depends only on (seed, b, i), so the result is the
/// same for any thread count. Uses up to `threads` threads (≥ 1).
void fill_weights(const Program& program, uint64_t seed, std::byte* host, int threads);

/// The initial hidden state of `rank`: `elems` bf16 values uniform in ±1, from (seed, rank).
std::vector<uint16_t> initial_hidden(uint64_t seed, int rank, int64_t elems);

/// 64-bit FNV-1a of a byte range (the checksum printed by `chunkflow-hw check`).
uint64_t fnv1a64(const void* data, size_t bytes);

/// Number of bf16 elements whose bits differ between `a` and `b` (the `#wrong` column); a size
/// difference counts every missing element as wrong.
int64_t count_bf16_mismatches(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

}  // namespace chunkflow::hw
