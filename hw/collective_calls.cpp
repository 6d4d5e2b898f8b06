// Plan collective → NCCL call mapping; see collective_calls.hpp.
#include "hw/collective_calls.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace chunkflow::hw {

const char* to_string(NcclApi a) {
  switch (a) {
    case NcclApi::send_recv: return "send_recv";
    case NcclApi::all_reduce: return "all_reduce";
    case NcclApi::all_gather: return "all_gather";
  }
  return "?";
}

std::vector<int> collective_group(const Workload& w, CollectiveKind kind, int rank) {
  const int N = gpus_used(w);
  const RankCoordinates c = rank_coordinates(w, rank);  // throws std::out_of_range
  std::vector<int> group;
  // The ranks that differ from `rank` only in coordinate `vary` (degree n), in that coordinate's order.
  auto along = [&](int RankCoordinates::*vary, int n) {
    RankCoordinates x = c;
    for (int i = 0; i < n; ++i) {
      x.*vary = i;
      group.push_back(rank_of(w, x));
    }
  };
  switch (kind) {
    case CollectiveKind::all_to_all: along(&RankCoordinates::ulysses, w.ulysses_degree); break;
    case CollectiveKind::ring_kv: along(&RankCoordinates::ring, w.ring_degree); break;
    case CollectiveKind::all_reduce: along(&RankCoordinates::tp, w.tp_degree); break;
    case CollectiveKind::all_gather:  // the ranks holding the same TP shard, in rank order
      for (int i = 0; i < N; ++i)
        if (rank_coordinates(w, i).tp == c.tp) group.push_back(i);
      break;
    case CollectiveKind::cfg_gather:
      if (resolved_cfg(w) != CfgMode::parallel || N % 2 != 0)
        throw std::invalid_argument("cfg_gather collective without parallel CFG (" + layout_text(w) + ")");
      group = {rank % (N / 2), rank % (N / 2) + N / 2};
      break;
  }
  return group;
}

std::vector<std::vector<int>> collective_groups(const Workload& w, CollectiveKind kind) {
  std::vector<std::vector<int>> groups;
  for (int r = 0; r < gpus_used(w); ++r) {
    auto g = collective_group(w, kind, r);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(std::move(g));
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return groups;
}

NcclCall nccl_call(const Workload& w, CollectiveKind kind, int rank, int64_t buffer_bytes) {
  if (buffer_bytes < 0)
    throw std::invalid_argument(std::string(collective_kind_name(kind)) + ": buffer of " +
                                std::to_string(buffer_bytes) + " bytes is not ≥ 0");
  NcclCall c;
  c.kind = kind;
  c.group = collective_group(w, kind, rank);
  c.group_rank = int(std::find(c.group.begin(), c.group.end(), rank) - c.group.begin());
  const int64_t n = int64_t(c.group.size());
  const int64_t S = buffer_bytes;
  c.buffer_bytes = S;
  switch (kind) {
    case CollectiveKind::all_to_all:
      c.api = NcclApi::send_recv;
      c.peer_bytes = S / n;
      c.send_buffer_bytes = c.recv_buffer_bytes = S;
      break;
    case CollectiveKind::ring_kv:
      c.api = NcclApi::send_recv;
      c.peer_bytes = S;
      c.steps = int(std::max<int64_t>(n - 1, 0));
      c.send_buffer_bytes = c.recv_buffer_bytes = S;
      break;
    case CollectiveKind::all_reduce:
      c.api = NcclApi::all_reduce;
      c.buffer_bytes = S / 2 * 2;  // whole bf16 values
      c.send_buffer_bytes = c.recv_buffer_bytes = c.buffer_bytes;
      break;
    case CollectiveKind::all_gather:
    case CollectiveKind::cfg_gather:
      c.api = NcclApi::all_gather;
      c.send_buffer_bytes = S;
      c.recv_buffer_bytes = n * S;
      break;
  }
  return c;
}

std::vector<PeerFlow> nccl_wire_flows(const NcclCall& c) {
  const int n = int(c.group.size());
  const int self = c.group.at(size_t(c.group_rank));
  std::map<int, double> to;  // destination → bytes
  const double S = double(c.buffer_bytes);
  if (n >= 2) {
    const int next = c.group[size_t((c.group_rank + 1) % n)];
    switch (c.api) {
      case NcclApi::send_recv:
        if (c.kind == CollectiveKind::ring_kv) {
          to[next] += double(c.steps) * double(c.peer_bytes);
        } else {
          for (int peer : c.group)
            if (peer != self) to[peer] += double(c.peer_bytes);
        }
        break;
      case NcclApi::all_reduce: to[next] += 2.0 * (n - 1) / n * S; break;
      case NcclApi::all_gather: to[next] += double(n - 1) * S; break;
    }
  }
  std::vector<PeerFlow> flows;
  for (const auto& [dst, bytes] : to) flows.push_back({self, dst, bytes});
  return flows;
}

}  // namespace chunkflow::hw
