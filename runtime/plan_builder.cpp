// Plan emission shared by every policy; see plan_builder.hpp.
#include "runtime/plan_builder.hpp"

#include "model/generation.hpp"

#include <algorithm>
#include <stdexcept>

namespace chunkflow {

ProgramLayout::ProgramLayout(const ForwardCost& cost) {
  const int nblocks = int(cost.blocks.size());
  units_.resize(nblocks);
  for (int b = 0; b < nblocks; ++b) {
    block_begin_.push_back(int(positions_.size()));
    const BlockCost& block = cost.blocks[b];
    for (int st = 0; st < int(block.stages.size()); ++st) {
      Position pos;
      pos.block = b;
      pos.stage = st;
      pos.collective = block.stages[st].stage.kind == BlockStage::Kind::all_to_all;
      const auto [lo, hi] = stage_weight_range(block, st);
      pos.lo_bytes = lo;
      pos.hi_bytes = hi;
      positions_.push_back(pos);
      if (hi > lo) units_[b].push_back({lo, hi});
    }
    std::sort(units_[b].begin(), units_[b].end());
  }
  block_begin_.push_back(int(positions_.size()));
  for (int b = 0; b < nblocks; ++b) {
    weighted_begin_.push_back(int(weighted_.size()));
    for (int p = block_begin_[b]; p < block_begin_[b + 1]; ++p)
      if (positions_[p].hi_bytes > 0)
        weighted_.push_back({positions_[p].lo_bytes, positions_[p].hi_bytes, p});
  }
  weighted_begin_.push_back(int(weighted_.size()));
}

std::pair<int, int> ProgramLayout::readers(int block, double lo, double hi) const {
  int first = -1, last = -1;
  if (!(lo >= 0)) {  // every position, also the non-linear stages' {0, 0}
    for (int p = block_begin_[block]; p < block_begin_[block + 1]; ++p)
      if (positions_[p].lo_bytes < hi && positions_[p].hi_bytes > lo) {
        if (first < 0) first = p;
        last = p;
      }
    return {first, last};
  }
  // A position meets [lo, hi) only if its hi_bytes > lo ≥ 0: the weighted ones are every candidate.
  for (int k = weighted_begin_[block]; k < weighted_begin_[block + 1]; ++k)
    if (weighted_[k].lo_bytes < hi && weighted_[k].hi_bytes > lo) {
      if (first < 0) first = weighted_[k].position;
      last = weighted_[k].position;
    }
  return {first, last};
}

namespace {

/// Op names are written into a small buffer and assigned to the op's string once (appending piece
/// by piece to a std::string cost ~300 instructions per op: a tenth of the builder's work).
struct NameBuffer {
  char text[48];
  std::size_t size = 0;

  /// Appends the decimal text of v, as std::to_string writes it (a '-' before a negative one).
  void append(int v) {
    char digits[12];
    int n = 0;
    unsigned magnitude = v < 0 ? 0u - unsigned(v) : unsigned(v);
    do {
      digits[n++] = char('0' + magnitude % 10);
      magnitude /= 10;
    } while (magnitude > 0);
    if (v < 0) text[size++] = '-';
    while (n > 0) text[size++] = digits[--n];
  }
  void append(const char* s) {
    while (*s) text[size++] = *s++;
  }
  /// "s<step>.b<block, two digits at least>." (a negative block as ".b0-1", as before).
  void block_prefix(int step, int block) {
    size = 0;
    text[size++] = 's';
    append(step);
    append(block < 10 ? ".b0" : ".b");
    append(block);
    text[size++] = '.';
  }
};

}  // namespace

void fill_schedule_info(const Workload& w, const NodeSpec& node, int steps, const CopySchedule& schedule,
                        const ForwardCost& cost, PlanInfo& info) {
  const auto& pieces = schedule.pieces;
  const std::size_t np = pieces.size();
  info.steps = steps;
  info.ranks = executed_ranks(w, node);
  info.denoising_steps = resolved_denoising_steps(w);
  info.forwards_per_step = forwards_per_step(w);
  info.cfg = cfg_mode_name(resolved_cfg(w));
  info.text_encode_time_s = text_encode_time_s(w, node);  // generation_time_s parts (issue 10 §3)
  info.vae_decode_time_s = vae_decode_time_s(w, node);
  info.activation_bytes = cost.activation_bytes;
  info.slot_count = np == 0 ? 0 : schedule.slot_count;
  info.slot_bytes = np == 0 ? 0 : schedule.slot_bytes;
  info.offloaded_bytes_per_step = 0;
  double resident = cost.weight_bytes;
  for (const CopyPiece& c : pieces) {
    if (c.bytes > schedule.slot_bytes + 0.5)
      throw std::logic_error("build_plan: a copy of " + std::to_string(c.bytes) + " bytes exceeds the slot size");
    if (c.step == steps - 1) {
      info.offloaded_bytes_per_step += c.bytes;
      resident -= c.bytes;
    }
  }
  info.resident_weight_bytes = resident;
  if (np > 0 && info.slot_count < 1) throw std::logic_error("build_plan: copies without slots");
}

namespace {
thread_local bool plan_builder_exhaustive = false;  // set_plan_builder_exhaustive
}  // namespace

void set_plan_builder_exhaustive(bool on) { plan_builder_exhaustive = on; }

StepPlan build_plan_from_schedule(const Workload& w, const NodeSpec& node, int steps, const CopySchedule& schedule,
                                  PlanInfo info, bool op_names) {
  StepPlan plan;
  plan.workload = w;
  plan.cost = forward_cost(w);
  const ForwardCost& cost = plan.cost;
  fill_schedule_info(w, node, steps, schedule, cost, info);
  const ProgramLayout layout(cost);
  const int n = layout.positions_per_step();
  const int ranks = info.ranks;
  const auto& pieces = schedule.pieces;
  const std::size_t np = pieces.size();

  // Per piece: its readers (global positions) and the release position of its slot's previous holder.
  std::vector<int> first_reader(np), last_reader(np);
  for (std::size_t j = 0; j < np; ++j) {
    const CopyPiece& c = pieces[j];
    const auto [f, l] = layout.readers(c.block, c.offset_bytes, c.offset_bytes + c.bytes);
    if (f < 0) throw std::logic_error("build_plan: a copy of block " + std::to_string(c.block) + " has no reader");
    first_reader[j] = c.step * n + f;
    last_reader[j] = c.step * n + l;
  }
  // Pieces of each (step, block), to find a compute op's pieces.
  std::vector<std::vector<std::size_t>> pieces_of(std::size_t(steps) * cost.blocks.size());
  for (std::size_t j = 0; j < np; ++j) pieces_of[std::size_t(pieces[j].step) * cost.blocks.size() + pieces[j].block].push_back(j);
  // The global position after whose op piece j may be issued (both its slot release and its `after`).
  std::vector<int> ready_position(np);
  for (std::size_t j = 0; j < np; ++j) {
    int ready = pieces[j].after_position;
    if (j >= std::size_t(info.slot_count)) ready = std::max(ready, last_reader[j - info.slot_count]);
    ready_position[j] = ready;
    if (ready >= first_reader[j])
      throw std::logic_error("build_plan: a copy of block " + std::to_string(pieces[j].block) +
                             " can only start after its own reader (slot pool too small or copy held too long)");
  }

  {
    std::size_t stages = 0;
    for (const auto& b : cost.blocks) stages += b.stages.size();
    plan.ops.reserve(std::size_t(ranks) * (std::size_t(steps) * stages + np));
  }
  std::vector<int> group_of_collective;  // program position of rank 0 → group id
  int next_group = 0;
  // Every rank runs the same program and copy lane: the loop body reads `rank` only for op.rank,
  // and the ids it makes are rank 0's plus rank·K (K ops per rank; plan.add is a function of the
  // op and its id alone). So rank 0 is built and the others are its ops shifted (below), op for
  // op the plan the loop over every rank builds (set_plan_builder_exhaustive; tests/test_fast_paths.cpp).
  const int built_ranks = plan_builder_exhaustive ? ranks : std::min(ranks, 1);
  for (int rank = 0; rank < built_ranks; ++rank) {
    std::vector<int> program_op(std::size_t(steps) * n, -1);
    std::vector<int> piece_op(np, -1);
    std::vector<double> free_at(std::size_t(steps) * n, 0.0);  // bytes freed by each program op
    for (std::size_t j = 0; j < np; ++j) free_at[last_reader[j]] += pieces[j].bytes;
    // FSDP: the gathered shards of a block are freed by its last compute stage.
    {
      std::vector<int> last_compute_of_block(cost.blocks.size(), -1);
      for (int p = 0; p < n; ++p)
        if (!layout.at(p).collective) last_compute_of_block[layout.at(p).block] = p;
      for (int s = 0; s < steps; ++s)
        for (int p = 0; p < n; ++p) {
          const ProgramLayout::Position& pos = layout.at(p);
          const double gathered = cost.blocks[pos.block].stages[pos.stage].gather_alloc_bytes;
          if (pos.collective && gathered > 0)
            free_at[std::size_t(s) * n + last_compute_of_block[pos.block]] += gathered;
        }
      }
    int last_compute = -1, last_h2d = -1, last_comm = -1, pending_collective = -1;
    // Collectives that gate a later compute op than the next (ring_kv: the attention overlaps it):
    // (op id, compute ops still to issue before the gated one).
    std::vector<std::pair<int, int>> deferred_collectives;
    // Last compute op of the previous block and of the one before it (FSDP keeps at most two
    // blocks gathered: the all-gather of block b waits for block b−2's last compute, as PyTorch
    // FSDP's limit_all_gathers does).
    int current_block = -1, last_compute_block_minus_1 = -1, last_compute_block_minus_2 = -1;
    std::size_t next_piece = 0;
    int collective_index = 0;
    NameBuffer name;  // the name of the op being made
    // A program op's data deps, gathered here and copied into the op at their final size (one
    // allocation per op instead of the vector's growth steps); reused across ops.
    std::vector<int> waits;

    // Issues, in lane order, every piece whose dependencies are all in the plan (up to position g).
    auto issue_ready = [&](int g) {
      while (next_piece < np && ready_position[next_piece] <= g) {
        const std::size_t j = next_piece++;
        const CopyPiece& c = pieces[j];
        PlanOp op;
        op.kind = OpKind::h2d;
        op.lane = Lane::h2d;
        op.rank = rank;
        op.step = c.step;
        op.block = c.block;
        op.chunk = c.chunk;
        op.slot = int(j % info.slot_count);
        op.bytes = c.bytes;
        op.src_offset_bytes = c.offset_bytes;
        op.alloc_bytes = c.bytes;
        op.rate_cap_bytes_per_s = c.rate_cap_bytes_per_s;
        if (op_names) {  // written only when kept: ~2 % of a sweep's instructions otherwise
          name.block_prefix(c.step, c.block);
          if (schedule.whole_block_names) {
            name.append("h2d");
          } else {
            name.append("h2d.c");
            name.append(c.chunk);
          }
          op.name.assign(name.text, name.size);
        }
        // Data deps, ascending without repeats: the slot's last reader and the op `after` names.
        int copy_waits[2];
        int ncopy_waits = 0;
        if (j >= std::size_t(info.slot_count)) copy_waits[ncopy_waits++] = program_op[last_reader[j - info.slot_count]];
        if (c.after_position >= 0) copy_waits[ncopy_waits++] = program_op[c.after_position];
        if (ncopy_waits == 2 && copy_waits[0] >= copy_waits[1]) {
          if (copy_waits[0] == copy_waits[1]) ncopy_waits = 1;
          else std::swap(copy_waits[0], copy_waits[1]);
        }
        op.data_deps.assign(copy_waits, copy_waits + ncopy_waits);  // one allocation each, at the final size
        if (last_h2d >= 0) {
          op.deps.reserve(1 + std::size_t(ncopy_waits));
          op.deps.push_back(last_h2d);
        }
        last_h2d = piece_op[j] = plan.add(std::move(op));
      }
    };

    issue_ready(-1);  // cold start: every piece that waits for nothing
    for (int s = 0; s < steps; ++s) {
      for (int p = 0; p < n; ++p) {
        const int g = s * n + p;
        const ProgramLayout::Position& pos = layout.at(p);
        const StageCost& stage = cost.blocks[pos.block].stages[pos.stage];
        if (pos.block != current_block) {
          current_block = pos.block;
          last_compute_block_minus_2 = last_compute_block_minus_1;
          last_compute_block_minus_1 = last_compute;
        }
        PlanOp op;
        op.rank = rank;
        op.step = s;
        op.block = pos.block;
        op.stage = pos.stage;
        // Its name (for messages: written when one is thrown, even where the op keeps none).
        auto op_name = [&] {
          name.block_prefix(s, pos.block);
          return std::string(name.text, name.size) + stage.name;
        };
        if (op_names) {
          name.block_prefix(s, pos.block);
          op.name.reserve(name.size + stage.name.size());
          op.name.assign(name.text, name.size);
          op.name += stage.name;
        }
        if (pos.collective) {
          op.kind = OpKind::collective;
          op.lane = Lane::comm;
          op.bytes = stage.all_to_all_buffer_bytes;
          op.alloc_bytes = stage.gather_alloc_bytes;  // FSDP: the other ranks' shards
          op.free_bytes = free_at[g];                 // FSDP: the copies of the shard it gathered
          if (rank == 0) group_of_collective.push_back(next_group++);
          op.collective_group = group_of_collective.at(collective_index++);
          waits.clear();
          if (last_compute >= 0 && stage.waits_for_compute) waits.push_back(last_compute);
          if (!stage.waits_for_compute && last_compute_block_minus_2 >= 0)
            waits.push_back(last_compute_block_minus_2);
          if (pos.hi_bytes > pos.lo_bytes)  // FSDP's all-gather reads the shard's copies
            for (std::size_t j : pieces_of[std::size_t(s) * cost.blocks.size() + pos.block]) {
              const CopyPiece& c = pieces[j];
              if (!(c.offset_bytes < pos.hi_bytes && c.offset_bytes + c.bytes > pos.lo_bytes)) continue;
              if (piece_op[j] < 0)
                throw std::logic_error("build_plan: " + op_name() + " reads a copy not yet issued (slot pool too small)");
              waits.push_back(piece_op[j]);
            }
          std::sort(waits.begin(), waits.end());
          waits.erase(std::unique(waits.begin(), waits.end()), waits.end());
          op.data_deps.assign(waits.begin(), waits.end());
          if (last_comm >= 0) {
            op.deps.reserve(1 + waits.size());
            op.deps.push_back(last_comm);
          }
          last_comm = program_op[g] = plan.add(std::move(op));
          if (stage.gates_compute <= 1) pending_collective = last_comm;
          else deferred_collectives.push_back({last_comm, stage.gates_compute - 1});
        } else {
          op.kind = OpKind::compute;
          op.lane = Lane::compute;
          op.flop = stage.flop;
          op.free_bytes = free_at[g];
          waits.clear();
          if (pending_collective >= 0) waits.push_back(pending_collective);
          for (auto it = deferred_collectives.begin(); it != deferred_collectives.end();) {
            if (it->second-- == 0) {
              waits.push_back(it->first);
              it = deferred_collectives.erase(it);
            } else {
              ++it;
            }
          }
          for (std::size_t j : pieces_of[std::size_t(s) * cost.blocks.size() + pos.block]) {
            const CopyPiece& c = pieces[j];
            if (!(c.offset_bytes < pos.hi_bytes && c.offset_bytes + c.bytes > pos.lo_bytes)) continue;
            if (piece_op[j] < 0)
              throw std::logic_error("build_plan: " + op_name() + " reads a copy not yet issued (slot pool too small)");
            waits.push_back(piece_op[j]);
          }
          op.data_deps.assign(waits.begin(), waits.end());
          if (last_compute >= 0) {
            op.deps.reserve(1 + waits.size());
            op.deps.push_back(last_compute);
          }
          last_compute = program_op[g] = plan.add(std::move(op));
          pending_collective = -1;
        }
        issue_ready(g);
      }
    }
    if (next_piece != np) throw std::logic_error("build_plan: copies left unissued");
  }
  if (built_ranks < ranks) {
    const std::size_t per_rank = plan.ops.size();
    plan.ops.reserve(std::size_t(ranks) * per_rank);  // no reallocation below: the copies read plan.ops[i]
    for (int rank = 1; rank < ranks; ++rank) {
      const int shift = rank * int(per_rank);
      for (std::size_t i = 0; i < per_rank; ++i) {
        PlanOp& op = plan.ops.emplace_back(plan.ops[i]);
        op.id += shift;
        op.rank = rank;
        for (int& d : op.deps) d += shift;
        for (int& d : op.data_deps) d += shift;
      }
    }
  }
  plan.info = std::move(info);
  return plan;
}

}  // namespace chunkflow
