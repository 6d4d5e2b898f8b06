// The CUDA executor of a hw::Program (see executor.hpp and hw/README.md "How a plan runs").
#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <optional>
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
    AttentionTile tile_ws;
    NcclComm nccl;
    std::optional<Event> common_start, fork, join;
    std::vector<Event> start, end;  ///< per local op
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
  PinnedBuffer host_weights;
  PinnedBuffer latch_flag;  ///< mapped int the host sets once every rank is enqueued
  PinnedBuffer stage[2];    ///< pcie-proxy host staging (mapped), alternating per all-to-all
  std::vector<Rank> ranks;
  bool has_collectives = false;

  DeviceBuffer alloc(Rank& r, int64_t bytes, int64_t MemoryReport::*bucket) {
    DeviceBuffer b(size_t(std::max<int64_t>(bytes, 0)));
    r.memory.*bucket += int64_t(b.bytes());
    r.memory.allocated_bytes += int64_t(b.bytes());
    return b;
  }

  void setup_rank(int index);
  void enqueue(int index);
  void op_linear(Rank& r, const OpProgram& op, int& ring, const bf16*& last, int64_t& last_elems,
                 std::array<int64_t, 3>& ring_elems);
  void op_attention(Rank& r, const OpProgram& op, int ring, const bf16*& last, int64_t& last_elems,
                    const std::array<int64_t, 3>& ring_elems);
  void op_all_to_all(Rank& r, const OpProgram& op, int& parity);
  void packs(Rank& r, const OpProgram& op, const bf16* last, int64_t last_elems);
};

void Executor::Impl::setup_rank(int index) {
  Rank& r = ranks[size_t(index)];
  r.device = index;
  use_device(r.device);
  CF_CUDA(cudaFree(nullptr));  // create the context before measuring free memory
  size_t free_before = 0, total = 0;
  CF_CUDA(cudaMemGetInfo(&free_before, &total));
  r.compute.emplace();
  r.h2d.emplace();
  r.comm.emplace();
  r.comm_aux.emplace();
  r.cublas.emplace();
  r.common_start.emplace();
  r.fork.emplace(cudaEventDisableTiming);
  r.join.emplace(cudaEventDisableTiming);
  const Program& p = program;

  // Weights: the resident prefix of every block, copied once; the slot pool; non-block weights.
  r.resident = alloc(r, p.resident_arena_bytes, &MemoryReport::resident_weight_bytes);
  for (size_t b = 0; b < p.block_bytes.size(); ++b)
    if (p.block_resident_bytes[b] > 0)
      CF_CUDA(cudaMemcpy(r.resident.get() + p.block_resident_offset[b], host_weights.get() + p.block_host_offset[b],
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
    r.recv[t] = alloc(r, p.max_a2a_bytes[size_t(t)], &MemoryReport::activation_bytes);
  }

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
  for (size_t i = 0; i < r.ops.size(); ++i) {
    r.start.emplace_back();
    r.end.emplace_back();
  }
  r.latch_status = PinnedBuffer(sizeof(int), cudaHostAllocMapped);
  r.latch_status_device = reinterpret_cast<int*>(r.latch_status.device_pointer());
  r.latch_flag_device = reinterpret_cast<const int*>(latch_flag.device_pointer());
  for (int s = 0; s < 2; ++s) r.stage_device[s] = stage[s].bytes() ? stage[s].device_pointer() : nullptr;

  CF_CUDA(cudaDeviceSynchronize());
  size_t free_after = 0;
  CF_CUDA(cudaMemGetInfo(&free_after, &total));
  r.memory.device_used_bytes = int64_t(free_before) - int64_t(free_after);
}

Executor::Executor(const Program& program, const ExecutorOptions& options) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.program = program;
  m.options = options;
  const Program& p = m.program;
  require_devices(p.ranks);
  for (const auto& op : p.ops) m.has_collectives |= op.work == Work::all_to_all;
  if (m.has_collectives && !p.proxy && p.ranks != p.ulysses_degree)
    throw std::invalid_argument("NCCL all-to-alls need one rank per Ulysses peer: ranks " + std::to_string(p.ranks) +
                                " ≠ P " + std::to_string(p.ulysses_degree));
  use_device(0);
  m.host_weights = PinnedBuffer(size_t(p.host_weight_bytes), cudaHostAllocDefault);
  fill_weights(p, options.seed, m.host_weights.get(), options.host_threads);
  m.latch_flag = PinnedBuffer(sizeof(int), cudaHostAllocMapped);
  int64_t stage_bytes = 0;
  for (int64_t b : p.max_a2a_bytes) stage_bytes = std::max(stage_bytes, b);
  if (p.proxy && stage_bytes > 0)
    for (auto& s : m.stage) s = PinnedBuffer(size_t(stage_bytes), cudaHostAllocMapped);
  m.ranks.resize(size_t(p.ranks));
  for (int r = 0; r < p.ranks; ++r) m.setup_rank(r);
  for (auto& r : m.ranks) r.memory.host_pinned_bytes = int64_t(m.host_weights.bytes() + 2 * m.stage[0].bytes());
  if (m.has_collectives && !p.proxy) {
    std::vector<ncclComm_t> comms(static_cast<size_t>(p.ranks));
    std::vector<int> devs(static_cast<size_t>(p.ranks));
    for (int r = 0; r < p.ranks; ++r) devs[size_t(r)] = r;
    CF_NCCL(ncclCommInitAll(comms.data(), p.ranks, devs.data()));
    for (int r = 0; r < p.ranks; ++r) m.ranks[size_t(r)].nccl = NcclComm(comms[size_t(r)]);
  }
}

Executor::~Executor() {
  if (!impl_) return;
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
  if (l.gather()) {
    // Weights split over the resident arena and slots (or several slots): gather them, keeping
    // the layout's alignment mod 256, so that the GEMM is the no-offload run's GEMM.
    std::byte* g = r.gather.get() + l.layout_begin % kAlignBytes;
    for (const auto& piece : l.pieces)
      CF_CUDA(cudaMemcpyAsync(g + (piece.layout_begin - l.layout_begin), where(piece),
                              size_t(piece.layout_end - piece.layout_begin), cudaMemcpyDeviceToDevice, s));
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
    CF_NCCL(ncclGroupStart());
    for (int peer = 0; peer < P; ++peer) {
      CF_NCCL(ncclSend(send + peer * per_peer, size_t(per_peer), ncclInt8, peer, r.nccl.get(), s));
      CF_NCCL(ncclRecv(recv + peer * per_peer, size_t(per_peer), ncclInt8, peer, r.nccl.get(), s));
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

void Executor::Impl::enqueue(int index) {
  Rank& r = ranks[size_t(index)];
  use_device(r.device);
  const Program& p = program;
  const cudaStream_t cs = r.compute->get();
  // Reset everything a run reads before writing (untimed, before the latch).
  CF_CUDA(cudaMemcpyAsync(r.hidden.get(), r.hidden0.get(), r.hidden.bytes(), cudaMemcpyDeviceToDevice, cs));
  for (DeviceBuffer* b : {&r.y[0], &r.y[1], &r.y[2], &r.x, &r.attn_o})
    if (b->bytes()) CF_CUDA(cudaMemsetAsync(b->get(), 0, b->bytes(), cs));
  for (int t = 0; t < kTensorCount; ++t) {
    if (r.send[t].bytes()) CF_CUDA(cudaMemsetAsync(r.send[t].get(), 0, r.send[t].bytes(), cs));
    if (r.recv[t].bytes()) CF_CUDA(cudaMemsetAsync(r.recv[t].get(), 0, r.recv[t].bytes(), cs));
  }
  *static_cast<volatile int*>(static_cast<void*>(r.latch_status.get())) = 0;
  launch_spin_latch(r.latch_flag_device, uint64_t(options.latch_timeout_s * 1e9), r.latch_status_device, cs);
  r.common_start->record(cs);
  for (const Stream* st : {&*r.h2d, &*r.comm, &*r.comm_aux})
    CF_CUDA(cudaStreamWaitEvent(st->get(), r.common_start->get(), 0));

  int ring = 0, parity = 0;
  std::array<int64_t, 3> ring_elems{1, 1, 1};
  const bf16* last = r.y[0].as<bf16>();
  int64_t last_elems = 1;
  for (int id : r.ops) {
    const OpProgram& op = p.ops[size_t(id)];
    const cudaStream_t s = op.lane == Lane::compute ? cs : op.lane == Lane::h2d ? r.h2d->get() : r.comm->get();
    for (int dep : op.waits) CF_CUDA(cudaStreamWaitEvent(s, r.end[size_t(r.local[size_t(dep)])].get(), 0));
    const int li = r.local[size_t(id)];
    r.start[size_t(li)].record(s);
    switch (op.work) {
      case Work::none: break;
      case Work::linear: op_linear(r, op, ring, last, last_elems, ring_elems); break;
      case Work::attention: op_attention(r, op, ring, last, last_elems, ring_elems); break;
      case Work::h2d:
        CF_CUDA(cudaMemcpyAsync(r.slots.get() + op.device_offset, host_weights.get() + op.host_offset,
                                size_t(op.h2d_bytes), cudaMemcpyHostToDevice, s));
        break;
      case Work::all_to_all: op_all_to_all(r, op, parity); break;
    }
    if (op.lane == Lane::compute) packs(r, op, last, last_elems);
    r.end[size_t(li)].record(s);
  }
}

RunTiming Executor::run() {
  Impl& m = *impl_;
  *static_cast<volatile int*>(static_cast<void*>(m.latch_flag.get())) = 0;
  // The proxy staging is read before it is written by the first all-to-all of a run: start every
  // run from zeros so that runs are deterministic (the devices are idle here).
  for (auto& s : m.stage)
    if (s.bytes()) std::memset(s.get(), 0, s.bytes());
  std::vector<std::exception_ptr> errors(m.ranks.size());
  auto work = [&](int r) {
    try {
      m.enqueue(r);
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
  // Release every latch (also after an enqueue error, so that the devices drain).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *static_cast<volatile int*>(static_cast<void*>(m.latch_flag.get())) = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (auto& r : m.ranks) {
    use_device(r.device);
    CF_CUDA(cudaDeviceSynchronize());
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  RunTiming timing;
  timing.ops.resize(m.program.ops.size());
  for (auto& r : m.ranks) {
    use_device(r.device);
    timing.latch_timed_out |= *static_cast<volatile int*>(static_cast<void*>(r.latch_status.get())) != 0;
    for (size_t i = 0; i < r.ops.size(); ++i) {
      auto& t = timing.ops[size_t(r.ops[i])];
      t.start_s = r.start[i].seconds_since(*r.common_start);
      t.end_s = r.end[i].seconds_since(*r.common_start);
    }
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
