#pragma once
// The hardware program: a StepPlan lowered to what the CUDA executor needs, as plain data.
// Built by lower() (hw/lowering.hpp, host-only, no CUDA headers) and run by hw::Executor
// (hw/executor.hpp). Keeping this header free of Boost, JSON and CUDA lets the .cu files and the
// CPU tests share it.
//
// Device memory model (per rank; hw/README.md "Weights and chunk slots"):
//  - host weights: one pinned buffer holding every block's flat weight layout (block b starts at
//    block_host_offset[b], 256-byte aligned); random bf16 values seeded per (seed, block, byte).
//  - resident arena: for block b the bytes [0, block_resident_bytes[b]) of its layout, at
//    block_resident_offset[b] (256-byte aligned), so layout byte X sits at an address ≡ X mod 256.
//  - slot pool: slot_count slots of slot_stride_bytes; an H2D chunk [begin, end) of a block lands
//    at slot·stride + begin mod 256, again keeping address ≡ layout offset mod 256.
//  - gather buffer: a linear whose weights are split over several places (resident + slots, or
//    two slots) is first gathered with device-to-device copies on the compute stream into one
//    buffer at offset begin mod 256. The GEMM then reads contiguous weights with the same
//    alignment class as in a no-offload run, which makes offloaded and no-offload results equal
//    bit for bit (same cuBLAS call, same operands).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/collective_calls.hpp"
#include "traces/timeline.hpp"

namespace chunkflow::hw {

/// Alignment of every device region and the modulus preserved between layout and device offsets.
inline constexpr int64_t kAlignBytes = 256;

/// Which collective buffer pair an op uses; index into the per-rank send/receive buffers. q, k, v, o:
/// the Ulysses all-to-alls (dit-architectures.md §6), whose receive buffers the next compute reads;
/// ring_kv, all_reduce, cfg_gather: the other collectives that send what a compute op produced
/// (their receive buffers are read by nothing: the harness times the transfer, the compute keeps
/// its own operands). FSDP's all-gather uses the weight shard and the gathered-block buffers instead.
enum class Tensor { q = 0, k = 1, v = 2, o = 3, ring_kv = 4, all_reduce = 5, cfg_gather = 6 };
inline constexpr int kTensorCount = 7;
const char* to_string(Tensor t);

/// Where one contiguous byte range of a linear's weights lives on the device.
struct WeightPiece {
  bool resident = true;       ///< true: resident arena; false: slot pool
  int64_t layout_begin = 0;   ///< bytes, in the block's flat weight layout
  int64_t layout_end = 0;
  int64_t device_offset = 0;  ///< bytes from the arena / pool base where layout_begin sits
  int h2d_op = -1;            ///< the H2D op that filled the slot (slot pieces)
  int slot = -1;
};

/// What a linear multiplies: the input rows X [m × k] are prepared by a small kernel.
enum class LinearInput {
  norm_hidden,  ///< RMSNorm of the first m rows of the hidden state (k == hidden size)
  recv_o,       ///< the output all-to-all's receive buffer, folded to m × k
  gelu_last,    ///< GELU of the previous compute op's output, folded to m × k
};

struct LinearProgram {
  int64_t m = 0, k = 0, n = 0;     ///< GEMM [m × k] · [k × n] (StageCost::gemm)
  bool bias = false;               ///< weight bytes hold n bias values after W [n × k]
  int64_t layout_begin = 0;        ///< bytes: W's offset in the block layout
  int64_t weight_bytes = 0;        ///< W and bias
  std::vector<WeightPiece> pieces; ///< in layout order, covering [layout_begin, +weight_bytes)
  /// FSDP (BlockCost::weights_gathered): W is read at layout_begin of gathered-block buffer
  /// `gathered` (0 or 1), filled by the block's all-gather; `pieces` is empty. −1 otherwise.
  int gathered = -1;
  LinearInput input = LinearInput::norm_hidden;
  int64_t recv_o_bytes = 0;        ///< input == recv_o: bytes of the all-to-all that filled it
  bool gather() const { return pieces.size() > 1; }
};

struct AttentionProgram {
  int64_t batch = 0, heads = 0, q_tokens = 0, kv_tokens = 0, head_dim = 0;  ///< StageCost::attention
  /// Q/K/V come from the receive buffer of the matching all-to-all that ran since the previous
  /// attention (Ulysses), else from the last three compute outputs folded to size.
  std::array<bool, 3> from_recv{false, false, false};
  std::array<int64_t, 3> recv_bytes{0, 0, 0};  ///< bytes of those all-to-alls
  int64_t q_elems() const { return batch * heads * q_tokens * head_dim; }
  int64_t kv_elems() const { return batch * heads * kv_tokens * head_dim; }
};

/// all_to_all: a Ulysses all-to-all (NCCL grouped send/recv, or the pcie-proxy backend);
/// collective: any other collective of the plan (ring K/V pass, TP all-reduce, FSDP all-gather,
/// CFG gather), run with OpProgram::call on communicator comm_groups[OpProgram::comm].
enum class Work { none, linear, attention, h2d, all_to_all, collective };

struct OpProgram {
  int id = 0;
  std::string name;
  OpKind kind = OpKind::compute;
  Lane lane = Lane::compute;
  int rank = 0;
  int step = 0;
  int block = -1;
  Work work = Work::none;
  LinearProgram linear;        ///< work == linear
  AttentionProgram attention;  ///< work == attention
  // work == h2d
  int slot = -1;
  int64_t host_offset = 0;     ///< bytes into the pinned host weights
  int64_t device_offset = 0;   ///< bytes into the slot pool
  int64_t h2d_bytes = 0;
  /// PlanOp::rate_cap_bytes_per_s: the executor paces the copy in sub-chunks so that it takes
  /// at least h2d_bytes / cap seconds (0 = no cap: one cudaMemcpyAsync at the copy engine's rate).
  double rate_cap_bytes_per_s = 0;
  // work == all_to_all or collective
  Tensor tensor = Tensor::q;   ///< its send/receive buffers (not used by the FSDP all-gather)
  int64_t a2a_bytes = 0;       ///< per-rank buffer (PlanOp::bytes)
  int collective_group = -1;   ///< PlanOp::collective_group: the same collective on every rank
  /// The NCCL call (hw/collective_calls.hpp) and its communicator (index into Program::comm_groups);
  /// comm −1 on the pcie-proxy backend.
  NcclCall call;
  int comm = -1;
  /// FSDP all-gather: where the rank's shard [0, a2a_bytes) of the block lives (resident arena
  /// and/or chunk slots, as LinearProgram::pieces; several pieces are gathered into one send
  /// buffer first) and which gathered-block buffer (0 or 1, alternating per all-gather) it fills.
  std::vector<WeightPiece> shard_pieces;
  int gathered = -1;
  /// Compute ops: send buffers this op fills (a fold of its output, `bytes` long) at its end,
  /// because a collective of that tensor depends on it.
  struct Pack {
    Tensor tensor = Tensor::q;
    int64_t bytes = 0;
    bool operator==(const Pack&) const = default;
  };
  std::vector<Pack> packs;
  /// Ops on other lanes of the same rank this op waits on: one cudaStreamWaitEvent on each one's
  /// end event, sorted by id. By default one per other lane, the dep enqueued last there (which
  /// implies the earlier ones); every cross-lane dep with CrossLaneWaits::every_dep
  /// (hw/lowering.hpp). Same-lane deps need none (stream order).
  std::vector<int> waits;
  std::vector<int> data_deps;  ///< the plan's data deps (timeline rows)
  double bytes = 0;            ///< the plan's bytes and flop, copied to the timeline
  double flop = 0;
};

struct Program {
  std::string policy;
  int steps = 0;
  int ranks = 0;                ///< executed ranks (GPUs used)
  int ulysses_degree = 1;       ///< P
  bool proxy = false;           ///< one GPU stands for rank 0 of a P-way group (pcie_proxy node)
  int64_t hidden = 0;           ///< d
  int64_t hidden_rows = 0;      ///< rows of the hidden state (max m over linears)

  // Weights (identical on every rank).
  std::vector<int64_t> block_bytes;            ///< flat layout size of each block
  std::vector<int64_t> block_host_offset;      ///< into the pinned host weights
  std::vector<int64_t> block_resident_bytes;   ///< [0, this) of the block stays on the GPU
  std::vector<int64_t> block_resident_offset;  ///< into the resident arena
  /// Per block: every linear's [begin, begin + k·n·2) W range and its k (for value scaling).
  struct WeightRange { int64_t begin = 0, end = 0, k = 1; };
  std::vector<std::vector<WeightRange>> block_linears;
  int64_t host_weight_bytes = 0;
  int64_t resident_arena_bytes = 0;
  int64_t non_block_weight_bytes = 0;  ///< embedders etc.: allocated and zeroed, never read
  int slot_count = 0;
  int64_t slot_bytes = 0;              ///< PlanInfo::slot_bytes
  int64_t slot_stride_bytes = 0;       ///< slot_bytes + alignment room

  // Workspace sizes (elements of bf16 unless stated), maxima over the plan's ops.
  int64_t max_x_elems = 0;      ///< linear inputs m·k
  int64_t max_y_elems = 0;      ///< linear outputs m·n
  int64_t max_gather_bytes = 0; ///< gathered weights + alignment room
  int64_t max_q_elems = 0;      ///< attention Q / O
  int64_t max_kv_elems = 0;     ///< attention K / V
  int64_t max_attention_rows = 0;  ///< max batch·heads
  std::array<int64_t, kTensorCount> max_a2a_bytes{};   ///< send buffers
  std::array<int64_t, kTensorCount> max_recv_bytes{};  ///< receive buffers
  int64_t max_gathered_bytes = 0;    ///< FSDP: one gathered block (N shards) + alignment room
  int64_t max_shard_send_bytes = 0;  ///< FSDP: a shard split over several places, gathered to send
  /// NCCL communicators besides the world one: each a list of ranks in communicator order
  /// (collective_groups of the kinds the plan uses); OpProgram::comm indexes it.
  std::vector<std::vector<int>> comm_groups;

  std::vector<OpProgram> ops;   ///< by op id
  std::vector<int> order;       ///< enqueue order: topological over all deps, ties by id
  int gathers_per_run = 0;      ///< linears executed with a gather
  int64_t gather_bytes_per_run = 0;
};

}  // namespace chunkflow::hw
