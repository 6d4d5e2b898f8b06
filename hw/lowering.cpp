// StepPlan → hw::Program (see lowering.hpp). Host-only.
#include "hw/lowering.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <stdexcept>
#include <utility>

#include "model/architecture.hpp"
#include "model/harness_ops.hpp"
#include "model/error.hpp"

namespace chunkflow::hw {

const char* to_string(Tensor t) {
  switch (t) {
    case Tensor::q: return "q";
    case Tensor::k: return "k";
    case Tensor::v: return "v";
    case Tensor::o: return "o";
    case Tensor::ring_kv: return "ring_kv";
    case Tensor::all_reduce: return "all_reduce";
    case Tensor::cfg_gather: return "cfg_gather";
  }
  return "?";
}

namespace {

int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// Plan byte counts are doubles; the harness moves whole bytes. Rounding both ends of every range
/// the same way keeps adjacent chunks tiling exactly.
int64_t to_bytes(double x, const std::string& what) {
  if (!std::isfinite(x) || x < 0) throw std::logic_error(what + ": byte count " + std::to_string(x) + " is not ≥ 0");
  return std::llround(x);
}

Tensor tensor_of(AllToAllTensor t) {
  switch (t) {
    case AllToAllTensor::q: return Tensor::q;
    case AllToAllTensor::k: return Tensor::k;
    case AllToAllTensor::v: return Tensor::v;
    case AllToAllTensor::o: return Tensor::o;
  }
  return Tensor::q;
}

}  // namespace

Ancestors::Ancestors(const StepPlan& plan) {
  const size_t n = plan.ops.size();
  words_ = (n + 63) / 64;
  bits_.assign(n * words_, 0);
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<int>> successors(n);
  for (size_t i = 0; i < n; ++i) {
    for (int d : plan.ops[i].deps) {
      if (d < 0 || size_t(d) >= n)
        throw std::logic_error("op " + plan.ops[i].name + ": dependency " + std::to_string(d) + " is not an op id");
      successors[size_t(d)].push_back(int(i));
      ++indegree[i];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push(int(i));
  order_.reserve(n);
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    order_.push_back(v);
    const uint64_t* row_v = &bits_[size_t(v) * words_];
    for (int s : successors[size_t(v)]) {
      uint64_t* row_s = &bits_[size_t(s) * words_];
      for (size_t w = 0; w < words_; ++w) row_s[w] |= row_v[w];
      row_s[size_t(v) / 64] |= uint64_t(1) << (v % 64);
      if (--indegree[size_t(s)] == 0) ready.push(s);
    }
  }
  if (order_.size() != n) throw std::logic_error("plan: the dependency graph has a cycle");
}

std::string check_buffer_order(const StepPlan& plan, const Ancestors& anc, const std::string& buffer,
                               std::vector<BufferAccess> accesses) {
  // Issue order = topological position (ties by id), so a reader issued before its writer in the
  // ops array still comes after it here when it depends on it.
  std::vector<int> position(plan.ops.size());
  const auto& order = anc.topological_order();
  for (size_t i = 0; i < order.size(); ++i) position[size_t(order[i])] = int(i);
  std::stable_sort(accesses.begin(), accesses.end(), [&](const BufferAccess& a, const BufferAccess& b) {
    return position[size_t(a.op)] < position[size_t(b.op)];
  });
  int last_write = -1;
  std::vector<int> reads_since;
  auto name = [&](int id) { return plan.ops[size_t(id)].name + " (op " + std::to_string(id) + ")"; };
  for (const auto& a : accesses) {
    if (a.write) {
      if (last_write >= 0 && a.op != last_write && !anc.depends(a.op, last_write))
        return buffer + ": " + name(a.op) + " writes it without depending on the previous writer " + name(last_write);
      for (int r : reads_since)
        if (r != a.op && !anc.depends(a.op, r))
          return buffer + ": " + name(a.op) + " may overwrite it while " + name(r) + " still reads it";
      last_write = a.op;
      reads_since.clear();
    } else {
      if (last_write >= 0 && a.op != last_write && !anc.depends(a.op, last_write))
        return buffer + ": " + name(a.op) + " reads it without depending on its writer " + name(last_write);
      reads_since.push_back(a.op);
    }
  }
  return "";
}

Program lower(const StepPlan& plan, const NodeSpec& node, const LoweringOptions& options) {
  const Workload& w = plan.workload;
  if (w.dtype_bytes != 2)
    throw InputError("", "/workload/dtype_bytes",
                     "the hardware harness runs bf16 (2 bytes per element), got " + std::to_string(w.dtype_bytes));
  const DitArchitecture& arch = architecture(w.model);
  const size_t n_ops = plan.ops.size();
  for (size_t i = 0; i < n_ops; ++i)
    if (plan.ops[i].id != int(i)) throw std::logic_error("plan: op " + plan.ops[i].name + " has id ≠ its index");

  Program p;
  p.policy = plan.info.policy;
  p.steps = plan.info.steps;
  p.ranks = std::max(1, plan.info.ranks);
  p.ulysses_degree = w.ulysses_degree;
  p.proxy = node.collective == CollectiveBackend::pcie_proxy;
  p.hidden = arch.hidden;

  const Ancestors anc(plan);
  p.order = anc.topological_order();

  // ---- Blocks: host layout, linears' W ranges -------------------------------------------------
  const auto& blocks = plan.cost.blocks;
  const size_t nb = blocks.size();
  p.block_bytes.resize(nb);
  p.block_host_offset.resize(nb);
  p.block_linears.resize(nb);
  int64_t host_offset = 0;
  for (size_t b = 0; b < nb; ++b) {
    p.block_bytes[b] = to_bytes(blocks[b].weight_bytes, "block " + std::to_string(b));
    p.block_host_offset[b] = host_offset;
    p.host_weight_bytes = host_offset + p.block_bytes[b];
    host_offset = align_up(p.host_weight_bytes, kAlignBytes);
    for (const auto& st : blocks[b].stages) {
      if (st.stage.kind != BlockStage::Kind::linear) continue;
      const int64_t begin = to_bytes(st.weight_offset_bytes, st.name);
      p.block_linears[b].push_back({begin, begin + st.gemm.k * st.gemm.n * 2, std::max<int64_t>(1, st.gemm.k)});
    }
  }
  p.non_block_weight_bytes = to_bytes(plan.cost.non_block_weight_bytes, "non-block weights");

  // ---- Slots and H2D chunks --------------------------------------------------------------------
  p.slot_count = plan.info.slot_count;
  p.slot_bytes = to_bytes(plan.info.slot_bytes, "slot bytes");
  p.slot_stride_bytes = p.slot_count > 0 ? align_up(p.slot_bytes + kAlignBytes, kAlignBytes) : 0;
  struct Chunk { int op; int64_t begin, end, device_offset; int slot; };
  std::map<std::pair<int, int>, std::vector<Chunk>> chunks;  // (rank, block) → chunks
  p.block_resident_bytes = p.block_bytes;
  for (const auto& op : plan.ops) {
    if (op.kind != OpKind::h2d) continue;
    if (op.block < 0 || size_t(op.block) >= nb)
      throw std::logic_error("op " + op.name + ": H2D chunk of block " + std::to_string(op.block) + ", not in the stack");
    const int64_t begin = to_bytes(op.src_offset_bytes, op.name);
    const int64_t end = to_bytes(op.src_offset_bytes + op.bytes, op.name);
    if (!(begin < end && end <= p.block_bytes[size_t(op.block)]))
      throw std::logic_error("op " + op.name + ": chunk [" + std::to_string(begin) + ", " + std::to_string(end) +
                             ") is empty or outside block " + std::to_string(op.block) + " of " +
                             std::to_string(p.block_bytes[size_t(op.block)]) + " bytes");
    if (op.slot < 0 || op.slot >= p.slot_count)
      throw std::logic_error("op " + op.name + ": slot " + std::to_string(op.slot) + " outside [0, " +
                             std::to_string(p.slot_count) + ")");
    if (end - begin > p.slot_bytes)
      throw std::logic_error("op " + op.name + ": chunk of " + std::to_string(end - begin) +
                             " bytes does not fit a slot of " + std::to_string(p.slot_bytes) + " bytes");
    auto& r = p.block_resident_bytes[size_t(op.block)];
    r = std::min(r, begin);
    const int64_t device_offset = int64_t(op.slot) * p.slot_stride_bytes + begin % kAlignBytes;
    chunks[{op.rank, op.block}].push_back({op.id, begin, end, device_offset, op.slot});
  }
  p.block_resident_offset.resize(nb);
  int64_t arena = 0;
  for (size_t b = 0; b < nb; ++b) {
    p.block_resident_offset[b] = arena;
    arena = align_up(arena + p.block_resident_bytes[b], kAlignBytes);
  }
  p.resident_arena_bytes = arena;

  // ---- Per-op programs -------------------------------------------------------------------------
  // Buffers shared between streams, for the hazard check: key → accesses.
  std::map<std::string, std::vector<BufferAccess>> shared;
  // Where bytes [begin, end) of op's block layout live on op's rank: the resident prefix, then the
  // H2D chunks op depends on (the latest one holding each byte). Registers the slot reads.
  auto pieces_of = [&](const PlanOp& op, int64_t begin, int64_t end) {
    std::vector<WeightPiece> pieces;
    const size_t b = size_t(op.block);
    const int64_t resident = p.block_resident_bytes[b];
    if (begin < std::min(end, resident))
      pieces.push_back({true, begin, std::min(end, resident), p.block_resident_offset[b] + begin, -1, -1});
    int64_t x = std::max(begin, resident);
    if (x < end) {
      std::vector<const Chunk*> candidates;
      if (auto it = chunks.find({op.rank, op.block}); it != chunks.end())
        for (const auto& c : it->second)
          if (c.end > x && c.begin < end && anc.depends(op.id, c.op)) candidates.push_back(&c);
      while (x < end) {
        const Chunk* best = nullptr;
        for (const Chunk* c : candidates)
          if (c->begin <= x && x < c->end && (!best || c->op > best->op)) best = c;
        if (!best)
          throw std::logic_error("op " + op.name + ": bytes from " + std::to_string(x) + " of block " +
                                 std::to_string(b) + " (layout [" + std::to_string(begin) + ", " + std::to_string(end) +
                                 ")) are offloaded but no H2D chunk it depends on holds them");
        const int64_t piece_end = std::min(end, best->end);
        pieces.push_back({false, x, piece_end, best->device_offset + (x - best->begin), best->op, best->slot});
        shared["rank" + std::to_string(op.rank) + ".slot" + std::to_string(best->slot)].push_back({op.id, false});
        x = piece_end;
      }
    }
    return pieces;
  };
  std::vector<int> gathered_count(size_t(p.ranks), 0);       // FSDP all-gathers issued per rank
  std::map<std::tuple<int, int, int>, int> gathered_of;       // (rank, step, block) → gathered buffer
  p.ops.resize(n_ops);
  for (const auto& op : plan.ops) {
    OpProgram& o = p.ops[size_t(op.id)];
    o.id = op.id;
    o.name = op.name;
    o.kind = op.kind;
    o.lane = op.lane;
    o.rank = op.rank;
    o.step = op.step;
    o.block = op.block;
    o.data_deps.assign(op.data_deps.begin(), op.data_deps.end());
    o.bytes = op.bytes;
    o.flop = op.flop;
    if (op.rank < 0 || op.rank >= p.ranks)
      throw std::logic_error("op " + op.name + ": rank " + std::to_string(op.rank) + " outside the plan's " +
                             std::to_string(p.ranks) + " ranks");
    if (op.kind == OpKind::h2d) {
      o.work = Work::h2d;
      o.slot = op.slot;
      const int64_t begin = to_bytes(op.src_offset_bytes, op.name);
      o.h2d_bytes = to_bytes(op.src_offset_bytes + op.bytes, op.name) - begin;
      o.host_offset = p.block_host_offset[size_t(op.block)] + begin;
      o.device_offset = int64_t(op.slot) * p.slot_stride_bytes + begin % kAlignBytes;
      if (!std::isfinite(op.rate_cap_bytes_per_s) || op.rate_cap_bytes_per_s < 0)
        throw std::logic_error("op " + op.name + ": rate cap " + std::to_string(op.rate_cap_bytes_per_s) +
                               " bytes/s is not ≥ 0 (0 = no cap)");
      o.rate_cap_bytes_per_s = op.rate_cap_bytes_per_s;
      shared["rank" + std::to_string(op.rank) + ".slot" + std::to_string(op.slot)].push_back({op.id, true});
      continue;
    }
    if (op.block < 0 || op.stage < 0) {
      if (op.kind == OpKind::collective)
        throw std::logic_error("op " + op.name + ": a collective without a block stage");
      continue;  // not tied to a block stage: timed as an empty op
    }
    const StageCost& st = plan.stage_of(op);
    if (op.kind == OpKind::collective) {
      if (st.stage.kind != BlockStage::Kind::all_to_all)
        throw std::logic_error("op " + op.name + ": a collective whose stage is not an all-to-all");
      o.collective_group = op.collective_group;
      o.a2a_bytes = to_bytes(op.bytes > 0 ? op.bytes : st.all_to_all_buffer_bytes, op.name);
      if (st.collective == CollectiveKind::all_to_all) {
        o.work = Work::all_to_all;
        o.tensor = tensor_of(st.stage.tensor);
      } else {
        if (p.proxy)
          throw std::logic_error("op " + op.name + ": a " + collective_kind_name(st.collective) +
                                 " collective on the pcie-proxy backend (one GPU stands for a Ulysses group): the "
                                 "harness runs only Ulysses all-to-alls there");
        o.work = Work::collective;
      }
      if (!p.proxy) {
        try {
          o.call = nccl_call(w, st.collective, op.rank, o.a2a_bytes);
        } catch (const std::exception& e) {
          throw std::logic_error("op " + op.name + ": " + e.what());
        }
        auto it = std::find(p.comm_groups.begin(), p.comm_groups.end(), o.call.group);
        o.comm = int(it - p.comm_groups.begin());
        if (it == p.comm_groups.end()) p.comm_groups.push_back(o.call.group);
      }
      if (st.collective == CollectiveKind::all_gather) {
        // FSDP: send the rank's shard (the block's [0, S) wherever it lives) into a gathered-block
        // buffer, alternating between two (the plan gathers at most two blocks at a time).
        o.shard_pieces = pieces_of(op, 0, o.a2a_bytes);
        if (o.shard_pieces.size() > 1) p.max_shard_send_bytes = std::max(p.max_shard_send_bytes, o.a2a_bytes + kAlignBytes);
        o.gathered = gathered_count[size_t(op.rank)]++ % 2;
        gathered_of[{op.rank, op.step, op.block}] = o.gathered;
        p.max_gathered_bytes = std::max(p.max_gathered_bytes, o.call.recv_buffer_bytes + kAlignBytes);
        shared["rank" + std::to_string(op.rank) + ".gathered" + std::to_string(o.gathered)].push_back({op.id, true});
        continue;
      }
      if (o.work == Work::collective)
        o.tensor = st.collective == CollectiveKind::ring_kv      ? Tensor::ring_kv
                   : st.collective == CollectiveKind::all_reduce ? Tensor::all_reduce
                                                                 : Tensor::cfg_gather;
      const int64_t send = o.work == Work::all_to_all || p.proxy ? o.a2a_bytes : o.call.send_buffer_bytes;
      const int64_t recv = o.work == Work::all_to_all || p.proxy ? o.a2a_bytes : o.call.recv_buffer_bytes;
      auto& ms = p.max_a2a_bytes[size_t(o.tensor)];
      ms = std::max(ms, send);
      auto& mr = p.max_recv_bytes[size_t(o.tensor)];
      mr = std::max(mr, recv);
      continue;
    }
    if (st.stage.kind == BlockStage::Kind::attention) {
      o.work = Work::attention;
      auto& a = o.attention;
      a.batch = st.attention.batch;
      a.heads = st.attention.heads;
      a.q_tokens = st.attention.q_tokens;
      a.kv_tokens = st.attention.kv_tokens;
      a.head_dim = st.attention.head_dim;
      if (a.batch <= 0 || a.heads <= 0 || a.q_tokens <= 0 || a.kv_tokens <= 0 || a.head_dim <= 0)
        throw std::logic_error("op " + op.name + ": attention shape has a zero dimension");
      p.max_q_elems = std::max(p.max_q_elems, a.q_elems());
      p.max_kv_elems = std::max(p.max_kv_elems, a.kv_elems());
      p.max_attention_rows = std::max(p.max_attention_rows, a.batch * a.heads);
      continue;
    }
    if (st.stage.kind != BlockStage::Kind::linear)
      throw std::logic_error("op " + op.name + ": a compute op whose stage is an all-to-all");
    o.work = Work::linear;
    auto& l = o.linear;
    l.m = st.gemm.m;
    l.k = st.gemm.k;
    l.n = st.gemm.n;
    if (l.m <= 0 || l.k <= 0 || l.n <= 0) throw std::logic_error("op " + op.name + ": GEMM shape has a zero dimension");
    l.layout_begin = to_bytes(st.weight_offset_bytes, op.name);
    l.weight_bytes = to_bytes(st.weight_bytes, op.name);
    if (l.weight_bytes < l.k * l.n * 2)
      throw std::logic_error("op " + op.name + ": weight bytes " + std::to_string(l.weight_bytes) +
                             " < k·n·2 = " + std::to_string(l.k * l.n * 2));
    l.bias = linear_has_bias(st);  // the simulator prices the same bias kernel (model/harness_ops.hpp)
    if (l.bias && l.weight_bytes < (l.k * l.n + l.n) * 2)
      throw std::logic_error("op " + op.name + ": weight bytes " + std::to_string(l.weight_bytes) +
                             " hold more than the weights but not a whole bias of " + std::to_string(l.n) + " elements");
    const size_t b = size_t(op.block);
    const int64_t begin = l.layout_begin, end = l.layout_begin + l.weight_bytes;
    if (blocks[b].weights_gathered) {
      // FSDP: the block's all-gather (same rank, step and block, issued before) holds the whole block.
      auto it = gathered_of.find({op.rank, op.step, op.block});
      if (it == gathered_of.end())
        throw std::logic_error("op " + op.name + ": an FSDP linear with no all-gather of its block before it");
      l.gathered = it->second;
      const int64_t whole = p.block_bytes[b] * int64_t(fsdp_degree(w));
      if (end > whole)
        throw std::logic_error("op " + op.name + ": weights end at " + std::to_string(end) + ", past the gathered block " +
                               std::to_string(b) + " of " + std::to_string(whole) + " bytes");
      shared["rank" + std::to_string(op.rank) + ".gathered" + std::to_string(l.gathered)].push_back({op.id, false});
    } else {
      if (end > p.block_bytes[b])
        throw std::logic_error("op " + op.name + ": weights end at " + std::to_string(end) + ", past block " +
                               std::to_string(b) + " of " + std::to_string(p.block_bytes[b]) + " bytes");
      l.pieces = pieces_of(op, begin, end);
    }
    p.hidden_rows = std::max(p.hidden_rows, l.m);
    p.max_x_elems = std::max(p.max_x_elems, l.m * l.k);
    p.max_y_elems = std::max(p.max_y_elems, l.m * l.n);
    if (l.gather()) {
      p.max_gather_bytes = std::max(p.max_gather_bytes, l.weight_bytes + kAlignBytes);
      ++p.gathers_per_run;
      p.gather_bytes_per_run += l.weight_bytes;
    }
  }
  p.hidden_rows = std::max<int64_t>(p.hidden_rows, 1);

  // ---- Dataflow per rank in issue order (identical for every policy of the same workload) ----
  for (int r = 0; r < p.ranks; ++r) {
    std::array<int, kTensorCount> pending;  // all-to-all whose receive buffer waits for its reader
    pending.fill(-1);
    int last_compute = -1;
    const std::string prefix = "rank" + std::to_string(r) + ".";
    for (auto& o : p.ops) {
      if (o.rank != r) continue;
      if (o.work == Work::linear) {
        auto& l = o.linear;
        if (pending[size_t(Tensor::o)] >= 0) {
          l.input = LinearInput::recv_o;
          l.recv_o_bytes = p.ops[size_t(pending[size_t(Tensor::o)])].a2a_bytes;
          shared[prefix + "recv.o"].push_back({o.id, false});
          pending[size_t(Tensor::o)] = -1;
        } else {
          l.input = l.k == p.hidden ? LinearInput::norm_hidden : LinearInput::gelu_last;
        }
      } else if (o.work == Work::attention) {
        for (int t = 0; t < 3; ++t) {
          o.attention.from_recv[size_t(t)] = pending[size_t(t)] >= 0;
          if (pending[size_t(t)] >= 0) o.attention.recv_bytes[size_t(t)] = p.ops[size_t(pending[size_t(t)])].a2a_bytes;
          if (pending[size_t(t)] >= 0) shared[prefix + "recv." + to_string(Tensor(t))].push_back({o.id, false});
          pending[size_t(t)] = -1;
        }
      } else if (o.work == Work::all_to_all || (o.work == Work::collective && o.call.kind != CollectiveKind::all_gather)) {
        const std::string t = to_string(o.tensor);
        // The send buffer is filled at the end of the latest compute op of this rank the collective
        // directly depends on (its producer); the receive buffer is read by the next consumer.
        int producer = -1;
        for (int d : o.data_deps) {
          const auto& dep = p.ops[size_t(d)];
          if (dep.rank == r && dep.lane == Lane::compute) producer = std::max(producer, d);
        }
        if (producer < 0) producer = last_compute;
        if (producer >= 0) {
          auto& packs = p.ops[size_t(producer)].packs;
          const OpProgram::Pack pack{o.tensor, o.work == Work::all_to_all ? o.a2a_bytes : o.call.send_buffer_bytes};
          if (std::find(packs.begin(), packs.end(), pack) == packs.end()) packs.push_back(pack);
          shared[prefix + "send." + t].push_back({producer, true});
        }
        // The ring's K/V pass double-buffers through send and recv: with R > 2 it writes both.
        shared[prefix + "send." + t].push_back({o.id, o.work == Work::collective && o.call.steps > 1});
        shared[prefix + "recv." + t].push_back({o.id, true});
        if (o.work == Work::all_to_all) pending[size_t(o.tensor)] = o.id;  // the next compute reads it
      }
      if (o.lane == Lane::compute && o.work != Work::none) last_compute = o.id;
    }
  }

  // ---- Stream and event mapping ----------------------------------------------------------------
  // Each lane of a rank is one stream fed in p.order, so on a lane the dep latest in p.order ends
  // after every earlier one: with latest_per_lane one wait per other lane orders the same.
  std::vector<int> position(n_ops);
  for (size_t i = 0; i < p.order.size(); ++i) position[size_t(p.order[i])] = int(i);
  for (auto& o : p.ops) {
    const auto& op = plan.ops[size_t(o.id)];
    std::vector<int> all(op.deps.begin(), op.deps.end());
    all.insert(all.end(), op.data_deps.begin(), op.data_deps.end());
    std::map<Lane, int> latest;  // other lane → its dep latest in p.order
    for (int d : all) {
      if (d < 0 || size_t(d) >= n_ops) throw std::logic_error("op " + op.name + ": dependency outside the plan");
      const auto& dep = p.ops[size_t(d)];
      if (dep.rank != o.rank) {
        if (dep.kind == OpKind::collective && o.kind == OpKind::collective) continue;  // NCCL orders them
        throw std::logic_error("op " + op.name + " (rank " + std::to_string(o.rank) + ") depends on " + dep.name +
                               " (rank " + std::to_string(dep.rank) +
                               "): cross-rank dependencies are supported only between collectives");
      }
      if (dep.lane == o.lane) continue;
      if (options.waits == CrossLaneWaits::every_dep) {
        if (std::find(o.waits.begin(), o.waits.end(), d) == o.waits.end()) o.waits.push_back(d);
        continue;
      }
      auto [it, fresh] = latest.try_emplace(dep.lane, d);
      if (!fresh && position[size_t(d)] > position[size_t(it->second)]) it->second = d;
    }
    for (const auto& [lane, d] : latest) o.waits.push_back(d);
    std::sort(o.waits.begin(), o.waits.end());
  }

  // ---- Collective order: every rank enqueues its collectives in one global order ---------------
  // (the plan numbers collective groups in program order). Ranks that share communicators in a
  // different order could each wait in NCCL for a peer that waits elsewhere: a deadlock.
  for (int r = 0; r < p.ranks; ++r) {
    int previous = -1;
    for (int id : p.order) {
      const auto& o = p.ops[size_t(id)];
      if (o.rank != r || o.kind != OpKind::collective) continue;
      if (o.collective_group <= previous)
        throw std::logic_error("op " + o.name + " (rank " + std::to_string(r) + "): collective group " +
                               std::to_string(o.collective_group) + " enqueued after group " + std::to_string(previous) +
                               ": the ranks' collectives would not run in one order (NCCL could deadlock)");
      previous = o.collective_group;
    }
  }

  // ---- Hazards on buffers shared between streams ----------------------------------------------
  for (auto& [buffer, accesses] : shared) {
    const std::string problem = check_buffer_order(plan, anc, buffer, accesses);
    if (!problem.empty())
      throw std::logic_error("plan cannot run on the hardware harness: " + problem +
                             " (the plan's dependencies do not order this reuse)");
  }
  return p;
}

}  // namespace chunkflow::hw
