#pragma once
// Which NCCL call runs each collective of a step plan, on which communicator (the collective's
// group), with how many bytes: the plan → NCCL mapping of the hardware harness, as plain data
// (host-only, no CUDA headers), so the CPU tests check it against the simulator's flows.
//
// The simulator's one definition of each kind's peer flows and bytes is model/collective_flows.hpp
// (NCCL's algorithm shapes, nccl-tests doc/PERFORMANCE.md). The harness issues, per rank, with S
// the collective's per-rank buffer (StageCost::all_to_all_buffer_bytes, nccl-tests' size):
//   all_to_all (Ulysses, U ranks): one ncclGroupStart/End of ncclSend + ncclRecv of S/U bytes to
//       and from every member of the rank's Ulysses group (itself included, as before).
//   ring_kv (ring attention, R ranks): R−1 steps, each one ncclGroupStart/End of ncclSend of the
//       K/V block (S bytes) to the next rank of the ring and ncclRecv of S from the previous one
//       (xDiT's ring pass), double-buffered.
//   all_reduce (TP, T ranks): ncclAllReduce of S bytes (S/2 bf16 values, sum) in the TP group.
//   all_gather (FSDP, the N ranks holding one TP shard): ncclAllGather of the rank's S-byte shard
//       into N·S bytes.
//   cfg_gather (parallel CFG): ncclAllGather of S bytes in the 2-rank group {g, g + N/2} (xDiT's
//       CFG-parallel all-gather of the two noise predictions).
// Under NCCL's ring algorithm (the shape the simulator assumes; NCCL may pick another on some
// topologies, e.g. NVLS or tree) these move exactly the simulator's flows: see nccl_wire_flows.
#include <cstdint>
#include <string>
#include <vector>

#include "model/collective_flows.hpp"
#include "model/workload.hpp"

namespace chunkflow::hw {

/// The NCCL API a collective uses.
enum class NcclApi {
  send_recv,   ///< grouped ncclSend/ncclRecv (all_to_all: one group; ring_kv: one group per step)
  all_reduce,  ///< ncclAllReduce
  all_gather,  ///< ncclAllGather
};
const char* to_string(NcclApi a);  ///< "send_recv", "all_reduce", "all_gather"

/// The ranks of the communicator that rank `rank`'s collective of kind `kind` runs on, as global
/// ranks (model/workload.hpp gpus_used numbering) in communicator-rank order (the ring order):
/// all_to_all the Ulysses group, ring_kv the ring group, all_reduce the TP group (each the ranks
/// that differ from `rank` only in that coordinate), all_gather the fsdp_degree ranks with rank's
/// TP coordinate in rank order (every rank 0..N−1 without TP), cfg_gather
/// {g, g + N/2} with g = rank mod N/2. Throws std::out_of_range for a rank ∉ [0, gpus_used(w)) and
/// std::invalid_argument for cfg_gather without parallel CFG.
std::vector<int> collective_group(const Workload& w, CollectiveKind kind, int rank);

/// Every distinct group of `kind` for `w` (collective_group of each rank, deduplicated, ordered by
/// first member): the communicators the executor creates for that kind.
std::vector<std::vector<int>> collective_groups(const Workload& w, CollectiveKind kind);

/// One rank's NCCL call for one collective op.
struct NcclCall {
  CollectiveKind kind = CollectiveKind::all_to_all;
  NcclApi api = NcclApi::send_recv;
  std::vector<int> group;      ///< global ranks, communicator order (collective_group)
  int group_rank = 0;          ///< this rank's index in `group`
  int64_t buffer_bytes = 0;    ///< S, per rank (bytes; all_reduce: even, a whole number of bf16)
  /// send_recv: bytes sent to (and received from) each peer per step: all_to_all S/U (every
  /// member, self included), ring_kv S (next / previous in the ring). 0 for the other APIs.
  int64_t peer_bytes = 0;
  int steps = 1;               ///< ring_kv: R−1 send/recv steps; 1 otherwise
  int64_t send_buffer_bytes = 0;  ///< device bytes the call reads (per rank)
  int64_t recv_buffer_bytes = 0;  ///< device bytes the call writes: all_gather N·S, ring_kv S (second half of a double buffer)
};

/// The NCCL call of rank `rank` for a collective of kind `kind` with per-rank buffer `buffer_bytes`
/// (≥ 0, whole bytes; odd all_reduce buffers are rounded down to whole bf16 values; an all-to-all
/// sends ⌊S/U⌋ to each peer, as the harness always did: S is B·S_loc·d/T·2 bytes, a multiple of U
/// for every catalogued model). Formulas in the file comment. Throws std::invalid_argument for a
/// negative buffer, and as collective_group.
NcclCall nccl_call(const Workload& w, CollectiveKind kind, int rank, int64_t buffer_bytes);

/// The peer-to-peer bytes `call` puts on the wire from its rank, under NCCL's ring algorithm for
/// ncclAllReduce (reduce-scatter then all-gather: n−1 + n−1 chunks of S/n to the ring successor,
/// 2(n−1)/n·S) and ncclAllGather (n−1 shards of S to the successor, (n−1)·S), and the explicit
/// sends of send_recv (self-sends dropped: they never leave the GPU). Source: nccl-tests
/// doc/PERFORMANCE.md (busbw factors 2(n−1)/n and (n−1)/n of the algorithm's data). Bytes are
/// summed per destination; src is the call's rank.
std::vector<PeerFlow> nccl_wire_flows(const NcclCall& call);

}  // namespace chunkflow::hw
