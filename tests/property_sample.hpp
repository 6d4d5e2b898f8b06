#pragma once
// How many configurations the heavy property tests run (issue 11 §3: the test suite under the
// sanitizers in a time CI can afford).
//
// The normal run (no environment variable) runs every configuration a test lists or draws, and
// every assertion: 500 random configurations in test_bound, every built-in node × model (×
// layout × policy) in test_topology and test_layouts. With CHUNKFLOW_PROPERTY_CONFIGS=N (N ≥ 1;
// scripts/sanitize.sh sets it) each of those tests runs at most N of them, spread evenly over
// its list or, for a random test, the first N it draws; the assertions on each
// case are unchanged. ASan + UBSan look for memory errors and undefined behaviour on the code
// paths the sampled cases reach (every policy, every layout kind, nodes with and without NVLink);
// the property over every configuration is the normal run's job. Under the sanitizers (clang
// -O1, every library instrumented) these tests ran ≈ 15× slower than in the Release build, and
// test_bound alone (66 s in Release) did not finish in 2 h on the loaded 2-core machine.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string>

namespace chunkflow::test {

/// The limit CHUNKFLOW_PROPERTY_CONFIGS sets (a positive integer), or 0 when unset (no limit).
/// Throws std::invalid_argument when set to anything else, so a typo cannot silently run nothing.
inline int property_configs_limit() {
  const char* v = std::getenv("CHUNKFLOW_PROPERTY_CONFIGS");
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 1 || n > 1000000)
    throw std::invalid_argument("CHUNKFLOW_PROPERTY_CONFIGS='" + std::string(v) + "': expected an integer in [1, 10^6]");
  return int(n);
}

/// Number of configurations a random property test draws: `full` in the normal run, at most
/// CHUNKFLOW_PROPERTY_CONFIGS when set.
inline int property_configs(int full) {
  const int limit = property_configs_limit();
  return limit > 0 && limit < full ? limit : full;
}

/// Whether case `i` (0-based) of `n` listed cases runs: all of them in the normal run; with
/// CHUNKFLOW_PROPERTY_CONFIGS=N < n, exactly N of them: case i runs when (i·a) mod n < N, a the
/// integer coprime with n nearest above 0.618·n (a golden-ratio stride: the N cases spread over
/// the whole list and over every nested loop's period, unlike every k-th case, which with four
/// models per node would pick one model only).
inline bool property_case_runs(int i, int n) {
  const int limit = property_configs_limit();
  if (limit == 0 || limit >= n) return true;
  long a = std::max(1L, std::lround(0.6180339887 * n));
  while (std::gcd(a, long(n)) != 1) ++a;
  return (long(i) * a) % n < limit;
}

}  // namespace chunkflow::test
