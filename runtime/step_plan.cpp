#include "runtime/step_plan.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <boost/graph/topological_sort.hpp>
#include <iterator>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>

#include "model/fnv1a.hpp"

namespace chunkflow {

namespace {

/// Drops repeated ids of `xs`, keeping each first occurrence in place. A short list (≤ 16) is
/// scanned pairwise in place; a long one (an op of a 1 MiB-chunk plan reads hundreds of copies) is
/// first checked in a sorted copy, kept in a per-thread buffer so that no call allocates for it,
/// and rebuilt only when it has repeats: O(d log d) instead of the O(d²) scan, the same result.
void dedupe_in_place(OpIds& xs) {
  if (xs.size() < 2) return;
  if (xs.size() <= 16) {
    int* const x = xs.data();
    const std::size_t n = xs.size();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (std::find(x, x + kept, x[i]) == x + kept) x[kept++] = x[i];
    if (kept != n) xs.resize(kept);  // nearly always nothing to drop: no call into the container
    return;
  }
  if (std::adjacent_find(xs.begin(), xs.end(), std::greater_equal<int>()) == xs.end()) return;  // strictly ascending
  thread_local std::vector<int> sorted;
  sorted.assign(xs.begin(), xs.end());
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) return;  // no repeats
  OpIds kept;
  kept.reserve(xs.size());
  std::vector<bool> seen;
  const int lo = sorted.front();
  seen.assign(std::size_t(sorted.back() - lo) + 1, false);
  for (int x : xs)
    if (!seen[std::size_t(x - lo)]) seen[std::size_t(x - lo)] = true, kept.push_back(x);
  xs = std::move(kept);
}

}  // namespace

bool same_op_fields(const PlanOp& a, const PlanOp& b) {
  return a.kind == b.kind && a.lane == b.lane && a.step == b.step && a.block == b.block && a.stage == b.stage &&
         a.chunk == b.chunk && a.slot == b.slot && a.bytes == b.bytes && a.src_offset_bytes == b.src_offset_bytes &&
         a.collective_group == b.collective_group && a.alloc_bytes == b.alloc_bytes && a.free_bytes == b.free_bytes &&
         a.rate_cap_bytes_per_s == b.rate_cap_bytes_per_s;
}

std::string op_label(const PlanOp& op) {
  if (!op.name.empty()) return op.name;
  return "op " + std::to_string(op.id) + " (rank " + std::to_string(op.rank) + ", step " + std::to_string(op.step) +
         ", block " + std::to_string(op.block) + ")";
}

int StepPlan::add(PlanOp&& op) {
  const int v = static_cast<int>(ops.size());
  op.id = v;
  dedupe_in_place(op.data_deps);
  // deps = lane-order predecessors given at construction ∪ data_deps, first occurrences in order.
  // data_deps has no repeats now, so that is dedupe(lane) followed by the data deps not among the
  // lane predecessors (at most a few: scanned); a long lane list takes the general path.
  dedupe_in_place(op.deps);
  const std::size_t lane = op.deps.size();
  if (lane <= 16) {
    op.deps.reserve(lane + op.data_deps.size());
    for (int d : op.data_deps)
      if (std::find(op.deps.begin(), op.deps.begin() + std::ptrdiff_t(lane), d) == op.deps.begin() + std::ptrdiff_t(lane))
        op.deps.push_back(d);
  } else {
    op.deps.insert(op.deps.end(), op.data_deps.begin(), op.data_deps.end());
    dedupe_in_place(op.deps);
  }
  for (int d : op.deps) {
    if (d < 0 || d >= v) throw std::logic_error("StepPlan::add: " + op_label(op) + " depends on op " + std::to_string(d) + ", not added yet");
  }
  ops.push_back(std::move(op));
  return v;
}

void StepPlan::depend(int after, int before) {
  if (after < 0 || before < 0 || after >= int(ops.size()) || before >= int(ops.size()) || after == before)
    throw std::logic_error("StepPlan::depend: bad op ids " + std::to_string(after) + " <- " + std::to_string(before));
  auto& o = ops[after];
  if (std::find(o.data_deps.begin(), o.data_deps.end(), before) != o.data_deps.end()) return;
  o.data_deps.push_back(before);
  if (std::find(o.deps.begin(), o.deps.end(), before) == o.deps.end()) o.deps.push_back(before);
}

std::pair<double, double> stage_weight_range(const BlockCost& block, int s) {
  const StageCost& st = block.stages.at(s);
  // FSDP: the all-gather reads the whole shard; the linears read the gathered copy.
  if (st.stage.kind == BlockStage::Kind::all_to_all && st.collective == CollectiveKind::all_gather)
    return {0.0, block.weight_bytes};
  if (st.stage.kind != BlockStage::Kind::linear || block.weights_gathered) return {0.0, 0.0};
  double hi = st.weight_offset_bytes + st.weight_bytes;
  bool last = true;
  for (std::size_t t = s + 1; t < block.stages.size(); ++t)
    if (block.stages[t].stage.kind == BlockStage::Kind::linear) last = false;
  if (last) hi = std::max(hi, block.weight_bytes);
  return {st.weight_offset_bytes, hi};
}

StepPlan::Graph StepPlan::dependency_graph() const {
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  for (const auto& op : ops)
    for (int d : op.deps) edges.emplace_back(std::size_t(d), std::size_t(op.id));
  return Graph(boost::edges_are_unsorted_multi_pass, edges.begin(), edges.end(), ops.size());
}

const StageCost& StepPlan::stage_of(const PlanOp& op) const {
  if (op.kind == OpKind::h2d || op.block < 0 || op.stage < 0 || op.block >= int(cost.blocks.size()) ||
      op.stage >= int(cost.blocks[op.block].stages.size()))
    throw std::logic_error("StepPlan::stage_of: " + op_label(op) + " runs no stage");
  return cost.blocks[op.block].stages[op.stage];
}

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::logic_error("invalid StepPlan: " + what); }

/// Membership in one op's dependency list: a scan for a short list, a binary search in a sorted
/// copy for a long one (a compute op of a small-chunk plan reads hundreds of copies, and validate
/// asks about each of them: O(d log d) per op instead of O(d²)). Same answers either way.
class DepSet {
 public:
  void assign(const OpIds& ids) {
    ids_ = &ids;
    long_ = ids.size() > kScan;
    in_place_ = long_ && std::is_sorted(ids.begin(), ids.end());  // already ascending: no copy
    if (long_ && !in_place_) {
      sorted_.assign(ids.begin(), ids.end());
      std::sort(sorted_.begin(), sorted_.end());
    }
  }
  bool contains(int x) const {
    if (in_place_) return std::binary_search(ids_->begin(), ids_->end(), x);
    if (long_) return std::binary_search(sorted_.begin(), sorted_.end(), x);
    return std::find(ids_->begin(), ids_->end(), x) != ids_->end();
  }

 private:
  static constexpr std::size_t kScan = 16;
  const OpIds* ids_ = nullptr;
  bool long_ = false;
  bool in_place_ = false;
  std::vector<int> sorted_;
};

/// K when the plan's ops are plan.info.ranks ≥ 2 copies of its first K ops, as the plan builder
/// makes them: op k (k < K) on rank 0, and op j·K + k equal to op k in every field (same_op_fields)
/// but its id (j·K + k), its rank (j) and its deps and data deps (op k's, each + j·K); else 0.
/// O(ops + deps).
int rank_copies_of_prefix(const StepPlan& plan) {
  const int ranks = plan.info.ranks;
  const std::size_t n = plan.ops.size();
  if (ranks < 2 || n == 0 || n % std::size_t(ranks) != 0) return 0;
  const std::size_t k_ops = n / std::size_t(ranks);
  for (std::size_t k = 0; k < k_ops; ++k)
    if (plan.ops[k].rank != 0) return 0;
  for (int j = 1; j < ranks; ++j) {
    const int shift = j * int(k_ops);
    for (std::size_t k = 0; k < k_ops; ++k) {
      const PlanOp& a = plan.ops[k];
      const PlanOp& b = plan.ops[std::size_t(shift) + k];
      if (b.id != shift + int(k) || b.rank != j || !same_op_fields(a, b) || b.deps.size() != a.deps.size() ||
          b.data_deps.size() != a.data_deps.size())
        return 0;
      for (std::size_t d = 0; d < a.deps.size(); ++d)
        if (b.deps[d] != a.deps[d] + shift) return 0;
      for (std::size_t d = 0; d < a.data_deps.size(); ++d)
        if (b.data_deps[d] != a.data_deps[d] + shift) return 0;
    }
  }
  return int(k_ops);
}

/// The checks of validate() on the plan's first n ops as a plan of `executed_ranks` ranks (the
/// whole plan: n = its op count, plan.info.ranks). Throws what validate() throws. Returns false,
/// having judged nothing, when n is not the whole plan and some op depends on a later one (the
/// cycle search reads the whole plan's graph).
bool validate_ops(const StepPlan& plan, int n, int executed_ranks) {
  // The checks run in the order the header lists them, and the first violation found is reported
  // (the same one a check-by-check run over the ops would report). To read the ops (a 1 MiB-chunk
  // plan holds ~10^5 of them, tens of MB) three times instead of once per check: the first pass
  // also gathers what later checks read (chunk index, memory balance, last readers), the second
  // checks lane order and files the chunks, and the third checks weights, slots and collective
  // groups, keeping the first slot and group violation until the checks before them have passed.
  const std::span<const PlanOp> ops(plan.ops.data(), std::size_t(n));
  DepSet in_list;  // reused: one op's deps or data_deps at a time

  // Flat tables for ranks [0, executed_ranks) (maps for any other rank: a broken plan is still
  // judged, by the same rules). The h2d ops of each (rank, step, block) get a dense index:
  // (rank · steps + step) · blocks + block for steps [0, plan.info.steps) and blocks of plan.cost
  // (when that table has at most 2^24 entries), numbers past the table, from a map, for any other.
  const int table_ranks = std::clamp(executed_ranks, 0, 1 << 16);
  const std::size_t table_steps = std::size_t(std::clamp(plan.info.steps, 0, 1 << 20));
  const std::size_t table_blocks = plan.cost.blocks.size();
  std::size_t table_keys = std::size_t(table_ranks) * table_steps * table_blocks;
  if (table_steps == 0 || table_blocks == 0 || table_keys / table_steps / table_blocks != std::size_t(table_ranks) ||
      table_keys > (std::size_t(1) << 24))
    table_keys = 0;
  std::map<std::tuple<int, int, int>, std::size_t> other_keys;  // keys outside the table → index
  auto key_in_table = [&](const PlanOp& op) {
    return table_keys > 0 && op.rank >= 0 && op.rank < table_ranks && op.step >= 0 && std::size_t(op.step) < table_steps &&
           op.block >= 0 && std::size_t(op.block) < table_blocks;
  };
  auto table_index = [&](const PlanOp& op) {
    return (std::size_t(op.rank) * table_steps + std::size_t(op.step)) * table_blocks + std::size_t(op.block);
  };
  auto holds_bytes = [](const PlanOp& op) { return op.kind == OpKind::h2d && std::isfinite(op.src_offset_bytes); };
  std::vector<int> chunk_begin(table_keys + 1, 0);  // per index, the count of its chunks at [k + 1] (then offsets)
  std::vector<double> longest_bytes(table_keys, 0.0);
  std::vector<double> balance_table(std::size_t(table_ranks), 0.0);  // Σ alloc − free per rank
  std::map<int, double> balance;
  // Readers of each chunk are compute ops of its rank's FIFO compute lane (or, with FSDP, the one
  // all-gather of its block on the comm lane), so the last one in issue order is the last to finish.
  std::vector<int> last_reader(n, -1);

  // Pass 1: ids and dependency lists; gathers the rest.
  bool deps_precede = true;  // every op depends on earlier ops only
  for (const auto& op : ops) {
    if (op.id < 0 || op.id >= n || &plan.ops[op.id] != &op) fail("op ids are not their indices");
    for (int d : op.deps) {
      if (d < 0 || d >= n || d == op.id) fail(op_label(op) + " depends on a missing op " + std::to_string(d));
      deps_precede = deps_precede && d < op.id;
    }
    // StepPlan::add lays deps out as the lane predecessors followed by the data deps: when deps
    // ends with data_deps, every data dep is in deps; otherwise each one is looked up.
    if (!op.data_deps.empty() &&
        !(op.deps.size() >= op.data_deps.size() &&
          std::equal(op.data_deps.begin(), op.data_deps.end(), op.deps.end() - std::ptrdiff_t(op.data_deps.size())))) {
      in_list.assign(op.deps);
      for (int d : op.data_deps)
        if (!in_list.contains(d)) fail(op_label(op) + ": data dep not in deps");
    }
    // Its data deps are ops of the plan now.
    if (op.kind == OpKind::compute || op.kind == OpKind::collective)
      for (int d : op.data_deps)
        if (plan.ops[d].kind == OpKind::h2d) last_reader[d] = std::max(last_reader[d], op.id);
    if (op.rank >= 0 && op.rank < table_ranks) balance_table[std::size_t(op.rank)] += op.alloc_bytes - op.free_bytes;
    else balance[op.rank] += op.alloc_bytes - op.free_bytes;
    if (holds_bytes(op)) {  // else it overlaps nothing
      std::size_t k;
      if (key_in_table(op)) {
        k = table_index(op);
      } else {
        const auto [it, added] = other_keys.try_emplace({op.rank, op.step, op.block}, table_keys + other_keys.size());
        k = it->second;
        if (added) chunk_begin.push_back(0), longest_bytes.push_back(0.0);
      }
      ++chunk_begin[k + 1];
      longest_bytes[k] = std::max(longest_bytes[k], op.bytes);
    }
  }
  const std::size_t keys = table_keys + other_keys.size();
  auto index_of = [&](const PlanOp& op) -> std::size_t {  // keys when the op's block holds no chunk
    if (key_in_table(op)) return table_index(op);
    auto it = other_keys.find({op.rank, op.step, op.block});
    return it == other_keys.end() ? keys : it->second;
  };

  // Acyclic. When every op depends on earlier ops only (ids ascending along every edge, as
  // StepPlan::add makes them), the id order is a topological order and there is no cycle;
  // otherwise a depth-first search decides (boost throws not_a_dag).
  if (!deps_precede) {
    if (std::size_t(n) != plan.ops.size()) return false;
    std::vector<std::size_t> order;
    StepPlan::Graph graph = plan.dependency_graph();
    try {
      boost::topological_sort(graph, std::back_inserter(order));
    } catch (const boost::not_a_dag&) {
      fail("the dependency graph has a cycle");
    }
  }

  // Pass 2: lane order: each op depends on the previous op of its (rank, lane), and ops are issued
  // in a topological order within a rank (the harness enqueues them in that order). Files each
  // chunk under its index: by_offset[chunk_begin[k], chunk_begin[k + 1]) in id order.
  std::vector<int> last_on_lane_table(std::size_t(table_ranks) * 3, -1);  // last op per (rank, lane)
  std::map<std::pair<int, Lane>, int> last_on_lane;
  for (std::size_t k = 0; k < keys; ++k) chunk_begin[k + 1] += chunk_begin[k];
  std::vector<int> fill(chunk_begin.begin(), chunk_begin.end() - 1);
  std::vector<int> by_offset(static_cast<std::size_t>(chunk_begin[keys]), 0);
  for (const auto& op : ops) {
    const int lane = int(op.lane);
    const bool in_table = op.rank >= 0 && op.rank < table_ranks && lane >= 0 && lane < 3;
    int* last = nullptr;
    if (in_table) {
      last = &last_on_lane_table[std::size_t(op.rank) * 3 + std::size_t(lane)];
    } else {
      auto it = last_on_lane.try_emplace(std::make_pair(op.rank, op.lane), -1).first;
      last = &it->second;
    }
    if (*last >= 0 && std::find(op.deps.begin(), op.deps.end(), *last) == op.deps.end())
      fail(op_label(op) + " does not follow " + op_label(plan.ops[*last]) + " on its lane");
    *last = op.id;
    if (!deps_precede)  // else no dependency comes later in issue order
      for (int d : op.deps)
        if (d > op.id && plan.ops[d].rank == op.rank) fail(op_label(op) + " is issued before its dependency " + op_label(plan.ops[d]));
    if (holds_bytes(op)) by_offset[std::size_t(fill[index_of(op)]++)] = op.id;
  }

  // Weights: every compute op of a linear depends on every chunk that holds part of its weights.
  // Chunk coverage is [src_offset, src_offset + bytes) of the block's layout; a linear covers
  // [weight_offset, weight_offset + weight_bytes); the last linear of a block also covers the
  // block's tail (non-linear parameters): stage_weight_range().
  // The h2d ops of each (rank, step, block) sorted by source offset, with the longest one's bytes:
  // the chunks that overlap [lo, hi) all start in [lo − longest, hi), found by binary search
  // (O(log c + overlapping) per compute op instead of O(c): small-chunk plans hold hundreds per block).
  auto by_source_offset = [&](int x, int y) { return plan.ops[x].src_offset_bytes < plan.ops[y].src_offset_bytes; };
  for (std::size_t k = 0; k < keys; ++k) {
    const auto first = by_offset.begin() + chunk_begin[k], last = by_offset.begin() + chunk_begin[k + 1];
    if (!std::is_sorted(first, last, by_source_offset)) std::stable_sort(first, last, by_source_offset);
  }
  // Slots: a slot is refilled only after the op that frees its previous chunk. (rank, slot) → h2d
  // op now holding it: a flat table for ranks [0, executed_ranks) (slots are checked to lie in
  // [0, slot_count) first), a map for other ranks.
  const std::size_t table_slots = std::size_t(std::clamp(plan.info.slot_count, 0, 1 << 20));
  std::vector<int> slot_holder_table;
  if (table_slots > 0 && std::size_t(table_ranks) * table_slots <= (std::size_t(1) << 24))
    slot_holder_table.assign(std::size_t(table_ranks) * table_slots, -1);
  std::map<std::pair<int, int>, int> slot_holder;
  std::string slot_violation, group_violation;  // the first of each, reported after the checks before them
  // Collective group → its ranks: a bit mask per group id where every collective's group id and
  // rank fit one (ids in [0, 4·ops], ranks in [0, 64): what the builder makes), else a map of sets.
  int group_end = 0;
  bool group_masks = true;
  for (const auto& op : ops)
    if (op.kind == OpKind::collective) {
      if (op.collective_group > int(std::min<std::size_t>(4 * ops.size(), 1 << 24)) || op.rank < 0 || op.rank >= 64)
        group_masks = false;
      group_end = std::max(group_end, op.collective_group + 1);
    }
  std::vector<uint64_t> group_rank_mask(group_masks ? std::size_t(group_end) : 0, 0);
  std::map<int, std::set<int>> groups;
  auto join_group = [&](const PlanOp& op) {  // false when the op's rank is in its group already
    if (!group_masks) return groups[op.collective_group].insert(op.rank).second;
    uint64_t& mask = group_rank_mask[std::size_t(op.collective_group)];
    const uint64_t bit = uint64_t(1) << op.rank;
    if (mask & bit) return false;
    mask |= bit;
    return true;
  };
  // Pass 3: weights, slots and collective groups.
  for (const auto& op : ops) {
    if (op.kind != OpKind::h2d && op.stage >= 0) {
      const std::size_t k = index_of(op);
      if (k < keys && chunk_begin[k] != chunk_begin[k + 1]) {
        const BlockCost& block = plan.cost.blocks[op.block];
        const auto [lo, hi] = stage_weight_range(block, op.stage);  // {0, 0}: reads no chunk
        if (hi > lo) {
          in_list.assign(op.data_deps);
          const auto chunks_end = by_offset.begin() + chunk_begin[k + 1];
          const double from = lo - longest_bytes[k];
          auto c = std::lower_bound(by_offset.begin() + chunk_begin[k], chunks_end, from,
                                    [&](int id, double v) { return plan.ops[id].src_offset_bytes < v; });
          int missing = -1;  // the lowest id among the overlapping chunks the op does not wait for
          for (; c != chunks_end && plan.ops[*c].src_offset_bytes < hi; ++c) {
            const PlanOp& ch = plan.ops[*c];
            if (ch.src_offset_bytes + ch.bytes > lo && !in_list.contains(*c) && (missing < 0 || *c < missing)) missing = *c;
          }
          if (missing >= 0)
            fail(op_label(op) + " does not wait for " + op_label(plan.ops[missing]) + ", which holds part of its weights");
        }
      }
    }
    if (op.kind == OpKind::h2d && slot_violation.empty()) {
      if (op.slot < 0 || op.slot >= plan.info.slot_count) {
        slot_violation = op_label(op) + " has no valid slot";
      } else if (op.bytes > plan.info.slot_bytes + 0.5) {
        slot_violation = op_label(op) + " is larger than a slot";
      } else if (last_reader[op.id] < 0) {
        slot_violation = op_label(op) + " is read by no compute op";
      } else {
        int* holder = nullptr;
        if (!slot_holder_table.empty() && op.rank >= 0 && op.rank < table_ranks) {
          holder = &slot_holder_table[std::size_t(op.rank) * table_slots + std::size_t(op.slot)];
        } else {
          holder = &slot_holder.try_emplace(std::make_pair(op.rank, op.slot), -1).first->second;
        }
        const int reader = *holder >= 0 ? last_reader[*holder] : -1;
        if (*holder >= 0 && std::find(op.data_deps.begin(), op.data_deps.end(), reader) == op.data_deps.end())
          slot_violation = op_label(op) + " refills slot " + std::to_string(op.slot) + " without waiting for " +
                           op_label(plan.ops[reader]) + ", the last reader of " + op_label(plan.ops[*holder]);
        *holder = op.id;
      }
    }
    if (op.kind == OpKind::collective && group_violation.empty()) {  // one op per executed rank
      if (op.collective_group < 0) group_violation = op_label(op) + " belongs to no collective group";
      else if (!join_group(op)) group_violation = op_label(op) + ": two ops of one rank in a group";
    }
  }

  // Memory balances per rank, judged in rank order.
  auto check_balance = [](int rank, double b) {
    if (std::abs(b) > 1.0) fail("memory does not balance on rank " + std::to_string(rank) + " (" + std::to_string(b) + " bytes)");
  };
  for (auto [rank, b] : balance)
    if (rank < 0) check_balance(rank, b);
  for (int rank = 0; rank < table_ranks; ++rank) check_balance(rank, balance_table[std::size_t(rank)]);
  for (auto [rank, b] : balance)
    if (rank >= table_ranks) check_balance(rank, b);
  if (!slot_violation.empty()) fail(slot_violation);
  if (!group_violation.empty()) fail(group_violation);
  // In ascending group id, over whichever table was kept.
  for (int g = 0; g < int(group_rank_mask.size()); ++g)
    if (group_rank_mask[std::size_t(g)] != 0 && std::popcount(group_rank_mask[std::size_t(g)]) != executed_ranks)
      fail("collective group " + std::to_string(g) + " misses ranks");
  for (const auto& [g, ranks] : groups)
    if (int(ranks.size()) != executed_ranks)
      fail("collective group " + std::to_string(g) + " misses ranks");
  return true;
}

}  // namespace

namespace {
thread_local bool validate_exhaustive = false;  // set_validate_exhaustive
}  // namespace

void set_validate_exhaustive(bool on) { validate_exhaustive = on; }

int validate(const StepPlan& plan) {
  // A plan whose ranks run copies of rank 0's ops (rank_copies_of_prefix) is valid when rank 0's
  // ops are, as a one-rank plan: every check but the collective groups' is per rank, and reads
  // rank j's ops as it reads rank 0's (ids, deps and the tables keyed by rank shifted alike); and
  // a group with exactly one op on rank 0 has exactly one on every rank (the groups of rank j are
  // rank 0's). Where rank 0's ops fail (or cannot be judged alone), the whole plan is checked,
  // so a violation is reported as the check over every op reports it.
  const int k_ops = validate_exhaustive ? 0 : rank_copies_of_prefix(plan);
  if (k_ops > 0) {
    try {
      if (validate_ops(plan, k_ops, 1)) return k_ops;
    } catch (const std::exception&) {
    }
  }
  validate_ops(plan, int(plan.ops.size()), plan.info.ranks);
  return k_ops;  // the copy property holds whichever way the ops were judged
}

std::string plan_fnv1a64(const StepPlan& plan) {
  Fnv1a64 h;
  auto integer = [&](int64_t v) { h.add(&v, sizeof v); };
  auto bytes = [&](double v) { integer(std::llround(v)); };  // byte counts are whole numbers
  auto rate = [&](double v) {
    char text[32];
    const int n = std::snprintf(text, sizeof text, "%.9g", v == 0 ? 0.0 : v);  // -0 as 0
    h.add(text, std::size_t(n) + 1);
  };
  h.add(plan.workload.model.data(), plan.workload.model.size() + 1);
  integer(plan.info.ranks);
  integer(plan.info.steps);
  integer(plan.info.slot_count);
  bytes(plan.info.slot_bytes);
  bytes(plan.cost.non_block_weight_bytes);
  // The work the ops reference (hw/lowering.cpp sizes its kernels and weight pieces from it): per
  // block its bytes and whether FSDP gathers it; per stage its kind, shapes and weight range.
  integer(int64_t(plan.cost.blocks.size()));
  for (const BlockCost& b : plan.cost.blocks) {
    bytes(b.weight_bytes);
    integer(b.weights_gathered ? 1 : 0);
    integer(int64_t(b.stages.size()));
    for (const StageCost& st : b.stages)
      for (int64_t v : {int64_t(st.stage.kind), int64_t(st.stage.linear_index), st.gemm.m, st.gemm.k, st.gemm.n,
                        st.attention.batch, st.attention.heads, st.attention.q_tokens, st.attention.kv_tokens,
                        st.attention.head_dim, int64_t(st.collective), int64_t(st.collective_ranks), int64_t(st.dtype_bytes),
                        int64_t(std::llround(st.weight_offset_bytes)), int64_t(std::llround(st.weight_bytes)),
                        int64_t(std::llround(st.all_to_all_buffer_bytes))})
        integer(v);
  }
  integer(int64_t(plan.ops.size()));
  for (const PlanOp& op : plan.ops) {
    for (int64_t v : {int64_t(op.id), int64_t(op.kind), int64_t(op.lane), int64_t(op.rank), int64_t(op.step),
                      int64_t(op.block), int64_t(op.stage), int64_t(op.chunk), int64_t(op.slot),
                      int64_t(op.collective_group)})
      integer(v);
    for (double v : {op.bytes, op.src_offset_bytes, op.alloc_bytes, op.free_bytes}) bytes(v);
    rate(op.rate_cap_bytes_per_s);
    for (const OpIds* ids : {&op.deps, &op.data_deps}) {
      integer(int64_t(ids->size()));
      for (int d : *ids) integer(d);
    }
  }
  return h.hex();
}

}  // namespace chunkflow
