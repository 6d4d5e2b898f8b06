#pragma once
// Sorting lists that arrive as a few sorted runs (issue 12, speed: sim/bound.cpp's (e) and (f)
// lists). A rank's copies reach a resource's item list in issue order, and along a copy lane the
// earliest starts grow and the tails shrink (each copy depends on the one before it), so the list
// is a handful of monotone runs, one per rank plus the collectives' items; std::sort spends
// O(n log n) comparisons on it where a merge of its runs spends O(n log runs).
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace chunkflow {

/// Sorts `v` ascending by `less` with a natural merge sort: maximal runs that are non-descending
/// under `less`, or non-ascending (then reversed in place), merged pairwise, bottom up, through
/// `buffer` (scratch, any content; `edges` likewise). O(n log r) comparisons for r runs, O(n) for a
/// list already sorted either way.
/// The result equals std::sort's when `less` is a strict weak order whose equivalent elements are
/// interchangeable for the caller (a lexicographic order over every field the caller reads): then
/// the sorted sequence is unique up to swapping equal elements. With a coarser order the order of
/// equivalent elements is this algorithm's, not std::sort's (which is unspecified).
/// tests/test_bound.cpp compares the two on random lists of runs.
template <class T, class Less>
void sort_by_runs(std::vector<T>& v, std::vector<T>& buffer, std::vector<std::size_t>& edges, Less less) {
  const std::size_t n = v.size();
  if (n < 2) return;
  edges.clear();
  edges.push_back(0);
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && !less(v[j], v[j - 1]) && !less(v[j - 1], v[j])) ++j;  // equal to v[i]
    if (j < n && less(v[j], v[j - 1])) {
      while (j < n && !less(v[j - 1], v[j])) ++j;
      std::reverse(v.begin() + std::ptrdiff_t(i), v.begin() + std::ptrdiff_t(j));
    } else {
      while (j < n && !less(v[j], v[j - 1])) ++j;
    }
    edges.push_back(j);
    i = j;
  }
  if (edges.size() <= 2) return;
  buffer.resize(n);
  while (edges.size() > 2) {
    std::size_t out = 1;  // edges are rewritten in place: run k of the next round ends at edges[k]
    std::size_t k = 0;
    for (; k + 2 < edges.size(); k += 2) {
      std::merge(v.begin() + std::ptrdiff_t(edges[k]), v.begin() + std::ptrdiff_t(edges[k + 1]),
                 v.begin() + std::ptrdiff_t(edges[k + 1]), v.begin() + std::ptrdiff_t(edges[k + 2]),
                 buffer.begin() + std::ptrdiff_t(edges[k]), less);
      edges[out++] = edges[k + 2];
    }
    if (k + 1 < edges.size()) {  // an odd run left: carried over unmerged
      std::copy(v.begin() + std::ptrdiff_t(edges[k]), v.begin() + std::ptrdiff_t(edges[k + 1]),
                buffer.begin() + std::ptrdiff_t(edges[k]));
      edges[out++] = edges[k + 1];
    }
    edges.resize(out);
    v.swap(buffer);
  }
}

}  // namespace chunkflow
