// Seeded host data and checksums (see host_data.hpp).
#include "hw/host_data.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

#include "model/fnv1a.hpp"

namespace chunkflow::hw {

namespace {

// splitmix64 (Steele, Lea, Flood 2014): a stateless hash of (seed, index) → 64 random bits.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Uniform in [-1, 1) from 24 random bits.
float unit(uint64_t bits) { return float(int64_t(bits >> 40) - (int64_t(1) << 23)) * (1.0f / float(1 << 23)); }

void fill_block(const Program& p, uint64_t seed, size_t b, std::byte* dst) {
  const int64_t elems = p.block_bytes[b] / 2;
  const uint64_t block_seed = mix64(seed ^ mix64(0xb10c000000000000ull + b));
  auto ranges = p.block_linears[b];
  std::sort(ranges.begin(), ranges.end(), [](auto& x, auto& y) { return x.begin < y.begin; });
  size_t next = 0;
  for (int64_t i = 0; i < elems;) {
    const int64_t byte = i * 2;
    while (next < ranges.size() && ranges[next].end <= byte) ++next;
    float scale = 0.02f;
    int64_t until_byte = p.block_bytes[b];
    if (next < ranges.size()) {
      if (ranges[next].begin <= byte) {
        scale = std::sqrt(3.0f / float(ranges[next].k));
        until_byte = ranges[next].end;
      } else {
        until_byte = ranges[next].begin;
      }
    }
    const int64_t until = std::min(elems, (until_byte + 1) / 2);
    for (; i < until; ++i) {
      const uint16_t v = float_to_bf16(scale * unit(mix64(block_seed + uint64_t(i))));
      std::memcpy(dst + 2 * i, &v, 2);
    }
  }
}

}  // namespace

uint16_t float_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

void fill_weights(const Program& program, uint64_t seed, std::byte* host, int threads) {
  const size_t nb = program.block_bytes.size();
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t b = next++; b < nb; b = next++) fill_block(program, seed, b, host + program.block_host_offset[b]);
  };
  const int n = std::max(1, std::min<int>(threads, int(nb)));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

std::vector<uint16_t> initial_hidden(uint64_t seed, int rank, int64_t elems) {
  std::vector<uint16_t> h(size_t(std::max<int64_t>(elems, 0)));
  const uint64_t s = mix64(seed ^ mix64(0x41dde40000000000ull + uint64_t(rank)));
  for (size_t i = 0; i < h.size(); ++i) h[i] = float_to_bf16(unit(mix64(s + i)));
  return h;
}

uint64_t fnv1a64(const void* data, size_t bytes) {
  Fnv1a64 h;
  h.add(data, bytes);
  return h.value();
}

int64_t count_bf16_mismatches(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  const size_t common = std::min(a.size(), b.size()) / 2;
  int64_t wrong = int64_t(std::max(a.size(), b.size()) / 2 - common);
  for (size_t i = 0; i < common; ++i)
    if (a[2 * i] != b[2 * i] || a[2 * i + 1] != b[2 * i + 1]) ++wrong;
  return wrong;
}

}  // namespace chunkflow::hw
