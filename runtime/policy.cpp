#include "runtime/policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "runtime/plan_limits.hpp"

namespace chunkflow {

namespace {
/// A number as a user wrote it ("0", "1.5", "-8"), for error messages.
std::string shown(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

std::vector<std::string> policy_names() { return {"no-offload", "layerwise", "chunkflow"}; }

void validate(const PolicyConfig& p, const std::string& file, const std::string& prefix) {
  const auto names = policy_names();
  if (std::find(names.begin(), names.end(), p.policy) == names.end())
    throw InputError(file, prefix + "/name",
                     "expected one of no-offload, layerwise, chunkflow, got \"" + p.policy + "\"");
  if (!(p.chunk_bytes > 0) || !std::isfinite(p.chunk_bytes))
    throw InputError(file, prefix + "/chunk_mib",
                     "expected a chunk size > 0 MiB, got " + shown(p.chunk_bytes / kMiB));
  if (p.resident_fraction && !(*p.resident_fraction >= 0.0 && *p.resident_fraction <= 1.0))
    throw InputError(file, prefix + "/resident_fraction",
                     "expected a number in [0, 1] or \"auto\", got " + shown(*p.resident_fraction));
  if (p.lookahead < 1)
    throw InputError(file, prefix + "/lookahead", "expected an integer ≥ 1, got " + std::to_string(p.lookahead));
  if (p.steps < 1) throw InputError(file, prefix + "/steps", "expected an integer ≥ 1, got " + std::to_string(p.steps));
}

namespace {

/// One H2D transfer of the plan before it becomes an op: a byte range of one block of one step.
struct Chunk {
  int step = 0;
  int block = 0;
  int index = 0;            ///< within the block
  double offset_bytes = 0;  ///< in the block's flat layout
  double bytes = 0;
  int last_reader_stage = -1;  ///< the stage that reads it last (it frees the chunk)
};

/// "s<step>.b<block, two digits at least>." (formatted by hand: this runs once per op).
std::string block_prefix(int step, int block) {
  std::string s;
  s.reserve(32);
  s += 's';
  s += std::to_string(step);
  s += block < 10 ? ".b0" : ".b";
  s += std::to_string(block);
  s += '.';
  return s;
}

/// Which blocks layerwise keeps resident: round(R·n) of n, spread evenly (SGLang's `strided`
/// placement, systems-and-hardware.md §1).
std::vector<bool> strided_resident_blocks(int n, double fraction) {
  const int keep = static_cast<int>(std::lround(fraction * n));
  std::vector<bool> resident(n, false);
  for (int b = 0; b < n; ++b)
    resident[b] = (static_cast<long>(b + 1) * keep) / n > (static_cast<long>(b) * keep) / n;
  return resident;
}

}  // namespace

StepPlan build_plan(const Workload& w, const NodeSpec& node, const PolicyConfig& config) {
  validate(w);
  validate(node);
  validate(config);

  StepPlan plan;
  plan.workload = w;
  plan.cost = forward_cost(w);
  check_plan_limits(w, plan.cost, node, config);  // sizes bounded before allocating
  const ForwardCost& cost = plan.cost;
  const int ranks = node.executed_ranks(w.ulysses_degree);
  const int nblocks = static_cast<int>(cost.blocks.size());

  PlanInfo& info = plan.info;
  info.policy = config.policy;
  info.steps = config.steps;
  info.ranks = ranks;
  info.lookahead = config.lookahead;
  info.activation_bytes = cost.activation_bytes;

  // ---- Which bytes of each block move, and in which chunks --------------------------------
  // resident_bytes[b]: the prefix of block b's layout that stays on the GPU.
  std::vector<double> resident_bytes(nblocks, 0.0);
  double max_offloaded = 0;
  int max_chunks_per_block = 0;
  if (config.policy == "no-offload") {
    for (int b = 0; b < nblocks; ++b) resident_bytes[b] = cost.blocks[b].weight_bytes;
    info.resident_fraction = 1.0;
  } else if (config.policy == "layerwise") {
    info.resident_fraction = config.resident_fraction.value_or(0.0);
    const auto resident = strided_resident_blocks(nblocks, info.resident_fraction);
    for (int b = 0; b < nblocks; ++b) {
      resident_bytes[b] = resident[b] ? cost.blocks[b].weight_bytes : 0.0;
      if (!resident[b]) {
        max_offloaded = std::max(max_offloaded, cost.blocks[b].weight_bytes);
        max_chunks_per_block = 1;
      }
    }
    info.chunk_bytes = max_offloaded;
  } else {  // chunkflow
    info.resident_fraction_auto = !config.resident_fraction.has_value();
    info.resident_fraction = config.resident_fraction.has_value()
                                 ? *config.resident_fraction
                                 : analyze(cost, node, w.ulysses_degree).auto_resident_fraction;
    info.chunk_bytes = config.chunk_bytes;
    for (int b = 0; b < nblocks; ++b) {
      const double total = cost.blocks[b].weight_bytes;
      // Whole bytes, a multiple of the element size so that no element straddles the boundary.
      const double elem = w.dtype_bytes;
      resident_bytes[b] = std::min(total, std::floor(info.resident_fraction * total / elem) * elem);
      const double off = total - resident_bytes[b];
      max_offloaded = std::max(max_offloaded, off);
      max_chunks_per_block = std::max(max_chunks_per_block, static_cast<int>(std::ceil(off / config.chunk_bytes)));
    }
  }

  // The per-step sequence of chunks (identical every step and on every rank).
  std::vector<Chunk> step_chunks;
  for (int b = 0; b < nblocks; ++b) {
    const double total = cost.blocks[b].weight_bytes;
    if (resident_bytes[b] >= total) continue;
    const double piece = config.policy == "layerwise" ? total : config.chunk_bytes;
    int index = 0;
    for (double off = resident_bytes[b]; off < total; off += piece, ++index)
      step_chunks.push_back({0, b, index, off, std::min(piece, total - off)});
  }

  // Per block, the byte range each stage reads; per chunk, its last reader (same every step).
  std::vector<std::vector<std::pair<double, double>>> ranges(nblocks);
  for (int b = 0; b < nblocks; ++b)
    for (int st = 0; st < int(cost.blocks[b].stages.size()); ++st) ranges[b].push_back(stage_weight_range(cost.blocks[b], st));
  for (Chunk& c : step_chunks)
    for (int st = 0; st < int(ranges[c.block].size()); ++st)
      if (c.offset_bytes < ranges[c.block][st].second && c.offset_bytes + c.bytes > ranges[c.block][st].first)
        c.last_reader_stage = st;

  // First-order estimate of the program's own timeline, with which chunkflow co-schedules its
  // prefetch and the collectives: stage times from the analytical model, an all-to-all as latency
  // + (P−1)/P of its buffer at the collective flow rate. gap_s[b][st] is the estimated time from the
  // end of stage st of block b to the start of the next collective (the program repeats each step;
  // +inf without collectives).
  const double inf = std::numeric_limits<double>::infinity();
  const int P = w.ulysses_degree;
  auto stage_estimate_s = [&](const StageCost& st) {
    if (st.stage.kind != BlockStage::Kind::all_to_all) return stage_compute_time_s(st, node);
    const double link = std::min(node.collective_flow_bytes_per_s, node.h2d_bytes_per_s(0));
    return node.collective_latency_s + st.all_to_all_buffer_bytes * (P - 1) / P / link;
  };
  std::vector<std::vector<double>> gap_s(nblocks);
  double gap_before_program_s = inf;
  {
    std::vector<std::pair<int, int>> flat;
    for (int b = 0; b < nblocks; ++b)
      for (int st = 0; st < int(cost.blocks[b].stages.size()); ++st) flat.push_back({b, st});
    for (int b = 0; b < nblocks; ++b) gap_s[b].assign(cost.blocks[b].stages.size(), inf);
    const std::size_t n = flat.size();
    double next = inf;  // gap from the end of flat[i] to the next collective
    for (std::size_t k = 2 * n; k-- > 0;) {
      const std::size_t i = k % n;
      const auto [b, st] = flat[i];
      gap_s[b][st] = next;
      const StageCost& stage = cost.blocks[b].stages[st];
      next = stage.stage.kind == BlockStage::Kind::all_to_all ? 0.0 : stage_estimate_s(stage) + next;
    }
    gap_before_program_s = next;
  }

  info.slot_count = max_chunks_per_block * (config.lookahead + 1);
  info.slot_bytes = step_chunks.empty() ? 0.0
                    : config.policy == "layerwise" ? max_offloaded
                                                   : std::min(config.chunk_bytes, max_offloaded);
  info.resident_weight_bytes = cost.non_block_weight_bytes;
  for (int b = 0; b < nblocks; ++b) info.resident_weight_bytes += resident_bytes[b];
  for (const auto& c : step_chunks) info.offloaded_bytes_per_step += c.bytes;
  if (step_chunks.empty()) info.slot_count = 0;

  const bool yield_to_collectives = config.policy == "chunkflow";
  {
    std::size_t stages = 0;
    for (const auto& b : cost.blocks) stages += b.stages.size();
    plan.ops.reserve(std::size_t(ranks) * config.steps * (stages + step_chunks.size()));
  }
  int next_group = 0;
  std::vector<int> group_of_collective;  // per program position of rank 0 → group id

  for (int rank = 0; rank < ranks; ++rank) {
    // Global chunk sequence of this rank over all steps; chunk j fills slot j mod slot_count and
    // may be issued once the last reader of chunk j − slot_count has run.
    std::vector<Chunk> chunks;
    for (int s = 0; s < config.steps; ++s)
      for (Chunk c : step_chunks) {
        c.step = s;
        chunks.push_back(c);
      }
    std::vector<int> chunk_op(chunks.size(), -1);
    std::vector<int> chunk_last_reader(chunks.size(), -1);
    std::size_t next_chunk = 0;
    int last_compute = -1, last_h2d = -1, last_comm = -1;
    int last_collective = -1;  // latest collective issued on this rank (chunkflow yields to it)
    int collective_index = 0;
    std::size_t block_begin = 0;

    // Estimated clocks of this rank's compute/comm program and copy lane (first order).
    double est_now_s = 0, est_h2d_free_s = 0;
    const double h2d_rate = node.h2d_bytes_per_s(rank);

    // Issues chunk j (its slot is free) on the copy lane.
    auto issue_chunk = [&](std::size_t j, int release) {
      const Chunk& c = chunks[j];
      PlanOp op;
      op.kind = OpKind::h2d;
      op.lane = Lane::h2d;
      op.rank = rank;
      op.step = c.step;
      op.block = c.block;
      op.chunk = c.index;
      op.slot = static_cast<int>(j % info.slot_count);
      op.bytes = c.bytes;
      op.src_offset_bytes = c.offset_bytes;
      op.alloc_bytes = c.bytes;
      op.name = block_prefix(c.step, c.block) + (config.policy == "layerwise" ? std::string("h2d")
                                                                               : "h2d.c" + std::to_string(c.index));
      if (last_h2d >= 0) op.deps.push_back(last_h2d);
      if (release >= 0) op.data_deps.push_back(release);
      if (yield_to_collectives && last_collective >= 0) op.data_deps.push_back(last_collective);
      last_h2d = chunk_op[j] = plan.add(std::move(op));
      est_h2d_free_s = std::max(est_h2d_free_s, est_now_s) + node.h2d_latency_s + c.bytes / h2d_rate;
      ++next_chunk;
    };
    // Issues, in order, every chunk whose slot is free as of the ops issued so far. Chunkflow
    // issues a chunk only if it is estimated to land before the next collective starts
    // (`window_s` from now); the others wait until after that collective. With `up_to`, every
    // chunk before index up_to is issued regardless (a compute op needs it now).
    auto issue_ready_chunks = [&](double window_s, std::size_t up_to = 0) {
      while (next_chunk < chunks.size()) {
        const std::size_t j = next_chunk;
        int release = -1;
        if (info.slot_count > 0 && j >= std::size_t(info.slot_count)) {
          release = chunk_last_reader[j - info.slot_count];
          if (release < 0) return;  // previous occupant not yet read: issue later
        }
        const double est_end_s = std::max(est_h2d_free_s, est_now_s) + node.h2d_latency_s + chunks[j].bytes / h2d_rate;
        if (yield_to_collectives && j >= up_to && est_end_s > est_now_s + window_s) return;
        issue_chunk(j, release);
      }
    };

    issue_ready_chunks(gap_before_program_s);  // cold start: fill the slots
    for (int s = 0; s < config.steps; ++s) {
      for (int b = 0; b < nblocks; ++b) {
        const BlockCost& block = cost.blocks[b];
        // The chunks of (s, b): a contiguous range of the sequence, found from the cursor.
        while (block_begin < chunks.size() &&
               (chunks[block_begin].step < s || (chunks[block_begin].step == s && chunks[block_begin].block < b)))
          ++block_begin;
        std::size_t block_end = block_begin;
        while (block_end < chunks.size() && chunks[block_end].step == s && chunks[block_end].block == b) ++block_end;
        int pending_collective = -1;  // collectives since the last compute op
        for (int st = 0; st < int(block.stages.size()); ++st) {
          const StageCost& stage = block.stages[st];
          PlanOp op;
          op.rank = rank;
          op.step = s;
          op.block = b;
          op.stage = st;
          op.name = block_prefix(s, b) + stage.name;
          if (stage.stage.kind == BlockStage::Kind::all_to_all) {
            op.kind = OpKind::collective;
            op.lane = Lane::comm;
            op.bytes = stage.all_to_all_buffer_bytes;
            if (rank == 0) group_of_collective.push_back(next_group++);
            op.collective_group = group_of_collective.at(collective_index++);
            if (last_comm >= 0) op.deps.push_back(last_comm);
            if (last_compute >= 0) op.data_deps.push_back(last_compute);
            // Yield: no chunk may be in flight when the collective starts.
            if (yield_to_collectives && last_h2d >= 0) op.data_deps.push_back(last_h2d);
            last_comm = last_collective = pending_collective = plan.add(std::move(op));
            est_now_s += stage_estimate_s(stage);
            issue_ready_chunks(gap_s[b][st]);  // 0 when another collective follows
            continue;
          }
          op.kind = OpKind::compute;
          op.lane = Lane::compute;
          op.flop = stage.flop;
          if (last_compute >= 0) op.deps.push_back(last_compute);
          if (pending_collective >= 0) op.data_deps.push_back(pending_collective);
          const auto [lo, hi] = ranges[b][st];
          std::vector<std::size_t> read;
          for (std::size_t j = block_begin; j < block_end; ++j) {
            const Chunk& c = chunks[j];
            if (c.offset_bytes < hi && c.offset_bytes + c.bytes > lo) {
              if (chunk_op[j] < 0) issue_ready_chunks(0.0, j + 1);  // needed now: no more waiting
              if (chunk_op[j] < 0)
                throw std::logic_error("build_plan: " + op.name + " reads a chunk not yet issued (slot pool too small)");
              op.data_deps.push_back(chunk_op[j]);
              read.push_back(j);
            }
          }
          // This op frees the chunks whose last reader it is (readers run in order on one lane).
          std::vector<std::size_t> freed;
          for (std::size_t j : read)
            if (chunks[j].last_reader_stage == st) {
              op.free_bytes += chunks[j].bytes;
              freed.push_back(j);
            }
          last_compute = plan.add(std::move(op));
          pending_collective = -1;
          for (std::size_t j : freed) chunk_last_reader[j] = last_compute;
          // Chunkflow issues no chunk right before a collective: those chunks go after it.
          est_now_s += stage_estimate_s(stage);
          issue_ready_chunks(gap_s[b][st]);
        }
      }
    }
    if (next_chunk != chunks.size()) throw std::logic_error("build_plan: chunks left unissued");
  }
  return plan;
}

}  // namespace chunkflow
