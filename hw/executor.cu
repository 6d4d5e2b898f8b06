// The CUDA executor of a hw::Program (see executor.hpp and hw/README.md "How a plan runs").
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "hw/cuda_util.cuh"
#include "hw/executor.hpp"
#include "hw/host_data.hpp"
#include "hw/kernels.cuh"

namespace chunkflow::hw {

namespace {

constexpr int64_t kCublasWorkspaceBytes = 32ll << 20;
constexpr float kResidualScale = 0.5f;  ///< h += 0.5·output for every compute op's output

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// NUMA node of a CUDA device from /sys/bus/pci/devices/<bus id>/numa_node; −1 when unknown.
int device_numa_node(int device) {
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) return -1;
  std::string id(bus);
  for (auto& c : id) c = char(std::tolower(static_cast<unsigned char>(c)));
  // cudaDeviceGetPCIBusId gives an 8-digit domain ("00000000:00:06.0"); sysfs uses 4 ("0000:00:06.0").
  if (id.size() > 12 && id.find(':') == 8) id = id.substr(4);
  std::ifstream f("/sys/bus/pci/devices/" + id + "/numa_node");
  int node = -1;
  if (!(f >> node)) return -1;
  return node;
}

/// CPUs of a NUMA node (/sys/devices/system/node/node<N>/cpulist, "0-15,32-47"); empty when unknown.
std::vector<int> numa_node_cpus(int node) {
  std::vector<int> cpus;
  std::ifstream f("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
  std::string list;
  if (node < 0 || !(f >> list)) return cpus;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    const auto dash = part.find('-');
    try {
      const int a = std::stoi(part.substr(0, dash));
      const int b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
      for (int c = a; c <= b; ++c) cpus.push_back(c);
    } catch (...) {
      return {};
    }
  }
  return cpus;
}

/// Runs `work` on a thread bound to the CPUs of NUMA node `node` (unbound when unknown), so that
/// the pages it pins and touches first (cudaHostAlloc, the weight fill, whose threads inherit the
/// binding) are allocated on that node (Linux first-touch policy; H9 of the code review).
void on_numa_node(int node, const std::function<void()>& work) {
  std::exception_ptr error;
  std::thread t([&] {
    try {
      const auto cpus = numa_node_cpus(node);
      if (!cpus.empty()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (int c : cpus)
          if (c < CPU_SETSIZE) CPU_SET(c, &set);
        (void)sched_setaffinity(0, sizeof set, &set);  // best effort: an unbound thread still works
      }
      work();
    } catch (...) {
      error = std::current_exception();
    }
  });
  t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

struct Executor::Impl {
  /// Everything one GPU (rank) owns.
  struct Rank {
    int device = 0;
    std::optional<Stream> compute, h2d, comm, comm_aux;
    std::optional<CublasHandle> cublas;
    DeviceBuffer cublas_workspace, resident, non_block, slots;
    DeviceBuffer hidden, hidden0, x, y[3], gather, attn_q, attn_k, attn_v, attn_o, tile;
    DeviceBuffer send[kTensorCount], recv[kTensorCount];
    DeviceBuffer gathered[2], shard_send;  ///< FSDP: gathered blocks; a split shard staged to send
    AttentionTile tile_ws;
    NcclComm nccl;                  ///< every rank: the run's barrier; and collectives whose group is all ranks
    std::vector<NcclComm> group_comms;  ///< per Program::comm_groups entry holding this rank (else empty)
    std::optional<Event> common_start, fork, join, finished;
    std::vector<Event> start, end;  ///< per local op: timing (recorded as external graph nodes)
    std::vector<Event> done;        ///< per local op: cross-lane dependency (no timing)
    DeviceBuffer pace_t0;           ///< one uint64 per local op: the start mark of a paced H2D
    DeviceBuffer barrier;           ///< one float: the NCCL all-reduce that aligns the ranks' clocks
    std::unique_ptr<GraphHandle> graph;
    int host_weights = 0;           ///< index into Impl::host_weights
    size_t free_before = 0;         ///< cudaMemGetInfo free bytes before setup
    std::vector<int> local;         ///< op id → index into start/end, −1 for other ranks' ops
    std::vector<int> ops;           ///< this rank's op ids in enqueue order
    PinnedBuffer latch_status;      ///< mapped int: 1 when the latch timed out
    int* latch_status_device = nullptr;
    const int* latch_flag_device = nullptr;
    MemoryReport memory;
    std::byte* stage_device[2] = {nullptr, nullptr};  ///< proxy staging as the kernel sees it
  };

  Program program;
  ExecutorOptions options;
  std::vector<PinnedBuffer> host_weights;  ///< one per NUMA node that holds a rank's GPU
  PinnedBuffer latch_flag;  ///< mapped int the host sets once every rank is enqueued
  PinnedBuffer stage[2];    ///< pcie-proxy host staging (mapped), alternating per all-to-all
  std::vector<Rank> ranks;
  bool has_collectives = false;
  bool poisoned = false;  ///< a run was aborted: the devices may still hold work; release nothing

  bool nccl() const { return has_collectives && !program.proxy; }
  void sample_memory(Rank& r) {
    use_device(r.device);
    size_t free_now = 0, total = 0;
    CF_CUDA(cudaMemGetInfo(&free_now, &total));
    r.memory.peak_memory_bytes = std::max(r.memory.peak_memory_bytes, int64_t(r.free_before) - int64_t(free_now));
  }

  DeviceBuffer alloc(Rank& r, int64_t bytes, int64_t MemoryReport::*bucket) {
    DeviceBuffer b(size_t(std::max<int64_t>(bytes, 0)));
    r.memory.*bucket += int64_t(b.bytes());
    r.memory.allocated_bytes += int64_t(b.bytes());
    return b;
  }

  void setup_rank(int index);
  /// Enqueues one whole run of rank `index` on its streams (captured into its graph when
  /// options.launch is graph, where `timing_record` records events as external graph nodes).
  void enqueue(int index);
  void capture(int index);
  void record_timing(Event& e, cudaStream_t s) const {
    CF_CUDA(options.launch == LaunchMode::graph ? cudaEventRecordWithFlags(e.get(), s, cudaEventRecordExternal)
                                                : cudaEventRecord(e.get(), s));
  }
  /// Waits for every rank's `finished` event by polling; on an error or past the deadline aborts
  /// every communicator, poisons the executor and throws RunAbortedError.
  void wait_all(std::chrono::steady_clock::time_point deadline);
  [[noreturn]] void abort_run(int rank, const std::string& why);
  void op_linear(Rank& r, const OpProgram& op, int& ring, const bf16*& last, int64_t& last_elems,
                 std::array<int64_t, 3>& ring_elems);
  void op_attention(Rank& r, const OpProgram& op, int ring, const bf16*& last, int64_t& last_elems,
                    const std::array<int64_t, 3>& ring_elems);
  void op_all_to_all(Rank& r, const OpProgram& op, int& parity);
  /// A ring K/V pass, TP all-reduce, FSDP all-gather or CFG gather (OpProgram::call).
  void op_collective(Rank& r, const OpProgram& op);
  /// The communicator of Program::comm_groups[comm] for rank r.
  ncclComm_t comm_of(const Rank& r, int comm) const {
    const ncclComm_t c = r.group_comms.at(size_t(comm)).get();
    return c ? c : r.nccl.get();
  }
  void packs(Rank& r, const OpProgram& op, const bf16* last, int64_t last_elems);
};

void Executor::Impl::setup_rank(int index) {
  Rank& r = ranks[size_t(index)];
  r.device = index;
  use_device(r.device);
  CF_CUDA(cudaFree(nullptr));  // create the context before measuring free memory
  size_t total = 0;
  CF_CUDA(cudaMemGetInfo(&r.free_before, &total));
  r.compute.emplace();
  r.h2d.emplace(Stream::HighestPriority{});  // paced copies' wait kernels must not starve behind GEMMs
  r.comm.emplace();
  r.comm_aux.emplace();
  r.cublas.emplace();
  r.common_start.emplace();
  r.fork.emplace(cudaEventDisableTiming);
  r.join.emplace(cudaEventDisableTiming);
  r.finished.emplace(cudaEventDisableTiming);
  const Program& p = program;
  const std::byte* weights = host_weights[size_t(r.host_weights)].get();

  // Weights: the resident prefix of every block, copied once; the slot pool; non-block weights.
  r.resident = alloc(r, p.resident_arena_bytes, &MemoryReport::resident_weight_bytes);
  for (size_t b = 0; b < p.block_bytes.size(); ++b)
    if (p.block_resident_bytes[b] > 0)
      CF_CUDA(cudaMemcpy(r.resident.get() + p.block_resident_offset[b], weights + p.block_host_offset[b],
                         size_t(p.block_resident_bytes[b]), cudaMemcpyHostToDevice));
  r.non_block = alloc(r, p.non_block_weight_bytes, &MemoryReport::resident_weight_bytes);
  if (r.non_block.bytes()) CF_CUDA(cudaMemset(r.non_block.get(), 0, r.non_block.bytes()));
  r.slots = alloc(r, int64_t(p.slot_count) * p.slot_stride_bytes, &MemoryReport::slot_bytes);

  // Activations.
  const int64_t hidden_elems = p.hidden_rows * p.hidden;
  r.hidden = alloc(r, hidden_elems * 2, &MemoryReport::activation_bytes);
  r.hidden0 = alloc(r, hidden_elems * 2, &MemoryReport::activation_bytes);
  const auto h0 = initial_hidden(options.seed, index, hidden_elems);
  CF_CUDA(cudaMemcpy(r.hidden0.get(), h0.data(), size_t(hidden_elems) * 2, cudaMemcpyHostToDevice));
  r.x = alloc(r, std::max<int64_t>(p.max_x_elems, p.max_q_elems) * 2, &MemoryReport::activation_bytes);
  for (auto& y : r.y) y = alloc(r, std::max<int64_t>(p.max_y_elems, 1) * 2, &MemoryReport::activation_bytes);
  r.attn_q = alloc(r, p.max_q_elems * 2, &MemoryReport::activation_bytes);
  r.attn_o = alloc(r, p.max_q_elems * 2, &MemoryReport::activation_bytes);
  r.attn_k = alloc(r, p.max_kv_elems * 2, &MemoryReport::activation_bytes);
  r.attn_v = alloc(r, p.max_kv_elems * 2, &MemoryReport::activation_bytes);
  for (int t = 0; t < kTensorCount; ++t) {
    r.send[t] = alloc(r, p.max_a2a_bytes[size_t(t)], &MemoryReport::activation_bytes);
    r.recv[t] = alloc(r, std::max(p.max_recv_bytes[size_t(t)], p.max_a2a_bytes[size_t(t)]), &MemoryReport::activation_bytes);
  }
  // FSDP: two gathered blocks (the plan gathers at most two at a time) count as weights.
  for (auto& g : r.gathered) g = alloc(r, p.max_gathered_bytes, &MemoryReport::resident_weight_bytes);
  r.shard_send = alloc(r, p.max_shard_send_bytes, &MemoryReport::workspace_bytes);

  // Workspace.
  r.gather = alloc(r, p.max_gather_bytes, &MemoryReport::workspace_bytes);
  r.cublas_workspace = alloc(r, kCublasWorkspaceBytes, &MemoryReport::workspace_bytes);
  CF_CUBLAS(cublasSetStream(r.cublas->get(), r.compute->get()));
  CF_CUBLAS(cublasSetWorkspace(r.cublas->get(), r.cublas_workspace.get(), r.cublas_workspace.bytes()));
  CF_CUBLAS(cublasSetMathMode(r.cublas->get(), CUBLAS_DEFAULT_MATH));
  int64_t head_dim = 1;
  for (const auto& op : p.ops)
    if (op.work == Work::attention) head_dim = std::max(head_dim, op.attention.head_dim);
  if (p.max_attention_rows > 0) {
    auto& t = r.tile_ws;
    t.rows = p.max_attention_rows;
    t.head_dim = head_dim;
    t.tile = AttentionTile::choose_tile(t.rows, head_dim, options.attention_tile_bytes);
    r.tile = alloc(r, AttentionTile::bytes(t.rows, t.tile, head_dim), &MemoryReport::workspace_bytes);
    std::byte* at = r.tile.get();
    auto take = [&](int64_t bytes) { std::byte* q = at; at += align_up(bytes, 256); return q; };
    t.scores = reinterpret_cast<float*>(take(t.rows * t.tile * t.tile * 4));
    t.probs = reinterpret_cast<bf16*>(take(t.rows * t.tile * t.tile * 2));
    t.out_acc = reinterpret_cast<float*>(take(t.rows * t.tile * head_dim * 4));
    t.row_max = reinterpret_cast<float*>(take(t.rows * t.tile * 4));
    t.row_sum = reinterpret_cast<float*>(take(t.rows * t.tile * 4));
  }

  // Events: a start and an end per op of this rank.
  r.local.assign(p.ops.size(), -1);
  for (int id : p.order)
    if (p.ops[size_t(id)].rank == index) {
      r.local[size_t(id)] = int(r.ops.size());
      r.ops.push_back(id);
    }
  r.start.reserve(r.ops.size());
  r.end.reserve(r.ops.size());
  r.done.reserve(r.ops.size());
  for (size_t i = 0; i < r.ops.size(); ++i) {
    r.start.emplace_back();
    r.end.emplace_back();
    r.done.emplace_back(cudaEventDisableTiming);
  }
  r.pace_t0 = alloc(r, int64_t(std::max<size_t>(r.ops.size(), 1) * sizeof(uint64_t)), &MemoryReport::workspace_bytes);
  r.barrier = alloc(r, int64_t(sizeof(float)), &MemoryReport::workspace_bytes);
  CF_CUDA(cudaMemset(r.barrier.get(), 0, r.barrier.bytes()));
  r.latch_status = PinnedBuffer(sizeof(int), cudaHostAllocMapped);
  r.latch_status_device = reinterpret_cast<int*>(r.latch_status.device_pointer());
  r.latch_flag_device = reinterpret_cast<const int*>(latch_flag.device_pointer());
  for (int s = 0; s < 2; ++s) r.stage_device[s] = stage[s].bytes() ? stage[s].device_pointer() : nullptr;

  CF_CUDA(cudaDeviceSynchronize());
}

Executor::Executor(const Program& program, const ExecutorOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.program = program;
  m.options = options;
  const Program& p = m.program;
  require_devices(p.ranks);
  for (const auto& op : p.ops) {
    m.has_collectives |= op.work == Work::all_to_all || op.work == Work::collective;
    if (op.work == Work::collective && p.proxy)
      throw std::invalid_argument("op " + op.name + ": only Ulysses all-to-alls run on the pcie-proxy backend");
    if (!p.proxy && (op.work == Work::all_to_all || op.work == Work::collective) &&
        (op.comm < 0 || size_t(op.comm) >= p.comm_groups.size()))
      throw std::invalid_argument("op " + op.name + ": collective without a communicator group");
  }
  for (const auto& g : p.comm_groups)
    for (int rank : g)
      if (rank < 0 || rank >= p.ranks)
        throw std::invalid_argument("a collective group names rank " + std::to_string(rank) + ", outside the program's " +
                                    std::to_string(p.ranks) + " ranks");
  use_device(0);
  // Pinned weights on each GPU's NUMA node: one copy per node that holds a rank's GPU.
  m.ranks.resize(size_t(p.ranks));
  std::map<int, int> copy_of_node;
  for (int r = 0; r < p.ranks; ++r) {
    const int node = device_numa_node(r);
    auto [it, fresh] = copy_of_node.try_emplace(node, int(m.host_weights.size()));
    if (fresh) {
      m.host_weights.emplace_back();
      PinnedBuffer& buffer = m.host_weights.back();
      on_numa_node(node, [&] {
        use_device(r);
        buffer = PinnedBuffer(size_t(p.host_weight_bytes), cudaHostAllocDefault);
        fill_weights(p, options.seed, buffer.get(), options.host_threads);
      });
    }
    m.ranks[size_t(r)].host_weights = it->second;
    m.ranks[size_t(r)].memory.host_numa_node = node;
  }
  use_device(0);
  m.latch_flag = PinnedBuffer(sizeof(int), cudaHostAllocMapped);
  int64_t stage_bytes = 0;
  for (int64_t b : p.max_a2a_bytes) stage_bytes = std::max(stage_bytes, b);
  if (p.proxy && stage_bytes > 0)
    for (auto& s : m.stage) s = PinnedBuffer(size_t(stage_bytes), cudaHostAllocMapped);
  for (int r = 0; r < p.ranks; ++r) m.setup_rank(r);
  for (auto& r : m.ranks)
    r.memory.host_pinned_bytes = int64_t(m.host_weights[size_t(r.host_weights)].bytes() + 2 * m.stage[0].bytes());
  if (m.nccl()) {
    std::vector<ncclComm_t> comms(static_cast<size_t>(p.ranks));
    std::vector<int> devs(static_cast<size_t>(p.ranks));
    for (int r = 0; r < p.ranks; ++r) devs[size_t(r)] = r;
    CF_NCCL(ncclCommInitAll(comms.data(), p.ranks, devs.data()));
    for (int r = 0; r < p.ranks; ++r) m.ranks[size_t(r)].nccl = NcclComm(comms[size_t(r)]);
    // One communicator per collective group (Ulysses, ring, TP, CFG groups; hw/collective_calls.hpp),
    // its ranks in the group's order; a group of every rank in rank order uses the world one.
    for (auto& r : m.ranks) r.group_comms.resize(p.comm_groups.size());
    for (size_t g = 0; g < p.comm_groups.size(); ++g) {
      const std::vector<int>& group = p.comm_groups[g];
      bool world = int(group.size()) == p.ranks;
      for (size_t i = 0; world && i < group.size(); ++i) world = group[i] == int(i);
      if (world) continue;
      std::vector<ncclComm_t> sub(group.size());
      CF_NCCL(ncclCommInitAll(sub.data(), int(group.size()), group.data()));
      for (size_t i = 0; i < group.size(); ++i) m.ranks[size_t(group[i])].group_comms[g] = NcclComm(sub[i]);
    }
  }
  // Device memory in use after setup, NCCL's communicators included (H8 of the code review).
  for (auto& r : m.ranks) {
    use_device(r.device);
    CF_CUDA(cudaDeviceSynchronize());
    size_t free_now = 0, total = 0;
    CF_CUDA(cudaMemGetInfo(&free_now, &total));
    r.memory.device_used_bytes = int64_t(r.free_before) - int64_t(free_now);
    r.memory.peak_memory_bytes = r.memory.device_used_bytes;
  }
}

Executor::~Executor() {
  if (!impl_) return;
  if (impl_->poisoned) {
    // An aborted run may have left work on the devices (a kernel that never returns); releasing
    // streams, events or memory could block on it. The process is about to report and exit.
    (void)impl_.release();
    return;
  }
  // Release each rank's handles with its own device current (streams, events and NCCL
  // communicators belong to a device); errors while releasing are ignored.
  while (!impl_->ranks.empty()) {
    if (cudaSetDevice(impl_->ranks.back().device) == cudaSuccess) (void)cudaDeviceSynchronize();
    impl_->ranks.pop_back();
  }
}

void Executor::Impl::packs(Rank& r, const OpProgram& op, const bf16* last, int64_t last_elems) {
  for (const auto& pk : op.packs)
    launch_fold(last, last_elems, r.send[size_t(pk.tensor)].as<bf16>(), pk.bytes / 2, Activation::identity,
                r.compute->get());
}

void Executor::Impl::op_linear(Rank& r, const OpProgram& op, int& ring, const bf16*& last, int64_t& last_elems,
                               std::array<int64_t, 3>& ring_elems) {
  const LinearProgram& l = op.linear;
  const cudaStream_t s = r.compute->get();
  auto where = [&](const WeightPiece& piece) { return (piece.resident ? r.resident : r.slots).get() + piece.device_offset; };
  const std::byte* w = nullptr;
  if (l.gathered >= 0) {
    // FSDP: the block's all-gather put the whole block in gathered buffer l.gathered, in layout order.
    w = r.gathered[l.gathered].get() + l.layout_begin;
  } else if (l.gather()) {
    // Weights split over the resident arena and slots (or several slots): gather them, keeping
    // the layout's alignment mod 256, so that the GEMM is the no-offload run's GEMM.
    std::byte* g = r.gather.get() + l.layout_begin % kAlignBytes;
    // On the SMs: a cudaMemcpyAsync D2D would wait behind the H2D copies on the copy engine.
    for (const auto& piece : l.pieces)
      launch_device_copy(g + (piece.layout_begin - l.layout_begin), where(piece), piece.layout_end - piece.layout_begin, s);
    w = g;
  } else {
    w = where(l.pieces.at(0)) + (l.layout_begin - l.pieces[0].layout_begin);
  }
  bf16* x = r.x.as<bf16>();
  switch (l.input) {
    case LinearInput::norm_hidden: launch_rmsnorm(r.hidden.as<bf16>(), x, l.m, l.k, s); break;
    case LinearInput::recv_o:
      launch_fold(r.recv[size_t(Tensor::o)].as<bf16>(), std::max<int64_t>(l.recv_o_bytes / 2, 1), x, l.m * l.k,
                  Activation::identity, s);
      break;
    case LinearInput::gelu_last: launch_fold(last, last_elems, x, l.m * l.k, Activation::gelu_tanh, s); break;
  }
  bf16* y = r.y[ring].as<bf16>();
  const bf16* wt = reinterpret_cast<const bf16*>(w);
  gemm_bf16(r.cublas->get(), x, wt, y, l.m, l.k, l.n);
  if (l.bias) launch_add_bias(y, wt + l.k * l.n, l.m, l.n, s);
  launch_mix(r.hidden.as<bf16>(), program.hidden_rows * program.hidden, y, l.m * l.n, kResidualScale, s);
  last = y;
  last_elems = l.m * l.n;
  ring_elems[size_t(ring)] = last_elems;
  ring = (ring + 1) % 3;
}

void Executor::Impl::op_attention(Rank& r, const OpProgram& op, int ring, const bf16*& last, int64_t& last_elems,
                                  const std::array<int64_t, 3>& ring_elems) {
  const AttentionProgram& a = op.attention;
  const cudaStream_t s = r.compute->get();
  bf16* dst[3] = {r.attn_q.as<bf16>(), r.attn_k.as<bf16>(), r.attn_v.as<bf16>()};
  const int64_t n_dst[3] = {a.q_elems(), a.kv_elems(), a.kv_elems()};
  for (int t = 0; t < 3; ++t) {
    if (a.from_recv[size_t(t)]) {
      launch_fold(r.recv[t].as<bf16>(), std::max<int64_t>(a.recv_bytes[size_t(t)] / 2, 1), dst[t], n_dst[t],
                  Activation::identity, s);
    } else {  // the last three linear outputs: Q ← third-to-last, K ← second-to-last, V ← last
      const int slot = (ring + t) % 3;
      launch_fold(r.y[slot].as<bf16>(), ring_elems[size_t(slot)], dst[t], n_dst[t], Activation::identity, s);
    }
  }
  bf16* o = r.attn_o.as<bf16>();
  attention_forward(r.cublas->get(), s, dst[0], dst[1], dst[2], o, a.batch * a.heads, a.q_tokens, a.kv_tokens,
                    a.head_dim, r.tile_ws);
  launch_mix(r.hidden.as<bf16>(), program.hidden_rows * program.hidden, o, a.q_elems(), kResidualScale, s);
  last = o;
  last_elems = a.q_elems();
}

void Executor::Impl::op_all_to_all(Rank& r, const OpProgram& op, int& parity) {
  const cudaStream_t s = r.comm->get();
  const int P = std::max(1, program.ulysses_degree);
  const int64_t bytes = op.a2a_bytes;
  const int64_t per_peer = bytes / P;
  std::byte* send = r.send[size_t(op.tensor)].get();
  std::byte* recv = r.recv[size_t(op.tensor)].get();
  if (!program.proxy) {
    // Grouped send/recv of S/U to and from every member of the rank's Ulysses group (itself
    // included), on that group's communicator (peers are communicator ranks).
    const ncclComm_t comm = comm_of(r, op.comm);
    const int64_t peer_bytes = op.call.peer_bytes;
    CF_NCCL(ncclGroupStart());
    for (int peer = 0; peer < int(op.call.group.size()); ++peer) {
      CF_NCCL(ncclSend(send + peer * peer_bytes, size_t(peer_bytes), ncclInt8, peer, comm, s));
      CF_NCCL(ncclRecv(recv + peer * peer_bytes, size_t(peer_bytes), ncclInt8, peer, comm, s));
    }
    CF_NCCL(ncclGroupEnd());
    return;
  }
  // pcie-proxy: rank 0 of a P-way group. (P−1)/P of the buffer leaves through host memory and the
  // same amount comes back; what comes back is what the previous all-to-all sent (the other half
  // of the double-buffered staging), which keeps the content deterministic.
  const int64_t out = per_peer * (P - 1);
  const int64_t local = bytes - out;
  const int w = parity, rd = 1 - parity;
  parity = rd;
  if (options.proxy_mode == ProxyMode::kernel) {
    launch_proxy_all_to_all(send, recv, r.stage_device[w], r.stage_device[rd], out, local, s);
    return;
  }
  r.fork->record(s);
  CF_CUDA(cudaStreamWaitEvent(r.comm_aux->get(), r.fork->get(), 0));
  CF_CUDA(cudaMemcpyAsync(stage[w].get(), send, size_t(out), cudaMemcpyDeviceToHost, s));
  CF_CUDA(cudaMemcpyAsync(recv, stage[rd].get(), size_t(out), cudaMemcpyHostToDevice, r.comm_aux->get()));
  if (local > 0) CF_CUDA(cudaMemcpyAsync(recv + out, send + out, size_t(local), cudaMemcpyDeviceToDevice, s));
  r.join->record(r.comm_aux->get());
  CF_CUDA(cudaStreamWaitEvent(s, r.join->get(), 0));
}

void Executor::Impl::op_collective(Rank& r, const OpProgram& op) {
  const cudaStream_t s = r.comm->get();
  const NcclCall& c = op.call;
  const ncclComm_t comm = comm_of(r, op.comm);
  const int n = int(c.group.size());  // a group of one: NCCL copies locally (FSDP over one rank)
  switch (c.kind) {
    case CollectiveKind::ring_kv: {
      // R−1 steps: send the K/V block held to the next rank of the ring, receive the previous
      // rank's into the other half of the double buffer (xDiT's ring pass).
      std::byte* held = r.send[size_t(op.tensor)].get();
      std::byte* next_block = r.recv[size_t(op.tensor)].get();
      const int next = (c.group_rank + 1) % n, prev = (c.group_rank + n - 1) % n;
      for (int step = 0; step < c.steps; ++step) {
        CF_NCCL(ncclGroupStart());
        CF_NCCL(ncclSend(held, size_t(c.peer_bytes), ncclInt8, next, comm, s));
        CF_NCCL(ncclRecv(next_block, size_t(c.peer_bytes), ncclInt8, prev, comm, s));
        CF_NCCL(ncclGroupEnd());
        std::swap(held, next_block);
      }
      return;
    }
    case CollectiveKind::all_reduce:
      CF_NCCL(ncclAllReduce(r.send[size_t(op.tensor)].get(), r.recv[size_t(op.tensor)].get(), size_t(c.buffer_bytes / 2),
                            ncclBfloat16, ncclSum, comm, s));
      return;
    case CollectiveKind::cfg_gather:
      CF_NCCL(ncclAllGather(r.send[size_t(op.tensor)].get(), r.recv[size_t(op.tensor)].get(), size_t(c.buffer_bytes),
                            ncclInt8, comm, s));
      return;
    case CollectiveKind::all_gather: {
      // FSDP: the rank's shard of the block, from where it lives (staged into one buffer when the
      // resident prefix and chunk slots split it), gathered into the block's buffer.
      const std::byte* shard = nullptr;
      auto where = [&](const WeightPiece& piece) { return (piece.resident ? r.resident : r.slots).get() + piece.device_offset; };
      if (op.shard_pieces.size() == 1) {
        shard = where(op.shard_pieces[0]);
      } else if (!op.shard_pieces.empty()) {
        for (const auto& piece : op.shard_pieces)  // on the SMs, as the linears' gathers
          launch_device_copy(r.shard_send.get() + piece.layout_begin, where(piece), piece.layout_end - piece.layout_begin, s);
        shard = r.shard_send.get();
      }
      if (c.buffer_bytes > 0)
        CF_NCCL(ncclAllGather(shard, r.gathered[op.gathered].get(), size_t(c.buffer_bytes), ncclInt8, comm, s));
      return;
    }
    case CollectiveKind::all_to_all: break;  // op_all_to_all
  }
  throw std::logic_error("op " + op.name + ": op_collective on an all-to-all");
}

void Executor::Impl::enqueue(int index) {
  Rank& r = ranks[size_t(index)];
  use_device(r.device);
  const Program& p = program;
  const cudaStream_t cs = r.compute->get();
  // Reset everything a run reads before writing (untimed, before the start event).
  CF_CUDA(cudaMemcpyAsync(r.hidden.get(), r.hidden0.get(), r.hidden.bytes(), cudaMemcpyDeviceToDevice, cs));
  for (DeviceBuffer* b : {&r.y[0], &r.y[1], &r.y[2], &r.x, &r.attn_o})
    if (b->bytes()) CF_CUDA(cudaMemsetAsync(b->get(), 0, b->bytes(), cs));
  for (int t = 0; t < kTensorCount; ++t) {
    if (r.send[t].bytes()) CF_CUDA(cudaMemsetAsync(r.send[t].get(), 0, r.send[t].bytes(), cs));
    if (r.recv[t].bytes()) CF_CUDA(cudaMemsetAsync(r.recv[t].get(), 0, r.recv[t].bytes(), cs));
  }
  if (options.launch == LaunchMode::direct) {
    *static_cast<volatile int*>(static_cast<void*>(r.latch_status.get())) = 0;
    launch_spin_latch(r.latch_flag_device, uint64_t(options.latch_timeout_s * 1e9), r.latch_status_device, cs);
  }
  // Every stream of the rank starts behind the start event. With NCCL, the start follows an
  // all-reduce of one float on the comm stream: every rank leaves it at about the same instant,
  // which puts the ranks' clocks on one zero (the barrier's skew is NCCL's latency, a few µs).
  r.fork->record(cs);
  for (const Stream* st : {&*r.h2d, &*r.comm, &*r.comm_aux}) CF_CUDA(cudaStreamWaitEvent(st->get(), r.fork->get(), 0));
  cudaStream_t start_stream = cs;
  if (nccl()) {
    start_stream = r.comm->get();
    CF_NCCL(ncclAllReduce(r.barrier.get(), r.barrier.get(), 1, ncclFloat, ncclSum, r.nccl.get(), start_stream));
  }
  record_timing(*r.common_start, start_stream);
  if (start_stream != cs) {
    r.fork->record(start_stream);
    for (const Stream* st : {&*r.compute, &*r.h2d, &*r.comm_aux}) CF_CUDA(cudaStreamWaitEvent(st->get(), r.fork->get(), 0));
  }

  int ring = 0, parity = 0;
  std::array<int64_t, 3> ring_elems{1, 1, 1};
  const bf16* last = r.y[0].as<bf16>();
  int64_t last_elems = 1;
  for (int id : r.ops) {
    const OpProgram& op = p.ops[size_t(id)];
    const cudaStream_t s = op.lane == Lane::compute ? cs : op.lane == Lane::h2d ? r.h2d->get() : r.comm->get();
    for (int dep : op.waits) CF_CUDA(cudaStreamWaitEvent(s, r.done[size_t(r.local[size_t(dep)])].get(), 0));
    const int li = r.local[size_t(id)];
    record_timing(r.start[size_t(li)], s);
    switch (op.work) {
      case Work::none: break;
      case Work::linear: op_linear(r, op, ring, last, last_elems, ring_elems); break;
      case Work::attention: op_attention(r, op, ring, last, last_elems, ring_elems); break;
      case Work::h2d:
        enqueue_paced_copy(r.slots.get() + op.device_offset, host_weights[size_t(r.host_weights)].get() + op.host_offset,
                           op.h2d_bytes, cudaMemcpyHostToDevice, op.rate_cap_bytes_per_s,
                           options.pace_sub_chunk_bytes, r.pace_t0.as<uint64_t>() + li, s);
        break;
      case Work::all_to_all: op_all_to_all(r, op, parity); break;
      case Work::collective: op_collective(r, op); break;
    }
    if (op.lane == Lane::compute) packs(r, op, last, last_elems);
    record_timing(r.end[size_t(li)], s);
    r.done[size_t(li)].record(s);
  }
  // Join every stream back into the compute stream (a graph capture must end on its origin).
  for (const Stream* st : {&*r.h2d, &*r.comm, &*r.comm_aux}) {
    r.join->record(st->get());
    CF_CUDA(cudaStreamWaitEvent(cs, r.join->get(), 0));
  }
}

void Executor::Impl::capture(int index) {
  Rank& r = ranks[size_t(index)];
  use_device(r.device);
  // Synchronized before any run: nothing else is queued.
  r.graph = capture_graph(r.compute->get(), [&] { enqueue(index); });
}

void Executor::Impl::abort_run(int rank, const std::string& why) {
  poisoned = true;
  for (auto& r : ranks) {
    for (NcclComm& c : r.group_comms)
      if (c.get()) {
        (void)ncclCommAbort(c.get());
        (void)c.release_without_destroy();
      }
    if (r.nccl.get()) {
      (void)ncclCommAbort(r.nccl.get());
      (void)r.nccl.release_without_destroy();
    }
  }
  // The first op of `rank` (in enqueue order) whose end had not been reached names where it stopped.
  std::string where = "no op had started";
  const Rank& rr = ranks.at(size_t(rank));
  for (size_t i = 0; i < rr.ops.size(); ++i) {
    const cudaError_t q = cudaEventQuery(rr.end[i].get());
    if (q == cudaSuccess) continue;
    const OpProgram& op = program.ops[size_t(rr.ops[i])];
    where = "op " + std::to_string(op.id) + " (" + op.name + ") had not finished";
    break;
  }
  throw RunAbortedError("rank " + std::to_string(rank) + " (device " + std::to_string(rr.device) + "): " + where +
                        ": " + why + "; every NCCL communicator was aborted");
}

void Executor::Impl::wait_all(std::chrono::steady_clock::time_point deadline) {
  std::vector<bool> finished(ranks.size(), false);
  size_t remaining = ranks.size();
  while (remaining > 0) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (finished[i]) continue;
      Rank& r = ranks[i];
      (void)cudaSetDevice(r.device);
      const cudaError_t q = cudaEventQuery(r.finished->get());
      if (q == cudaSuccess) {
        finished[i] = true;
        --remaining;
        continue;
      }
      if (q != cudaErrorNotReady)
        abort_run(int(i), std::string("CUDA error ") + cudaGetErrorName(q) + " (" + cudaGetErrorString(q) + ")");
      std::vector<ncclComm_t> comms{r.nccl.get()};
      for (const NcclComm& c : r.group_comms) comms.push_back(c.get());
      for (ncclComm_t c : comms) {
        if (!c) continue;
        ncclResult_t async = ncclSuccess;
        const ncclResult_t got = ncclCommGetAsyncError(c, &async);
        if (got != ncclSuccess) async = got;
        if (async != ncclSuccess && async != ncclInProgress)
          abort_run(int(i), std::string("NCCL error ") + ncclGetErrorString(async) + " (" + ncclGetLastError(c) + ")");
      }
    }
    if (remaining == 0) break;
    if (std::chrono::steady_clock::now() > deadline)
      for (size_t i = 0; i < ranks.size(); ++i)
        if (!finished[i])
          abort_run(int(i), "the run's deadline of " + std::to_string(options.run_deadline_s) +
                                " s passed (a peer that never arrived, or a hung kernel)");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

RunTiming Executor::run() {
  Impl& m = *impl_;
  if (m.poisoned) throw RunAbortedError("a previous run was aborted; this executor cannot run again");
  // The proxy staging is read before it is written by the first all-to-all of a run: start every
  // run from zeros so that runs are deterministic (the devices are idle here).
  for (auto& s : m.stage)
    if (s.bytes()) std::memset(s.get(), 0, s.bytes());
  std::vector<std::exception_ptr> errors(m.ranks.size());
  auto for_each_rank = [&](const std::function<void(int)>& f) {
    auto work = [&](int r) {
      try {
        f(r);
      } catch (...) {
        errors[size_t(r)] = std::current_exception();
      }
    };
    if (m.ranks.size() == 1) {
      work(0);
    } else {
      std::vector<std::thread> threads;
      for (int r = 0; r < int(m.ranks.size()); ++r) threads.emplace_back(work, r);
      for (auto& t : threads) t.join();
    }
  };
  auto launched_at = std::chrono::steady_clock::now();
  if (m.options.launch == LaunchMode::graph) {
    // Capture once (one host thread per rank: NCCL's grouped calls of each rank on its thread);
    // nothing has been launched yet if a capture fails, so nothing can hang.
    if (!m.ranks.front().graph) {
      for_each_rank([&](int r) { m.capture(r); });
      for (auto& e : errors)
        if (e) std::rethrow_exception(e);
    }
    launched_at = std::chrono::steady_clock::now();  // the deadline counts from the launch, not the capture
    for (auto& r : m.ranks) {
      use_device(r.device);
      try {
        CF_CUDA(cudaGraphLaunch(r.graph->exec, r.compute->get()));
        r.finished->record(r.compute->get());
      } catch (const std::exception& e) {
        m.abort_run(r.device, std::string("graph launch failed: ") + e.what());
      }
    }
  } else {
    *static_cast<volatile int*>(static_cast<void*>(m.latch_flag.get())) = 0;
    for_each_rank([&](int r) {
      m.enqueue(r);
      m.ranks[size_t(r)].finished->record(m.ranks[size_t(r)].compute->get());
    });
    // Release every latch (also after an enqueue error, so that the devices drain).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *static_cast<volatile int*>(static_cast<void*>(m.latch_flag.get())) = 1;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (size_t r = 0; r < errors.size(); ++r)
      if (errors[r]) {
        std::string what = "enqueue failed";
        try {
          std::rethrow_exception(errors[r]);
        } catch (const std::exception& e) {
          what += std::string(": ") + e.what();
        } catch (...) {
        }
        m.abort_run(int(r), what);
      }
  }
  m.wait_all(launched_at + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(m.options.run_deadline_s)));
  RunTiming timing;
  timing.ops.resize(m.program.ops.size());
  for (auto& r : m.ranks) {
    use_device(r.device);
    if (m.options.launch == LaunchMode::direct)
      timing.latch_timed_out |= *static_cast<volatile int*>(static_cast<void*>(r.latch_status.get())) != 0;
    for (size_t i = 0; i < r.ops.size(); ++i) {
      auto& t = timing.ops[size_t(r.ops[i])];
      t.start_s = r.start[i].seconds_since(*r.common_start);
      t.end_s = r.end[i].seconds_since(*r.common_start);
    }
    m.sample_memory(r);
  }
  // A collective starts at its barrier: the last arrival among the ranks of its group (H6).
  std::map<int, double> barrier;
  for (const auto& op : m.program.ops)
    if ((op.work == Work::all_to_all || op.work == Work::collective) && op.collective_group >= 0) {
      auto [it, fresh] = barrier.try_emplace(op.collective_group, timing.ops[size_t(op.id)].start_s);
      if (!fresh) it->second = std::max(it->second, timing.ops[size_t(op.id)].start_s);
    }
  for (const auto& op : m.program.ops)
    if ((op.work == Work::all_to_all || op.work == Work::collective) && op.collective_group >= 0) {
      auto& t = timing.ops[size_t(op.id)];
      const double b = std::min(barrier.at(op.collective_group), t.end_s);
      t.wait_s = b - t.start_s;
      t.start_s = b;
    }
  return timing;
}

std::vector<std::vector<uint8_t>> Executor::final_activation() const {
  std::vector<std::vector<uint8_t>> out;
  for (const auto& r : impl_->ranks) {
    use_device(r.device);
    std::vector<uint8_t> bytes(r.hidden.bytes());
    CF_CUDA(cudaMemcpy(bytes.data(), r.hidden.get(), bytes.size(), cudaMemcpyDeviceToHost));
    out.push_back(std::move(bytes));
  }
  return out;
}

MemoryReport Executor::memory(int rank) const { return impl_->ranks.at(size_t(rank)).memory; }

std::string Executor::collective_backend() const {
  if (!impl_->has_collectives) return "none";
  if (!impl_->program.proxy) return "nccl";
  return impl_->options.proxy_mode == ProxyMode::kernel ? "pcie-proxy-kernel" : "pcie-proxy-copy-engine";
}

}  // namespace chunkflow::hw
