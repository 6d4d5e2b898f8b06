#pragma once
// The peer flows of one collective stage: which GPU pairs it connects and how many bytes each flow
// carries, in NCCL's algorithm shape. The one definition the simulator routes over the topology
// (sim/flows.hpp, which gives each kind's time alone against nccl-tests' busbw definitions,
// NVIDIA/nccl-tests doc/PERFORMANCE.md) and the planner's link model counts (model/link_model.hpp).
#include <vector>

#include "model/workload.hpp"

namespace chunkflow {

/// One flow: GPU rank `src` to GPU rank `dst` (ranks as model/workload.hpp gpus_used numbers
/// them), `bytes` bytes. kHostEnd as an end: the host (pcie_proxy, where GPU 0 stands for the group
/// and its all-to-all goes to host memory and back).
struct PeerFlow {
  int src = 0, dst = 0;
  double bytes = 0;
};
constexpr int kHostEnd = -1;

/// The flows of one collective of kind `kind` with per-rank buffer `buffer_bytes` (≥ 0; nccl-tests'
/// per-rank size, StageCost::all_to_all_buffer_bytes) for workload `w`, over every group:
///  all_to_all (Ulysses, P = U): S/P from every member of each Ulysses group to every other; empty
///      for P < 2. With `pcie_proxy`: (P−1)/P·S from GPU 0 to the host and the same back.
///  ring_kv (R): each ring-attention group a ring in rank order, (R−1)·S per flow.
///  all_reduce (TP, T): each TP group a ring, 2(T−1)/T·S per flow (reduce-scatter + all-gather).
///  all_gather (FSDP): one ring per TP coordinate over the N = fsdp_degree(w) ranks holding that TP
///      shard, in rank order (every rank without TP), (N−1)·S per flow.
///  cfg_gather (parallel CFG): rank g and g + N/2 exchange S each way.
/// A group of one rank (FSDP on one GPU) has no flows. The order is fixed (groups by their first rank, then members) so results do not depend on it.
std::vector<PeerFlow> collective_peer_flows(const Workload& w, CollectiveKind kind, double buffer_bytes,
                                            bool pcie_proxy);

}  // namespace chunkflow
