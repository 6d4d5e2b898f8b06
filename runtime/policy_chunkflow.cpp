// chunkflow: chunked prefetch co-scheduled with the collectives, planned from a closed-loop
// estimate of its own timeline (shared/DESIGN.md "Policies"; code-review-3fa5e28.md §2.3).
//
// What the planner decides, per configuration (chunk size C, resident fraction R or auto, lookahead
// or memory budget):
//  1. Residency placement: a tensor-aligned prefix of every block, fraction R of each (the bytes
//     each block reads first stay, so demand on the link is smooth); whole blocks strided (SGLang's
//     placement, so streamed blocks get the resident blocks' compute to hide in); or a balanced
//     prefix (each block streams bytes in proportion to its compute and collective time, so blocks
//     with more bytes per second of compute keep more resident). All three are estimated; the plan
//     keeps the fastest (ties: the earlier in that order).
//  2. Chunks: the offloaded bytes of a block in layout (= first use) order, packed into chunks of at
//     most C bytes that never straddle a tensor edge unless a tensor is larger than C (then it is cut
//     into equal pieces), so a linear waits only for its own chunks.
//  3. The copy lane, chunk by chunk in deadline order, work-conserving within the slots the memory
//     budget (or L+1 blocks' worth) allows, simulated against the program with stalls included
//     (closed loop): a chunk that would run into the next all-to-all window is split at the window's
//     estimated edge; inside a window the copy yields (waits for the collective's end), shares
//     (runs rate-capped) or ignores it (runs uncapped). Six candidates, the estimate picks: one
//     treatment for every window (share at the cap that leaves the all-to-all its rate, yield, share
//     at the cap that slows it ≤ 10 %, ignore), or per window: each copy that meets a window yields
//     when the delay still lands it, and every copy behind it on the lane until an idle gap of the
//     lane absorbs the delay, before its first reader's predicted start; else shares at the first
//     cap when that delay is affordable; else ignores the window (its reader would stall); or per
//     window sharing: where the best single treatment shares at the higher cap or ignores the
//     windows, each window is shared at the first cap (if that plan ignores them, else at the
//     higher cap) while the lane's slack affords it, counting the delay taken so far and every
//     later copy's slack, and treated as that plan treats it otherwise (FSDP's all-gathers, whose
//     lane runs tens of ms ahead). Both per-window candidates predict (reader starts, the lane's
//     slack and gaps) from the best single-treatment estimate.
//     The window edges come from the previous pass of the estimate (two passes; the first from the
//     stall-free program); copies still moving when a window's real times become known are re-timed
//     (lazily, when their times are next read, with the same result: Planner::run).
//  4. R = auto: the smallest fraction tried (a 0.1 grid, and with a budget the fractions that leave
//     ½, 1, 2 or 3 blocks' worth of buffers) whose estimated step time is within 2 % of the critical
//     path (the program with no copies: compute and uncontended collectives, overlapped where the
//     plan overlaps them, as ring attention's K/V pass and FSDP's all-gathers; the bound no plan
//     beats); failing that, the fastest, after trying the midpoints between it and its neighbours
//     in that list (on FLUX 1024² with FSDP at a 3.59 GiB budget the list holds 0, 0.1, 0.197, …;
//     0.148 runs at the no-offload step, 0.1 and 0.197 at 1.03 and 1.07× it).
// With FSDP the budget also pays for the gathered shards of two consecutive blocks (the most the
// plan holds at once), besides the resident weights, the copy slots and the activations.
// The estimate uses model/link_model.hpp (WorkloadLinkModel: every collective kind on its own groups
// and routes, every rank's copies beside it, so GPUs that share a PCIe switch uplink split it) for
// the rates copies and a collective get together, and model/analytical.hpp for compute, stretched
// as the executor stretches it on a calibrated node (× (1 + compute_slowdown_h2d) when a copy is in
// flight at a compute op's start, + compute_slowdown_collective when a collective is); the
// simulator then executes the plan it produces.
// A planner is made per (workload, node, simulated steps, chunk size) and kept per thread with the
// residencies and estimates it computed (cached_planner below): a sweep's configurations around one
// chunk size differ in fraction, budget and lookahead, and "auto" tries the fractions the explicit
// configurations did; placements or fractions that cut the same chunks share their estimates
// (Planner::placed_at). Plans are identical with or without it (tests/test_policy.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "model/link_model.hpp"
#include "runtime/plan_builder.hpp"
#include "runtime/policy.hpp"

namespace chunkflow {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// Split points and chunk edges are multiples of this many bytes (DMA-friendly, whole elements).
constexpr double kAlignBytes = 256;
/// Relative slowdown of an all-to-all that the "share" mode with the higher cap accepts.
constexpr double kShareTolerance = 0.10;
/// A capped copy whose rest exceeds its window by less than this goes whole (a piece costs a latency).
constexpr double kOverrunBytes = 512 * 1024;
/// per_window: how many copies behind a delayed one its slack test follows before it gives up (a
/// delay not absorbed by an idle gap of the lane within them counts as unaffordable).
constexpr std::size_t kSlackWalkChunks = 256;
/// "auto" residency accepts a plan whose estimate is within this factor of the critical path.
constexpr double kAutoWithinBound = 1.02;
/// "auto" skips a placement whose copy-volume lower bound exceeds that bound by more than this
/// (relative; Planner::plan_fraction): ten times the margin by which a placement must beat another.
constexpr double kAutoSkipMargin = 1e-5;

/// How copies treat a collective window: one treatment for every window of a plan (the first four),
/// or per window, by the copy's slack (Planner::run): per_window: each copy that meets a window
/// yields, shares at the share_free cap or ignores it; per_window_share: each window is shared at
/// the share_free cap (or, where the plan it predicts from ignores windows, at the share_tolerant
/// cap) while the lane's slack affords the delay, else treated as that plan treats it.
enum class WindowMode { share_free, yield, share_tolerant, ignore, per_window, per_window_share };
constexpr int kWindowModes = 6;

struct Chunk {
  int step = 0, block = 0;
  double offset_bytes = 0, bytes = 0;
  int first_reader = 0, last_reader = 0;  ///< global program positions
  bool operator==(const Chunk&) const = default;
};

struct Residency {
  std::string name;                  ///< "prefix", "strided-blocks" or "balanced"
  std::vector<double> resident_lo;   ///< per block: bytes [0, lo) resident (prefix) ...
  std::vector<bool> whole;           ///< ... or the whole block resident (strided)
  double resident_block_bytes = 0;
};

struct Estimate {
  bool feasible = false;
  double step_time_s = kInf;
  std::vector<CopyPiece> pieces;
  std::vector<double> window_start_s, window_end_s;  ///< per collective (global order)
  // A prediction's (Planner::prediction_of; never in a kept estimate):
  std::vector<double> program_start_s;  ///< per global position
  std::vector<double> chunk_slack_s;    ///< per chunk: its first reader's start − its landing
  std::vector<double> chunk_gap_s;      ///< per chunk: the lane's idle time before its first piece
  std::vector<double> chunk_min_slack_s;  ///< per chunk q: min of chunk_slack_s over chunks q, q+1, …
  WindowMode mode = WindowMode::yield;   ///< the treatment of the estimate predicted from
  int yield = 0, share = 0, ignore = 0;              ///< windows of the last step by what ran in them
};

/// This thread's planner cache counters (chunkflow_planner_cache_stats).
thread_local PlannerCacheStats planner_cache_stats;
/// Set (set_chunkflow_planner_exhaustive, for tests): this thread's planners take no shortcut.
thread_local bool planner_exhaustive = false;

class Planner {
 public:
  /// Everything that depends on the workload, the node, the simulated steps and the chunk size
  /// alone: costs, program layout, durations, the link model's rates per window mode and the
  /// stall-free program. The configuration's fraction, budget and lookahead come with plan().
  Planner(const Workload& w, const NodeSpec& node, int steps, double chunk_bytes)
      : w_(w), node_(node), chunk_bytes_(chunk_bytes), cost_(forward_cost(w_)), layout_(cost_),
        n_(layout_.positions_per_step()), steps_(steps), link_(node_, w_) {
    const int G = steps_ * n_;
    duration_s_.resize(n_);
    block_time_s_.assign(cost_.blocks.size(), 0.0);
    for (int p = 0; p < n_; ++p) {
      const auto& pos = layout_.at(p);
      const StageCost& st = cost_.blocks[pos.block].stages[pos.stage];
      if (pos.collective) {
        const Collective c = collective_of(st);
        duration_s_[p] = alone_s(c);
        if (std::find(collectives_.begin(), collectives_.end(), c) == collectives_.end()) collectives_.push_back(c);
      } else {
        duration_s_[p] = stage_compute_time_s(st, node_);
      }
      block_time_s_[pos.block] += duration_s_[p];
    }
    // run_pass's stop: per position, the compute durations after it within the step; and the step's
    // last compute position.
    rest_compute_s_.assign(std::size_t(n_), 0.0);
    for (int p = n_ - 1; p > 0; --p)
      rest_compute_s_[std::size_t(p - 1)] = rest_compute_s_[std::size_t(p)] + (layout_.at(p).collective ? 0.0 : duration_s_[p]);
    for (int p = 0; p < n_; ++p)
      if (!layout_.at(p).collective) last_compute_position_ = p;
    for (int g = 0; g < G; ++g)
      if (layout_.at(g % n_).collective) collective_g_.push_back(g);
    // FSDP: the other ranks' shards a block's all-gather allocates stay until the block's last
    // compute op, and the all-gather of block b waits for block b−2's last compute
    // (runtime/plan_builder.cpp), so at most two consecutive blocks (across the step's wrap-around
    // too) hold them at once: the budget pays for the largest such pair.
    std::vector<double> gathered(cost_.blocks.size(), 0.0);
    for (std::size_t b = 0; b < cost_.blocks.size(); ++b)
      for (const StageCost& st : cost_.blocks[b].stages) gathered[b] += st.gather_alloc_bytes;
    for (std::size_t b = 0; b < gathered.size(); ++b)
      gathered_bytes_ = std::max(gathered_bytes_, gathered[b] + gathered[(b + 1) % gathered.size()]);
    copy_alone_bytes_per_s_ = link_.copy_alone_bytes_per_s();
    init_mode_rates();
    copy_fastest_bytes_per_s_ = copy_alone_bytes_per_s_;
    for (const ModeRates& r : mode_rates_)
      for (const Shares& sh : r.shares)
        copy_fastest_bytes_per_s_ = std::max({copy_fastest_bytes_per_s_, sh.capped.copy_bytes_per_s, sh.uncapped.copy_bytes_per_s});
    // volume_bound_s's: every position of steps 0..steps−2 at its longest (a compute op stretched
    // by both slowdowns, as the estimate may stretch it on a calibrated node; × 1 elsewhere).
    const double longest_compute = 1.0 + node_.compute_slowdown_h2d + node_.compute_slowdown_collective;
    for (int g = 0, c = 0; g < (steps_ - 1) * n_; ++g) {
      if (!layout_.at(g % n_).collective) {
        before_last_step_max_s_ += duration_s_[g % n_] * longest_compute;
        continue;
      }
      double longest = 0;
      for (const ModeRates& r : mode_rates_) {
        const Shares& sh = r.shares[std::size_t(c)];
        longest = std::max({longest, sh.alone_s, sh.uncapped.collective_time_s, sh.capped.collective_time_s});
      }
      before_last_step_max_s_ += longest;
      ++c;
    }
    stall_free_ = run({}, readers_of({}), 0, WindowMode::yield, {}, {}, {});
    stall_free_.program_start_s = scratch_.start_s;  // per_window's prediction when nothing else is feasible
    critical_path_s_ = stall_free_.step_time_s;
  }

  double critical_path_s() const { return critical_path_s_; }

  /// A collective as the link model prices it: its kind and per-rank buffer, on its own groups and
  /// routes with every rank's copies beside it (model/link_model.hpp WorkloadLinkModel).
  struct Collective {
    CollectiveKind kind = CollectiveKind::all_to_all;
    double buffer_bytes = 0;
    bool operator==(const Collective&) const = default;
  };
  static Collective collective_of(const StageCost& st) { return {st.collective, st.all_to_all_buffer_bytes}; }

  /// The collective at global position g.
  Collective collective_at(int g) const {
    const auto& pos = layout_.at(g % n_);
    return collective_of(cost_.blocks[pos.block].stages[pos.stage]);
  }

  /// Rates of collective c with every rank's copies capped at `cap` (0: none; +∞: uncapped).
  CollectiveShare share(const Collective& c, double cap) const {
    if (!(c.buffer_bytes > 0)) {  // nothing to move: the latency, the copies as alone
      CollectiveShare s;
      s.copy_bytes_per_s = cap > 0 ? std::min(copy_alone_bytes_per_s_, cap) : 0.0;
      s.collective_time_s = node_.collective_latency_s;
      return s;
    }
    return link_.share(c.kind, c.buffer_bytes, cap);
  }
  double alone_s(const Collective& c) const { return share(c, 0.0).collective_time_s; }

  /// Rates of one collective in a window mode: with capped copies, uncapped ones, or none.
  struct Shares {
    CollectiveShare capped, uncapped;
    double alone_s = 0;
  };
  /// What a window mode runs with: its cap and, per collective of the run (global order), its rates.
  struct ModeRates {
    WindowMode mode = WindowMode::yield;  ///< the mode run (a share mode with no cap left: yield)
    double cap_bytes_per_s = 0;           ///< the cap of capped copies (0: none)
    std::vector<Shares> shares;
    int same_as = -1;                     ///< an earlier mode (index) that runs exactly the same
  };

  /// Per window mode, once per planner (they depend on the node and workload, not on the chunks):
  /// the cap that holds for every collective of the step (share_free: the collective keeps its
  /// rate alone; share_tolerant: slows ≤ kShareTolerance) and the rates of every collective.
  void init_mode_rates() {
    std::vector<std::pair<Collective, Shares>> by_collective;
    for (WindowMode m : {WindowMode::share_free, WindowMode::yield, WindowMode::share_tolerant, WindowMode::ignore}) {
      ModeRates& r = mode_rates_[static_cast<int>(m)];
      r.mode = m;
      if (m == WindowMode::share_free || m == WindowMode::share_tolerant) {
        double cap = kInf;
        for (const Collective& c : collectives_)
          if (c.buffer_bytes > 0)
            cap = std::min(cap, link_.share_cap_bytes_per_s(c.kind, c.buffer_bytes,
                                                            m == WindowMode::share_free ? 1e-9 : kShareTolerance));
        if (!(cap > 0)) r.mode = WindowMode::yield;
        else r.cap_bytes_per_s = cap;
      }
      by_collective.clear();
      r.shares.resize(collective_g_.size());
      for (std::size_t c = 0; c < collective_g_.size(); ++c) {
        const Collective key = collective_at(collective_g_[c]);
        auto it = std::find_if(by_collective.begin(), by_collective.end(), [&key](const auto& b) { return b.first == key; });
        if (it == by_collective.end()) {
          Shares sh;
          sh.uncapped = share(key, kInf);
          sh.capped = r.cap_bytes_per_s > 0 ? share(key, r.cap_bytes_per_s) : sh.uncapped;
          sh.alone_s = alone_s(key);
          by_collective.push_back({key, sh});
          it = by_collective.end() - 1;
        }
        r.shares[c] = it->second;
      }
    }
    // A share mode whose cap equals an earlier one's (or that fell back to yield) runs exactly as it.
    const ModeRates& free = mode_rates_[static_cast<int>(WindowMode::share_free)];
    ModeRates& tolerant = mode_rates_[static_cast<int>(WindowMode::share_tolerant)];
    if (free.mode == WindowMode::yield) mode_rates_[static_cast<int>(WindowMode::share_free)].same_as = int(WindowMode::yield);
    if (tolerant.mode == WindowMode::yield) tolerant.same_as = int(WindowMode::yield);
    else if (free.mode == tolerant.mode && free.cap_bytes_per_s == tolerant.cap_bytes_per_s) tolerant.same_as = int(WindowMode::share_free);
    // per_window: share_free's cap and rates (its capped copies run as share_free's, its uncapped
    // ones as ignore's).
    ModeRates& per = mode_rates_[static_cast<int>(WindowMode::per_window)];
    per = mode_rates_[static_cast<int>(WindowMode::share_free)];
    per.mode = WindowMode::per_window;
    per.same_as = -1;
    // per_window_share: share_free's cap and rates, and share_tolerant's for the copies it caps at
    // that cap (run_pass: capped_of); nothing to share without a share_free cap.
    ModeRates& per_share = mode_rates_[static_cast<int>(WindowMode::per_window_share)];
    per_share = mode_rates_[static_cast<int>(WindowMode::share_free)];
    per_share.mode = WindowMode::per_window_share;
    per_share.same_as = free.mode == WindowMode::yield ? int(WindowMode::yield) : -1;
  }

  /// Where the resident bytes go (the plan's `residency` names it).
  ///  - prefix: every block keeps a tensor-aligned prefix, fraction R of its bytes;
  ///  - strided-blocks: whole blocks, spread evenly over the step (SGLang's `strided`);
  ///  - balanced: every block streams bytes in proportion to the time it gives the copy lane (its
  ///    compute and collectives), S_b = min(W_b, κ·T_b) with κ such that Σ S_b = (1−R)·Σ W_b, and
  ///    keeps the rest as its prefix. The link's demand is then even over the step: where blocks of
  ///    a model differ in bytes per second of compute (FLUX's double and single blocks), a uniform
  ///    prefix leaves the lane waiting for slots behind the light blocks while the heavy ones stall.
  enum class Placement { prefix, strided, balanced };

  /// Residency of fraction R (of the blocks' weight bytes) in a placement.
  Residency residency(double fraction, Placement placement) const {
    const int nb = int(cost_.blocks.size());
    Residency r;
    r.resident_lo.assign(nb, 0.0);
    r.whole.assign(nb, false);
    double total = 0;
    for (const auto& b : cost_.blocks) total += b.weight_bytes;
    if (placement == Placement::strided) {
      r.name = "strided-blocks";
      r.whole = strided_resident_blocks(nb, fraction);
      for (int b = 0; b < nb; ++b)
        if (r.whole[b]) r.resident_block_bytes += cost_.blocks[b].weight_bytes;
      return r;
    }
    // Per block: the bytes it keeps resident, before tensor alignment.
    std::vector<double> keep(nb);
    for (int b = 0; b < nb; ++b) keep[b] = fraction * cost_.blocks[b].weight_bytes;
    r.name = "prefix";
    if (placement == Placement::balanced) {
      r.name = "balanced";
      const double streamed = (1 - fraction) * total;
      auto streamed_at = [&](double kappa) {
        double sum = 0;
        for (int b = 0; b < nb; ++b) sum += std::min(cost_.blocks[b].weight_bytes, kappa * block_time_s_[b]);
        return sum;
      };
      double lo = 0, hi = 1;
      while (streamed_at(hi) < streamed && hi < 1e30) hi *= 2;
      for (int it = 0; it < 100; ++it) {
        const double mid = 0.5 * (lo + hi);
        (streamed_at(mid) < streamed ? lo : hi) = mid;
      }
      for (int b = 0; b < nb; ++b) keep[b] = cost_.blocks[b].weight_bytes - std::min(cost_.blocks[b].weight_bytes, hi * block_time_s_[b]);
    }
    double target = 0;
    for (int b = 0; b < nb; ++b) {
      target += keep[b];
      // The tensor edge of block b that brings the running total closest to the target.
      double best = 0, best_err = std::abs(r.resident_block_bytes - target);
      for (const auto& [lo, hi] : layout_.units(b)) {
        (void)lo;
        const double err = std::abs(r.resident_block_bytes + hi - target);
        if (err < best_err) best = hi, best_err = err;
      }
      r.resident_lo[b] = best;
      r.resident_block_bytes += best;
      if (best >= cost_.blocks[b].weight_bytes) r.whole[b] = true;
    }
    return r;
  }

  /// Tensor-aligned chunks of at most C bytes of everything the residency leaves offloaded.
  std::vector<Chunk> chunks(const Residency& r) const {
    const double C = chunk_bytes_;
    std::vector<Chunk> step_chunks;
    for (int b = 0; b < int(cost_.blocks.size()); ++b) {
      if (r.whole[b]) continue;
      double open_lo = -1, open_hi = -1;  // chunk being packed
      auto close = [&] {
        if (open_hi > open_lo && open_lo >= 0) step_chunks.push_back({0, b, open_lo, open_hi - open_lo, 0, 0});
        open_lo = open_hi = -1;
      };
      for (auto [lo, hi] : layout_.units(b)) {
        lo = std::max(lo, r.resident_lo[b]);
        if (hi <= lo) continue;
        const double size = hi - lo;
        if (size > C) {  // a tensor larger than C: equal pieces on aligned edges
          close();
          const int parts = int(std::ceil(size / C));
          double at = lo;
          for (int k = 1; k <= parts; ++k) {
            const double edge = k == parts ? hi : std::min(hi, lo + std::ceil(size * k / parts / kAlignBytes) * kAlignBytes);
            if (edge > at) step_chunks.push_back({0, b, at, edge - at, 0, 0});
            at = edge;
          }
          continue;
        }
        if (open_lo >= 0 && hi - open_lo > C) close();
        if (open_lo < 0) open_lo = lo;
        open_hi = hi;
      }
      close();
    }
    // A chunk's readers within its step, asked once: every step runs the same positions.
    for (Chunk& c : step_chunks)
      std::tie(c.first_reader, c.last_reader) = layout_.readers(c.block, c.offset_bytes, c.offset_bytes + c.bytes);
    std::vector<Chunk> all;
    all.reserve(std::size_t(steps_) * step_chunks.size());
    for (int s = 0; s < steps_; ++s)
      for (Chunk c : step_chunks) {
        c.step = s;
        c.first_reader += s * n_;
        c.last_reader += s * n_;
        all.push_back(c);
      }
    return all;
  }

  /// Slots the configuration gives chunks of at most `slot_bytes`: L+1 blocks' worth, or what the
  /// budget leaves after the resident weights and activations (at most two steps' chunks).
  int slots(const PolicyConfig& config, const Residency& r, const std::vector<Chunk>& chunks, double slot_bytes) const {
    if (chunks.empty()) return 0;
    const double resident = cost_.non_block_weight_bytes + r.resident_block_bytes;
    const double left = buffer_bytes_left(config, resident, cost_.activation_bytes + gathered_bytes_);
    std::vector<int> per_block(cost_.blocks.size(), 0);
    for (const Chunk& c : chunks)
      if (c.step == 0) ++per_block[c.block];
    const int most = *std::max_element(per_block.begin(), per_block.end());
    if (std::isinf(left)) return most * (config.lookahead + 1);
    return int(std::min<double>(std::floor(left / slot_bytes), double(chunks.size())));
  }

  /// Where run_pass looks for the chunks a position waits for, per position p of a step: for a
  /// compute op, the tightest range of its block's chunks that holds every chunk overlapping its
  /// byte range (the pass still tests each one in it for overlap, in index order, as a walk over
  /// the whole block would); for FSDP's all-gather (a collective with a byte range), every chunk of
  /// its block. Indices are within a step's chunk list: chunks() lists the steps one after another,
  /// each alike and in block order, so step s's chunk q is chunks[s · per_step + q].
  struct ChunkReaders {
    std::size_t per_step = 0;
    std::vector<std::pair<std::size_t, std::size_t>> range;  ///< per position: [first, last)
  };
  /// ChunkReaders of `chunks` (a chunks() list, or none): O(positions + a step's chunks × the
  /// positions of their block) once per chunk list, where the walk it replaces ran once per pass.
  ChunkReaders readers_of(const std::vector<Chunk>& chunks) const {
    ChunkReaders r;
    r.per_step = chunks.size() / std::size_t(steps_);
    r.range.assign(std::size_t(n_), {0, 0});
    std::vector<std::pair<std::size_t, std::size_t>> block_range(cost_.blocks.size(), {0, 0});
    for (std::size_t q = r.per_step; q-- > 0;) {
      if (q > 0 && chunks[q - 1].block > chunks[q].block)
        throw std::logic_error("chunkflow planner: a step's chunks are not in block order");
      auto& [first, last] = block_range[std::size_t(chunks[q].block)];
      if (last == 0) last = q + 1;
      first = q;
    }
    for (int p = 0; p < n_; ++p) {
      const auto& pos = layout_.at(p);
      const auto [first, last] = block_range[std::size_t(pos.block)];
      if (pos.collective) {
        if (pos.hi_bytes > pos.lo_bytes) r.range[std::size_t(p)] = {first, last};
        continue;
      }
      std::size_t lo = last, hi = last;
      for (std::size_t q = first; q < last; ++q)
        if (chunks[q].offset_bytes < pos.hi_bytes && chunks[q].offset_bytes + chunks[q].bytes > pos.lo_bytes) {
          if (lo == last) lo = q;
          hi = q + 1;
        }
      r.range[std::size_t(p)] = {lo, hi};
    }
    return r;
  }

  /// One closed-loop pass: the copy lane and the program of rank 0, copies decided as they go
  /// (`readers` = readers_of(chunks), made once per chunk list by best_schedule). Re-times the
  /// copies lazily (run_pass, `lazy`) unless planner_exhaustive is set or the windows it would
  /// time them against are out of order by a rounding (then it runs again, eagerly): the two give
  /// the same estimate, bit for bit (tests/test_policy.cpp).
  /// With `stop_at_s` finite (never under planner_exhaustive), a pass that cannot end with a step
  /// time below it stops early and returns an infeasible estimate (run_pass).
  Estimate run(const std::vector<Chunk>& chunks, const ChunkReaders& readers, int slot_count, WindowMode mode,
               const std::vector<double>& pred_start_s, const std::vector<double>& pred_end_s,
               const std::vector<double>& pred_program_start_s, const Estimate* lane_pred = nullptr,
               double stop_at_s = kInf) const {
    if (!planner_exhaustive) {
      bool in_order = true;
      Estimate e = run_pass(chunks, readers, slot_count, mode, pred_start_s, pred_end_s, pred_program_start_s, lane_pred, &in_order,
                            stop_at_s);
      if (in_order) return e;
    }
    return run_pass(chunks, readers, slot_count, mode, pred_start_s, pred_end_s, pred_program_start_s, lane_pred, nullptr,
                    planner_exhaustive ? kInf : stop_at_s);
  }

  /// run(), eagerly (`in_order` null: every copy still moving when a window's real times become
  /// known is re-timed then, as the estimate is defined) or lazily (`in_order` set): a copy's
  /// re-timing waits until something reads its times (the program waits for its chunk, a window
  /// asks what is in flight at its start, the lane issues behind it) or a later window re-times it
  /// anyway, and then runs against the windows as they were when the eager pass would have run it.
  /// Both time a copy the same, bit for bit, when the window ends grow with their index (they do
  /// in exact arithmetic: actual ends in lane order, then predicted ones shifted by one lag): then
  /// the first window after a time, and so every copy's end, does not depend on the search's
  /// starting hint, and the copies' ends grow in lane order, so "the copies still moving at t" is a
  /// suffix found by binary search. The lazy pass checks that order and sets *in_order = false (its
  /// estimate is then not to be used) where a rounding breaks it.
  /// Stop: with `stop_at_s` finite, the pass returns an infeasible estimate as soon as its step time
  /// is sure to be at least stop_at_s. In the last step, with E(s−1) (the previous step's last
  /// compute end) known, the last step's last compute end is at least the compute lane's end now
  /// plus the durations of the step's compute positions still ahead (compute ops run one after
  /// another on the lane, each for at least its duration: a slowdown only stretches it), less a
  /// 1e-9 relative margin for the rounding of the sums; so the step time is at least that less
  /// E(s−1). The lazy pass stops on the values the eager one computes (the copies it times before a
  /// rounding breaks the windows' order are timed as the eager pass times them).
  Estimate run_pass(const std::vector<Chunk>& chunks, const ChunkReaders& readers, int slot_count, WindowMode mode,
                    const std::vector<double>& pred_start_s, const std::vector<double>& pred_end_s,
                    const std::vector<double>& pred_program_start_s, const Estimate* lane_pred, bool* in_order,
                    double stop_at_s = kInf) const {
    Estimate e;
    ++planner_cache_stats.passes;
    const std::size_t n_windows = collective_g_.size(), n_chunks = chunks.size();
    const bool lazy = in_order != nullptr;
    const int G = steps_ * n_;
    const double lat = node_.h2d_latency_s;
    const double C = chunk_bytes_;
    const double min_piece = std::min(C, std::max(C / 8, 1 * kMiB));
    const ModeRates& rates = mode_rates_[static_cast<int>(mode)];
    const bool per_window_mode = mode == WindowMode::per_window || mode == WindowMode::per_window_share;
    if (!per_window_mode) mode = rates.mode;  // a share mode with no cap left runs as yield
    const double cap = rates.cap_bytes_per_s;
    const std::vector<Shares>& shares = rates.shares;
    // per_window_share's second cap (share_tolerant's; 0 when it has none of its own) and the rates
    // of a collective beside copies capped at `copy_cap`.
    const ModeRates& tolerant = mode_rates_[static_cast<int>(WindowMode::share_tolerant)];
    const double tolerant_cap = mode == WindowMode::per_window_share && tolerant.same_as < 0 ? tolerant.cap_bytes_per_s : 0.0;
    auto capped_of = [&](std::size_t c, double copy_cap) -> const CollectiveShare& {
      return tolerant_cap > 0 && copy_cap == tolerant_cap ? tolerant.shares[c].capped : shares[c].capped;
    };

    // Working arrays reused across passes (a plan's passes allocate once): per position, per chunk,
    // per copy piece in lane order.
    Scratch& w = scratch_;
    w.start_s.assign(G, 0.0);
    w.end_s.assign(G, 0.0);
    w.landed_s.assign(n_chunks, 0.0);
    if (lazy) w.chunk_piece.assign(n_chunks, 0);
    w.chunk_gap_s.assign(n_chunks, 0.0);
    for (auto* v : {&w.piece_start_s, &w.piece_end_s, &w.piece_cap, &w.piece_bytes, &w.piece_ready_s}) v->clear();
    w.piece_last_reader.clear();
    w.piece_completes.clear();
    e.pieces.reserve(n_chunks + n_chunks / 4);
    std::vector<double>&start_s = w.start_s, &end_s = w.end_s, &landed_s = w.landed_s;
    std::vector<int>& piece_last_reader = w.piece_last_reader;
    std::vector<double>&piece_start_s = w.piece_start_s, &piece_end_s = w.piece_end_s, &piece_cap = w.piece_cap,
    &piece_bytes = w.piece_bytes, &piece_ready_s = w.piece_ready_s;
    std::vector<int>& piece_completes = w.piece_completes;  // the chunk a piece completes, or -1
    int g_next = 0;
    double t_lane = 0;
    std::size_t j = 0;            // chunk being issued
    double done_in_chunk = 0;     // bytes of chunk j already issued
    int name_index = 0, name_step = -1, name_block = -1;
    std::size_t next_coll = 0;    // first collective not yet simulated
    // Window times: actual for simulated collectives (win_start_s/win_end_s, in collective order),
    // predicted after, shifted by the lag of the last simulated one (lag_s, updated as it advances).
    std::vector<double>&win_start_s = w.win_start_s, &win_end_s = w.win_end_s;
    win_start_s.clear();
    win_end_s.clear();
    double lag_s = 0;
    const bool predicted = !pred_start_s.empty();
    // The predicted windows, or without a prediction +∞ for each (lag_s then stays 0, and +∞ + 0
    // is +∞: the windows ahead are never reached, as with no prediction).
    if (!predicted) w.no_windows_s.assign(n_windows, kInf);
    const double* pred_start = predicted ? pred_start_s.data() : w.no_windows_s.data();
    const double* pred_end = predicted ? pred_end_s.data() : w.no_windows_s.data();
    if (lazy && predicted)
      for (std::size_t c = 0; c < pred_end_s.size(); ++c)
        if (!(pred_start_s[c] <= pred_end_s[c]) || (c > 0 && !(pred_end_s[c - 1] <= pred_end_s[c]))) {
          *in_order = false;
          return e;
        }
    // The windows as known with the first `nc` collectives simulated and lag `lag`.
    auto window_at = [&](std::size_t c, std::size_t nc, double lag) -> std::pair<double, double> {
      if (c < nc) return {win_start_s[c], win_end_s[c]};
      return {pred_start[c] + lag, pred_end[c] + lag};
    };
    auto window = [&](std::size_t c) { return window_at(c, next_coll, lag_s); };

    // The first window that has not ended at t. Window ends grow with the window's index (actual
    // ends in program order, then the predicted ones shifted by one lag), so the answer is unique:
    // found from the previous answer by a short walk (the copy lane's times mostly grow), else by
    // binary search. O(1) per call in the common case, O(log windows) at worst.
    std::size_t hint = 0;
    auto first_window_after = [&](double t, std::size_t nc, double lag) -> std::size_t {
      auto end_of = [&](std::size_t c) {
        return c < nc ? win_end_s[c] : pred_end[c] + lag;
      };
      const std::size_t W = n_windows;
      auto search = [&](std::size_t lo, std::size_t hi) {  // first c in [lo, hi) with end_of(c) > t, else hi
        while (lo < hi) {
          const std::size_t mid = lo + (hi - lo) / 2;
          if (end_of(mid) <= t)
            lo = mid + 1;
          else
            hi = mid;
        }
        return lo;
      };
      std::size_t c = std::min(hint, W);
      if (c < W && end_of(c) <= t) {
        for (int k = 0; k < 4 && c < W && end_of(c) <= t; ++k) ++c;
        if (c < W && end_of(c) <= t) c = search(c, W);
      } else {
        for (int k = 0; k < 4 && c > 0 && end_of(c - 1) > t; ++k) --c;
        if (c > 0 && end_of(c - 1) > t) c = search(0, c);
      }
      return hint = c;
    };
    // When a copy of `bytes` started at t (after its latency) with cap `copy_cap` (0 = none) ends:
    // the copy engine's rate between windows, the shared rate inside each (actual or predicted).
    // With `nc` and `lag`: against the windows as known then (copy_end_at).
    // The windows known actually (c < nc) and those predicted are walked in two loops, the same
    // arithmetic in the same order as one walk over window_at.
    auto copy_end_at = [&](double t, double bytes, double copy_cap, std::size_t nc, double lag) {
      const double alone = copy_cap > 0 ? std::min(copy_alone_bytes_per_s_, copy_cap) : copy_alone_bytes_per_s_;
      // The rate inside window c: capped_of(c, copy_cap) for a capped copy, else uncapped.
      const Shares* rates = copy_cap > 0 && tolerant_cap > 0 && copy_cap == tolerant_cap ? tolerant.shares.data() : shares.data();
      CollectiveShare Shares::*const rate_kind = copy_cap > 0 ? &Shares::capped : &Shares::uncapped;
      double end = 0;
      // Window c from ws to we: true (the copy's end in `end`) when the copy ends by we.
      auto through = [&](std::size_t c, double ws, double we) {
        if (t < ws) {
          if (bytes <= alone * (ws - t)) {
            end = t + bytes / alone;
            return true;
          }
          bytes -= alone * (ws - t);
          t = ws;
        }
        const double r = (rates[c].*rate_kind).copy_bytes_per_s;
        if (bytes <= r * (we - t)) {
          end = t + bytes / r;
          return true;
        }
        bytes -= r * (we - t);
        t = we;
        return false;
      };
      const std::size_t W = n_windows;
      std::size_t c = first_window_after(t, nc, lag);
      for (; c < std::min(nc, W); ++c)
        if (through(c, win_start_s[c], win_end_s[c])) return end;
      for (; c < W; ++c)
        if (through(c, pred_start[c] + lag, pred_end[c] + lag)) return end;
      return t + bytes / alone;
    };
    auto copy_end_s = [&](double t, double bytes, double copy_cap) { return copy_end_at(t, bytes, copy_cap, next_coll, lag_s); };

    // The run of back-to-back windows that starts with window c: (start, end, last index).
    auto window_run = [&](std::size_t c) {
      auto [ws, we] = window(c);
      std::size_t last = c;
      while (last + 1 < n_windows) {
        const auto [ns, ne] = window(last + 1);
        if (ns > we + lat) break;
        we = std::max(we, ne);
        ++last;
      }
      return std::make_tuple(ws, we, last);
    };
    // Bytes that end by an edge `room_s` away at rate r: the whole rest if it fits; else a piece of
    // at least min_piece cut at the edge; nullopt when not even min_piece fits. With `overrun`, a
    // rest that exceeds the room by less than kOverrunBytes goes whole.
    auto fit = [&](double room_s, double r, double rem, bool overrun) -> std::optional<double> {
      const double room = std::floor(std::max(0.0, r * (room_s - lat)) / kAlignBytes) * kAlignBytes;
      if (rem <= room) return rem;
      if (room < min_piece) return std::nullopt;
      // A capped copy that outlasts its window keeps its cap: split unless the tail is tiny.
      if (overrun && rem - room < kOverrunBytes) return rem;
      return room;
    };

    // Re-times the copies still moving at t (in lane order) against the windows known now.
    auto retime_copies_after = [&](double t) {
      std::size_t k = piece_end_s.size();
      while (k > 0 && piece_end_s[k - 1] > t) --k;
      double lane = k > 0 ? piece_end_s[k - 1] : 0.0;
      for (; k < piece_end_s.size(); ++k) {
        piece_start_s[k] = std::max(lane, piece_ready_s[k]);
        lane = piece_end_s[k] = copy_end_s(piece_start_s[k] + lat, piece_bytes[k], piece_cap[k]);
        if (piece_completes[k] >= 0) landed_s[piece_completes[k]] = lane;
      }
      if (!piece_end_s.empty()) t_lane = piece_end_s.back();
    };
    // Lazy re-timing: pieces [0, timed) hold their times; the rest wait to be re-timed, in lane
    // order, against the windows as known with pend_nc collectives simulated and lag pend_lag (the
    // state when the eager pass re-timed them last).
    std::size_t timed = 0, pend_nc = 0;
    double pend_lag = 0;
    auto time_next = [&] {
      const std::size_t k = timed++;
      piece_start_s[k] = std::max(k > 0 ? piece_end_s[k - 1] : 0.0, piece_ready_s[k]);
      piece_end_s[k] = copy_end_at(piece_start_s[k] + lat, piece_bytes[k], piece_cap[k], pend_nc, pend_lag);
      if (piece_completes[k] >= 0) landed_s[std::size_t(piece_completes[k])] = piece_end_s[k];
    };
    auto time_all = [&] {  // and t_lane, the lane's end (as the eager pass keeps it)
      while (timed < piece_end_s.size()) time_next();
      if (!piece_end_s.empty()) t_lane = piece_end_s.back();
    };
    // The first piece still moving at t (its end after t), timing waiting ones as far as needed.
    auto first_moving = [&](double t) -> std::size_t {
      const auto timed_end = piece_end_s.begin() + std::ptrdiff_t(timed);
      const auto it = std::upper_bound(piece_end_s.begin(), timed_end, t);
      if (it != timed_end) return std::size_t(it - piece_end_s.begin());
      while (timed < piece_end_s.size()) {
        time_next();
        if (piece_end_s[timed - 1] > t) return timed - 1;
      }
      return timed;
    };
    // The eager retime_copies_after(t), deferred: the pieces moving at t wait for the windows now.
    auto defer_retime_after = [&](double t) {
      timed = first_moving(t);
      pend_nc = next_coll;
      pend_lag = lag_s;
    };

    // per_window_share: the window its last decision was for, and that decision (every copy that
    // meets the window takes it: the estimate prices a collective by the copy in flight at its start).
    std::size_t decided_window = n_windows;
    WindowMode decided_mode = WindowMode::ignore;
    auto issue_copies = [&] {
      while (j < n_chunks) {
        const std::size_t k = piece_last_reader.size();
        const int release = k >= std::size_t(slot_count) ? piece_last_reader[k - slot_count] : -1;
        if (release >= g_next) return;  // its slot frees later in the program
        if (lazy) time_all();
        const Chunk& ch = chunks[j];
        double t0 = std::max(t_lane, release >= 0 ? end_s[release] : 0.0);
        int after = kNoPosition;
        double piece_cap_bps = 0;
        const double rem = ch.bytes - done_in_chunk;
        double bytes = rem;
        std::size_t c = 0;
        // per_window: the treatment of window c for this copy, from its slack: yield when, resumed
        // at the run's end, it still lands before its first reader's predicted start (the previous
        // pass's program, shifted by the current lag); else share at the cap that leaves the
        // collective its rate when, capped from the window on, it still lands by then; else ignore
        // (the reader would stall: run uncapped).
        // per_window_share, once per window (every copy meeting it takes the same treatment): share
        // at the share_free cap when the delay that costs (capped in the window, the rest uncapped
        // after it) is affordable, else, when the predicted plan ignores the windows, at the
        // share_tolerant cap when that is, else the predicted plan's treatment. Its slack test
        // counts the delay the lane has taken so far against the predicted plan (`drift`: each
        // share it chose slows the lane and, by shortening the window, speeds the program), and a
        // delay that no idle gap absorbs within the walk is allowed when every later copy's
        // predicted slack covers it.
        auto choose = [&](double ws, double we, bool can_wait, bool can_share, std::size_t c_run) {
          if (!per_window_mode) return mode;
          const double reader_s = pred_program_start_s[std::size_t(ch.first_reader)] + lag_s;
          const double now_s = copy_end_s(t0 + lat, rem, 0);
          if (mode == WindowMode::per_window_share) {
            if (c_run == decided_window) return decided_mode;
            decided_window = c_run;
            const double drift = lane_pred ? lane_pred->chunk_slack_s[j] - (reader_s - now_s) : 0.0;
            auto affordable = [&](double d) {
              if (now_s + d > reader_s) return false;
              if (!lane_pred) return true;
              d += drift;
              std::size_t k = j + 1;
              for (; k < n_chunks && k <= j + kSlackWalkChunks; ++k) {
                d -= lane_pred->chunk_gap_s[k];
                if (d <= 0) return true;
                if (lane_pred->chunk_slack_s[k] < d) return false;
              }
              return k >= n_chunks || d <= lane_pred->chunk_min_slack_s[k];
            };
            // When the copy ends, capped at `share_cap` within the window run, the rest uncapped.
            auto share_end = [&](double share_cap) {
              const double from = std::max(t0, ws) + lat;
              const double room = std::max(0.0, capped_of(c_run, share_cap).copy_bytes_per_s * (we - from));
              if (rem <= room + kOverrunBytes) return copy_end_s(from, rem, share_cap);
              return copy_end_s(we + lat, rem - room, 0);
            };
            if (can_share && affordable(share_end(cap) - now_s)) return decided_mode = WindowMode::share_free;
            if (can_share && tolerant_cap > 0 && lane_pred && lane_pred->mode == WindowMode::ignore &&
                affordable(share_end(tolerant_cap) - now_s))
              return decided_mode = WindowMode::share_tolerant;
            return decided_mode = lane_pred ? lane_pred->mode : WindowMode::ignore;
          }
          // A delay d of this copy pushes the copies behind it on the lane until an idle gap of the
          // lane (previous pass) absorbs it: allowed when none of them then misses its reader.
          auto affordable = [&](double d) {
            if (now_s + d > reader_s) return false;
            if (!lane_pred) return true;
            for (std::size_t k = j + 1; k < n_chunks && k <= j + kSlackWalkChunks; ++k) {
              d -= lane_pred->chunk_gap_s[k];
              if (d <= 0) return true;
              if (lane_pred->chunk_slack_s[k] < d) return false;
            }
            return d <= 0;
          };
          if (can_wait && affordable(copy_end_s(we + lat, rem, 0) - now_s)) return WindowMode::yield;
          if (can_share && cap > 0 && affordable(copy_end_s(std::max(t0, ws) + lat, rem, cap) - now_s))
            return WindowMode::share_free;
          return WindowMode::ignore;
        };
        for (int guard = 0; guard < 64 && mode != WindowMode::ignore; ++guard) {
          c = first_window_after(t0, next_coll, lag_s);
          if (c >= n_windows) break;  // no window ahead: the whole rest, uncapped
          const auto [ws, we, last] = window_run(c);
          // Waiting for the run's end (or the op before its first collective) must not outlast the
          // chunk's first reader, or the plan would deadlock.
          const bool can_wait = collective_g_[last] < ch.first_reader;
          const bool can_hold = collective_g_[c] - 1 < ch.first_reader && collective_g_[c] - 1 >= 0;
          if (t0 < ws) {  // compute phase: end by the window's edge
            if (c > 0 && collective_g_[c - 1] < ch.first_reader) after = std::max(after, collective_g_[c - 1]);
            if (auto b = fit(ws - t0, copy_alone_bytes_per_s_, rem, false)) {
              bytes = *b;
              break;
            }
            const WindowMode local = choose(ws, we, can_wait, can_hold, c);
            if (local == WindowMode::ignore) break;
            if (local == WindowMode::yield ? !can_wait : !can_hold) break;  // needed soon: run into it
            if (local == WindowMode::yield) {
              t0 = we;
              after = collective_g_[last];
            } else {
              t0 = ws;  // share: start capped with the window
              after = std::max(after, collective_g_[c] - 1);
            }
            continue;
          }
          // Inside the run.
          const WindowMode local = choose(ws, we, can_wait, true, c);
          if (local == WindowMode::ignore) break;
          if (local != WindowMode::yield) {
            const double local_cap = local == WindowMode::share_tolerant && tolerant_cap > 0 ? tolerant_cap : cap;
            if (auto b = fit(we - t0, capped_of(c, local_cap).copy_bytes_per_s, rem, true)) {
              bytes = *b;
              piece_cap_bps = local_cap;
              break;
            }
          }
          if (!can_wait) break;  // needed before the run ends: run uncapped now
          t0 = we;  // yield, or too little room to share: wait for the run's end
          after = collective_g_[last];
        }
        // The plan will make the copy wait for `after`: when that op is still ahead of the program,
        // decide again once the program has reached it (its real time is known then).
        if (after != kNoPosition) {
          if (after >= g_next) return;
          t0 = std::max(t0, end_s[after]);
        }
        if (ch.step != name_step || ch.block != name_block) name_index = 0, name_step = ch.step, name_block = ch.block;
        CopyPiece p;
        p.step = ch.step;
        p.block = ch.block;
        p.chunk = name_index++;
        p.offset_bytes = ch.offset_bytes + done_in_chunk;
        p.bytes = bytes;
        p.rate_cap_bytes_per_s = piece_cap_bps;
        p.after_position = after;
        e.pieces.push_back(p);
        if (done_in_chunk == 0) w.chunk_gap_s[j] = std::max(0.0, t0 - t_lane);
        piece_last_reader.push_back(ch.last_reader);
        piece_start_s.push_back(t0);
        t_lane = copy_end_s(t0 + lat, bytes, piece_cap_bps);
        piece_end_s.push_back(t_lane);
        piece_cap.push_back(piece_cap_bps);
        piece_bytes.push_back(bytes);
        piece_ready_s.push_back(std::max(release >= 0 ? end_s[release] : 0.0, after >= 0 ? end_s[after] : 0.0));
        done_in_chunk += bytes;
        piece_completes.push_back(done_in_chunk >= ch.bytes - 0.5 ? int(j) : -1);
        if (lazy) ++timed;
        if (done_in_chunk >= ch.bytes - 0.5) {
          if (lazy) w.chunk_piece[j] = piece_end_s.size() - 1;
          landed_s[j] = t_lane;
          ++j;
          done_in_chunk = 0;
        }
      }
    };

    // The piece on the copy lane at time t (start ≤ t < end), or kNone.
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    auto moving_at = [&](double t) -> std::size_t {
      if (lazy) {  // the lane's intervals are disjoint and in order: only the first moving one can hold t
        const std::size_t k = first_moving(t);
        return k < piece_start_s.size() && piece_start_s[k] <= t ? k : kNone;
      }
      std::size_t found = kNone;  // the earliest such piece, as the lazy search finds it
      for (std::size_t k = piece_start_s.size(); k-- > 0;) {
        if (piece_end_s[k] <= t) break;
        if (piece_start_s[k] <= t) found = k;
      }
      return found;
    };

    // The program as the plan builder wires it (runtime/plan_builder.cpp): compute ops in order on
    // the compute lane; collectives in order on the comm lane, each after the compute op before it
    // (or, FSDP's all-gather, after the last compute op two blocks back) and gating the next compute
    // op (ring attention's K/V pass: the one after next, so the attention overlaps it).
    double compute_end = 0, comm_end = 0;  // lanes' last ends
    bool any_compute = false;
    double compute_end_block_m1 = -1, compute_end_block_m2 = -1;  // last compute end, 1 and 2 blocks back
    int current_block = -1;
    double gate_s = 0;                               // collectives the next compute op waits for
    std::vector<std::pair<double, int>> deferred;    // (end, compute ops to let pass first)
    for (; g_next < G;) {
      issue_copies();
      const int g = g_next;
      const auto& pos = layout_.at(g % n_);
      const StageCost& st = cost_.blocks[pos.block].stages[pos.stage];
      const int s = g / n_;
      if (pos.block != current_block) {
        current_block = pos.block;
        compute_end_block_m2 = compute_end_block_m1;
        compute_end_block_m1 = any_compute ? compute_end : -1;
      }
      if (pos.collective) {
        double ready = comm_end;
        if (st.waits_for_compute && any_compute) ready = std::max(ready, compute_end);
        if (!st.waits_for_compute && compute_end_block_m2 >= 0) ready = std::max(ready, compute_end_block_m2);
        if (pos.hi_bytes > pos.lo_bytes) {
          // FSDP (issue 9): the all-gather reads every copy of its block's shard; it waits for them,
          // and a schedule whose slots cannot hold them all before it is infeasible.
          const auto [first, last] = readers.range[std::size_t(g % n_)];
          for (std::size_t q = std::size_t(s) * readers.per_step + first; q < std::size_t(s) * readers.per_step + last; ++q) {
            if (q >= j) return e;
            if (lazy) while (timed <= w.chunk_piece[q]) time_next();
            ready = std::max(ready, landed_s[q]);
          }
        }
        // The copy in flight at its start, if any, sets how the link is shared.
        double copy_cap = 0;
        if (const std::size_t k = moving_at(ready); k != kNone) copy_cap = piece_cap[k] > 0 ? piece_cap[k] : kInf;
        start_s[g] = ready;
        const Shares& sh = shares[next_coll];
        end_s[g] = ready + (copy_cap == 0 ? sh.alone_s : std::isinf(copy_cap) ? sh.uncapped.collective_time_s
                                                                              : capped_of(next_coll, copy_cap).collective_time_s);
        if (s == steps_ - 1) ++(copy_cap == 0 ? e.yield : std::isinf(copy_cap) ? e.ignore : e.share);
        // Copies timed against this window's prediction keep their times when it came true and the
        // lag (so every later prediction) is unchanged; otherwise they are re-timed.
        const auto [was_start, was_end] = window(next_coll);
        win_start_s.push_back(start_s[g]);
        win_end_s.push_back(end_s[g]);
        const double old_lag = lag_s;
        if (predicted) lag_s = end_s[g] - pred_end_s[next_coll];
        ++next_coll;
        if (lazy && predicted && next_coll < pred_end_s.size() && !(end_s[g] <= pred_end_s[next_coll] + lag_s)) {
          *in_order = false;  // a rounding put the next predicted end before this actual one
          return e;
        }
        comm_end = end_s[g];
        if (st.gates_compute <= 1)
          gate_s = std::max(gate_s, end_s[g]);
        else
          deferred.push_back({end_s[g], st.gates_compute - 1});
        if (!(was_start == start_s[g] && was_end == end_s[g] && lag_s == old_lag)) {
          if (lazy)
            defer_retime_after(ready);
          else
            retime_copies_after(ready);  // this window's real times are known now
        }
      } else {
        double ready = std::max(compute_end, gate_s);
        gate_s = 0;
        for (auto it = deferred.begin(); it != deferred.end();) {
          if (it->second-- == 0) {
            ready = std::max(ready, it->first);
            it = deferred.erase(it);
          } else {
            ++it;
          }
        }
        const auto [first, last] = readers.range[std::size_t(g % n_)];
        for (std::size_t q = std::size_t(s) * readers.per_step + first; q < std::size_t(s) * readers.per_step + last; ++q) {
          const Chunk& ch = chunks[q];
          if (!(ch.offset_bytes < pos.hi_bytes && ch.offset_bytes + ch.bytes > pos.lo_bytes)) continue;
          if (q >= j) return e;  // needed before it could be issued: the slots are too few
          if (lazy) while (timed <= w.chunk_piece[q]) time_next();
          ready = std::max(ready, landed_s[q]);
        }
        start_s[g] = ready;
        // A calibrated node's compute slows while a copy or a collective runs beside it: the
        // executor stretches a compute op by compute_slowdown_h2d when a copy of its rank is in flight
        // at its start, and by compute_slowdown_collective more when a collective is (sim/executor.hpp:
        // d × (1 + those that apply)); so does the estimate, so that residency pays for the copies'
        // cost to compute. (A collective later in program order that starts before this op, FSDP's
        // all-gather of the next block, is not seen here.)
        double slowdown = 0;
        if (node_.compute_slowdown_h2d > 0 && moving_at(ready) != kNone) slowdown += node_.compute_slowdown_h2d;
        if (node_.compute_slowdown_collective > 0 && !win_start_s.empty() && win_start_s.back() <= ready &&
            ready < win_end_s.back())
          slowdown += node_.compute_slowdown_collective;
        end_s[g] = ready + duration_s_[g % n_] * (1.0 + slowdown);
        compute_end = end_s[g];
        any_compute = true;
        if (stop_at_s < kInf && s == steps_ - 1) {
          const double previous_end_s = steps_ >= 2 ? end_s[std::size_t((steps_ - 2) * n_ + last_compute_position_)] : 0.0;
          const double least_end_s = compute_end + rest_compute_s_[std::size_t(g % n_)];
          if (least_end_s - 1e-9 * std::abs(least_end_s) - previous_end_s >= stop_at_s) {
            ++planner_cache_stats.passes_stopped;
            return e;  // infeasible: cannot reach stop_at_s
          }
        }
      }
      ++g_next;
    }
    if (lazy) time_all();
    e.feasible = j == n_chunks;
    // Step time of the last step: end of its last compute op − end of the previous step's.
    auto last_compute_end = [&](int step) {
      for (int p = n_ - 1; p >= 0; --p)
        if (!layout_.at(p).collective) return end_s[step * n_ + p];
      return 0.0;
    };
    e.step_time_s = last_compute_end(steps_ - 1) - (steps_ >= 2 ? last_compute_end(steps_ - 2) : 0.0);
    for (int g : collective_g_) {
      e.window_start_s.push_back(start_s[g]);
      e.window_end_s.push_back(end_s[g]);
    }
    return e;
  }

  /// What a later pass predicts from: the windows of estimate `e`, and with `lane`, the program's
  /// start times and the copies' slack and lane gaps of the run() that made `e` (read from its
  /// working arrays, so right after it).
  Estimate prediction_of(const Estimate& e, const std::vector<Chunk>& chunks, bool lane, WindowMode mode) const {
    Estimate p;
    p.mode = mode;
    p.window_start_s = e.window_start_s;
    p.window_end_s = e.window_end_s;
    if (lane) {
      p.program_start_s = scratch_.start_s;
      p.chunk_slack_s.resize(chunks.size());
      for (std::size_t q = 0; q < chunks.size(); ++q)
        p.chunk_slack_s[q] = scratch_.start_s[std::size_t(chunks[q].first_reader)] - scratch_.landed_s[q];
      p.chunk_gap_s = scratch_.chunk_gap_s;
      p.chunk_min_slack_s.resize(chunks.size());
      for (std::size_t q = chunks.size(); q-- > 0;)
        p.chunk_min_slack_s[q] = q + 1 < chunks.size() ? std::min(p.chunk_slack_s[q], p.chunk_min_slack_s[q + 1]) : p.chunk_slack_s[q];
    }
    return p;
  }

  /// True when estimate `e` already equals the stall-free program (compute and collectives alone):
  /// no copy schedule estimates less, so the search may stop there with the same answer. (Assumed
  /// also with compute slowdowns, where a copy's delay could in principle let a stretched op miss
  /// a collective window; not seen in 960 estimates at collective slowdowns 0.466–10, helper-40.)
  bool reaches_stall_free(const Estimate& e) const { return e.step_time_s <= stall_free_.step_time_s * (1 + 1e-9); }

  /// The best estimate over the window modes, each refined over two passes; stops at the first
  /// estimate that reaches the stall-free program (later ones could only tie).
  /// Under set_chunkflow_planner_exhaustive, every feasible pass is checked against `bound_s`
  /// (estimate_at passes volume_bound_s: the bound the default planner skips by must hold): a pass
  /// below it throws std::logic_error.
  Estimate best_schedule(const std::vector<Chunk>& chunks, int slot_count, double bound_s = 0) const {
    const ChunkReaders readers = readers_of(chunks);
    Estimate best;
    Estimate best_prediction = stall_free_;  // per_window's: the best single-treatment estimate's
    for (WindowMode mode : {WindowMode::share_free, WindowMode::yield, WindowMode::share_tolerant, WindowMode::ignore,
                            WindowMode::per_window, WindowMode::per_window_share}) {
      if (mode_rates_[static_cast<int>(mode)].same_as >= 0) continue;  // a mode already estimated, same rates
      const bool per_window = mode == WindowMode::per_window || mode == WindowMode::per_window_share;
      // per_window_share spends the predicted plan's slack on treatments that slow the collectives
      // less than its own: none when it shares at the lossless cap or yields already.
      if (mode == WindowMode::per_window_share &&
          (best_prediction.chunk_slack_s.empty() || best_prediction.mode == WindowMode::share_free ||
           best_prediction.mode == WindowMode::yield))
        continue;
      const Estimate& seed = per_window ? best_prediction : stall_free_;
      std::vector<double> prev_start = seed.window_start_s, prev_end = seed.window_end_s;
      // per_window predicts from an estimate of the whole schedule already: one pass.
      for (int pass = 0; pass < (per_window ? 1 : 2); ++pass) {
        // A mode's last pass counts only where it beats the best so far (below): it may stop once
        // it cannot (run_pass). An earlier pass runs in full: the next predicts from its windows.
        const bool last_pass = pass + 1 == (per_window ? 1 : 2);
        const double stop_at_s = last_pass && !planner_exhaustive ? best.step_time_s * (1 - 1e-9) : kInf;
        Estimate e = run(chunks, readers, slot_count, mode, prev_start, prev_end, seed.program_start_s,
                         seed.chunk_slack_s.empty() ? nullptr : &seed, stop_at_s);
        if (planner_exhaustive && e.feasible && e.step_time_s < bound_s * (1 - 1e-9))
          throw std::logic_error("chunkflow planner: a closed-loop pass (" + std::to_string(e.step_time_s) +
                                 " s) beats the copy-volume bound (" + std::to_string(bound_s) + " s)");
        // Without collectives no copy meets a window, and every mode and pass runs this one alike.
        if (collective_g_.empty() && !planner_exhaustive) return e.feasible ? e : best;
        if (!e.feasible) break;
        // A pass is a function of its inputs alone: the second, predicting from windows equal (bit
        // for bit) to those the first predicted from, would run it again and could not improve.
        bool again = false;
        if (pass == 0) {
          again = !planner_exhaustive && same_bits(e.window_start_s, prev_start) && same_bits(e.window_end_s, prev_end);
          prev_start = e.window_start_s, prev_end = e.window_end_s;
        }
        if (e.step_time_s < best.step_time_s * (1 - 1e-9)) {
          if (!per_window) best_prediction = prediction_of(e, chunks, true, mode);
          best = std::move(e);
        }
        if (reaches_stall_free(best)) return best;
        if (again) break;
      }
    }
    return best;
  }

  /// True when `a` and `b` hold the same doubles, bit for bit.
  static bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
  }

  struct Choice {
    Residency residency;
    Estimate estimate;
    double slot_bytes = 0;
    int slot_count = 0;
  };

  /// The best placement for fraction R (ties: the earlier of prefix, strided, balanced); nullopt
  /// when none fits. Residencies, chunks and estimates are kept (memo_): configurations that differ
  /// only in budget or lookahead often give a placement the same slot count, and "auto" tries the
  /// fractions the explicit ones did.
  /// With `auto_search` ("auto" looking for a fraction within kAutoWithinBound of the critical path),
  /// a placement whose volume_bound_s exceeds that bound by more than kAutoSkipMargin is not
  /// estimated (`*skipped` is set): its estimate would exceed the bound by more than the 1e-6 by which
  /// a placement must beat the best so far, so it is never the best of a fraction within the bound,
  /// and every placement within the bound beats it. The result then differs from the full one only
  /// when the fraction is not within the bound (decide() then estimates in full the fractions that
  /// can be the fastest).
  std::optional<Choice> plan_fraction(const PolicyConfig& config, double fraction, bool auto_search = false,
                                      bool* skipped = nullptr) const {
    std::optional<Choice> best;
    for (Placement placement : {Placement::prefix, Placement::strided, Placement::balanced}) {
      const Placed& placed = placed_at(fraction, placement);
      Choice c;
      c.residency = placed.residency;
      const std::vector<Chunk>& ch = placed.chunks;
      if (ch.empty()) {  // everything resident
        if (buffer_bytes_left(config, cost_.non_block_weight_bytes + c.residency.resident_block_bytes,
                              cost_.activation_bytes + gathered_bytes_) < 0)
          continue;
        c.estimate = stall_free_;
        return c;
      }
      c.slot_bytes = placed.slot_bytes;
      c.slot_count = slots(config, c.residency, ch, c.slot_bytes);
      if (c.slot_count < 1) continue;
      if (auto_search && !planner_exhaustive &&
          volume_bound_s(placed, c.slot_count) * (1 - 1e-9) > kAutoWithinBound * critical_path_s_ * (1 + kAutoSkipMargin)) {
        ++planner_cache_stats.estimate_bounded;
        *skipped = true;
        continue;
      }
      c.estimate = estimate_at(placed, ch, c.slot_count);

      if (!c.estimate.feasible) continue;
      if (!best || c.estimate.step_time_s < best->estimate.step_time_s * (1 - 1e-6)) best = std::move(c);
      if (reaches_stall_free(best->estimate)) break;  // the other placements could only tie
    }
    return best;
  }

  /// Fractions "auto" tries, ascending: 0, 0.1, …, 1, and with a budget also the fractions that
  /// leave exactly k blocks' worth of offloaded bytes for copy buffers (k = ½, 1, 2, 3): the budget
  /// buys residency or buffer depth, and those are the trades worth having.
  std::vector<double> auto_fractions(const PolicyConfig& config) const {
    std::vector<double> f;
    for (int k = 0; k <= 10; ++k) f.push_back(k / 10.0);
    if (config.memory_budget_bytes) {
      double total = 0;
      for (const auto& b : cost_.blocks) total += b.weight_bytes;
      const double mean = total / double(cost_.blocks.size());
      const double room = *config.memory_budget_bytes - cost_.activation_bytes - gathered_bytes_ - cost_.non_block_weight_bytes;
      for (double k : {0.5, 1.0, 2.0, 3.0}) {
        // resident R·total + buffer k·(1−R)·mean = room
        const double r = (room - k * mean) / (total - k * mean);
        if (r > 0 && r < 1) f.push_back(std::floor(r * 1000) / 1000);
      }
    }
    std::sort(f.begin(), f.end());
    f.erase(std::unique(f.begin(), f.end()), f.end());
    return f;
  }

  /// What the plan of `config` is built from (its chunk size and simulated steps are this planner's).
  PlanDecision decide(const PolicyConfig& config) const {
    std::optional<Choice> choice;
    if (config.resident_fraction) {
      choice = plan_fraction(config, *config.resident_fraction);
    } else {
      std::optional<Choice> fastest;
      const std::vector<double> fractions = auto_fractions(config);
      std::size_t fastest_at = 0;
      // First with placements the copy volume rules out skipped (plan_fraction): the fraction
      // chosen within the bound is the same as in full.
      bool skipped = false;
      for (std::size_t k = 0; k < fractions.size(); ++k) {
        auto c = plan_fraction(config, fractions[k], true, &skipped);
        if (!c) continue;
        if (c->estimate.step_time_s <= kAutoWithinBound * critical_path_s_) {
          choice = std::move(c);
          break;
        }
        if (!fastest || c->estimate.step_time_s < fastest->estimate.step_time_s) fastest = std::move(c), fastest_at = k;
      }
      if (!choice && skipped) {
        // None is within the bound, and the fastest is wanted (ties: the first): each fraction is
        // estimated in full, from the most resident down (the likely fastest first), and one whose
        // every placement's volume bound exceeds the fastest so far by more than kAutoSkipMargin is
        // left out: its plan's estimate is one of its placements', each at least that bound, so it
        // is slower than the fastest.
        fastest.reset();
        fastest_at = 0;
        for (std::size_t k = fractions.size(); k-- > 0;) {
          if (fastest && fraction_volume_bound_s(config, fractions[k]) * (1 - 1e-9) >
                             fastest->estimate.step_time_s * (1 + kAutoSkipMargin)) {
            ++planner_cache_stats.estimate_bounded;
            continue;
          }
          auto c = plan_fraction(config, fractions[k]);
          if (!c) continue;
          // From the top down, an equal one is earlier on the list: it wins the tie.
          if (!fastest || c->estimate.step_time_s <= fastest->estimate.step_time_s) fastest = std::move(c), fastest_at = k;
        }
      }
      // None within reach of the bound: the fastest fraction's neighbours on the tried grid are
      // up to 0.1 away; try the midpoints on either side (ties: the one tried first).
      if (!choice && fastest) {
        for (std::size_t side : {std::size_t(0), std::size_t(1)}) {
          if (side == 0 ? fastest_at == 0 : fastest_at + 1 >= fractions.size()) continue;
          const double mid = std::floor(500 * (fractions[fastest_at] + fractions[side == 0 ? fastest_at - 1 : fastest_at + 1])) / 1000;
          auto c = plan_fraction(config, mid);
          if (c && c->estimate.step_time_s < fastest->estimate.step_time_s) fastest = std::move(c);
        }
      }
      if (!choice) choice = std::move(fastest);
    }
    if (!choice)
      throw InputError("", "/policy/memory_budget_gib",
                       "no chunkflow plan fits a budget of " + std::to_string(config.memory_budget_bytes.value_or(0) / kGiB) +
                           " GiB per GPU (resident weights, activations and at least the chunks one linear reads)");
    CopySchedule sched;
    sched.pieces = choice->estimate.pieces;
    sched.slot_count = choice->slot_count;
    sched.slot_bytes = choice->slot_bytes;
    double block_bytes = 0;
    for (const auto& b : cost_.blocks) block_bytes += b.weight_bytes;
    PlanInfo info;
    info.lookahead = config.lookahead;
    info.chunk_bytes = chunk_bytes_;
    info.resident_fraction = block_bytes > 0 ? choice->residency.resident_block_bytes / block_bytes : 1.0;
    info.resident_fraction_auto = !config.resident_fraction.has_value();
    info.residency = sched.pieces.empty() ? "all" : choice->residency.name;
    for (const auto& p : sched.pieces) info.share_cap_bytes_per_s = std::max(info.share_cap_bytes_per_s, p.rate_cap_bytes_per_s);
    info.windows_yield = choice->estimate.yield;
    info.windows_share = choice->estimate.share;
    info.windows_ignore = choice->estimate.ignore;
    info.estimated_step_time_s = choice->estimate.step_time_s;
    return {std::move(sched), std::move(info)};
  }

  /// True when this planner was made for these inputs (every field equal).
  bool made_for(const Workload& w, const NodeSpec& node, int steps, double chunk_bytes) const {
    return steps == steps_ && chunk_bytes == chunk_bytes_ && w == w_ && node == node_;
  }

 private:
  /// A placement of a fraction: its residency, chunks and slot size (no configuration in them).
  struct Placed {
    Residency residency;
    std::vector<Chunk> chunks;
    double slot_bytes = 0;
    std::vector<double> step_prefix_bytes;  ///< bytes of a step's first k chunks, k = 0..n (volume_bound_s)
    bool compute_readers = true;            ///< every chunk's last reader is a compute op
    std::pair<double, int> key;     ///< its own (fraction, placement)
    std::pair<double, int> shares;  ///< the first (fraction, placement) made with the same chunks (itself if none)
  };
  /// A lower bound on the step time of every closed-loop pass (so of best_schedule's estimate) over
  /// `placed`'s chunks with `slot_count` slots, from the copy volume of the last simulated step s
  /// (0: no bound; with a chunk some collective reads last, FSDP's all-gathers, there is none).
  /// Every compute op of step s starts after E_{s−1}, the end of step s−1's last compute op (one
  /// compute lane, in order), and the step time is E_s − E_{s−1}. Step s's chunks land by E_s (each
  /// before its readers, compute ops of step s). Its piece k from the S-th on waits for the slot of
  /// piece k − S, a piece of step s too, whose last reader ends after E_{s−1}: so at most S of its
  /// pieces, within its first min(S, n) chunks, move before E_{s−1}. The rest, at least the step's
  /// bytes V_s less those chunks' bytes B_S, in at least n − S pieces each paying the H2D latency,
  /// move after it on the one copy lane at most at the fastest rate a copy gets (alone or beside any
  /// collective, in any window mode): E_s − E_{s−1} ≥ (V_s − B_S) / r_max + max(0, n − S)·latency.
  /// With one simulated step, E_{−1} = 0 and nothing moves before it.
  /// Second, by lane order (deep slots, where the first form gives nothing): every piece of step s
  /// follows, on the lane, every piece of the steps before; let t* be the end of the last of those.
  /// All of step s's copies run after t*, so E_s ≥ t* + V_s / r_max + n·latency. By t* every chunk
  /// of steps < s has landed, so from t* on, the ops of steps < s wait only for each other: the one
  /// that ends last ends after t* by at most the durations of a chain of them, at most
  /// before_last_step_max_s_ (every position of steps 0..s−1 at its longest: compute ops as
  /// modelled stretched by both calibrated slowdowns, each collective at its slowest in any window
  /// mode). So
  /// E_s − E_{s−1} ≥ V_s / r_max + n·latency − before_last_step_max_s_. The bound is the larger.
  double volume_bound_s(const Placed& placed, int slot_count) const {
    if (!placed.compute_readers || placed.step_prefix_bytes.size() < 2) return 0;
    const std::size_t n = placed.step_prefix_bytes.size() - 1;  // chunks per step
    const std::size_t before = steps_ >= 2 ? std::min(n, std::size_t(std::max(slot_count, 0))) : 0;
    const double by_slots = (placed.step_prefix_bytes[n] - placed.step_prefix_bytes[before]) / copy_fastest_bytes_per_s_ +
                            double(n - before) * node_.h2d_latency_s;
    const double by_lane = placed.step_prefix_bytes[n] / copy_fastest_bytes_per_s_ + double(n) * node_.h2d_latency_s -
                           before_last_step_max_s_;
    return std::max(by_slots, by_lane);
  }

  /// The least volume_bound_s over the placements of `fraction` that give `config` a plan to
  /// estimate (0 when everything is resident; +∞ when no placement has a slot).
  double fraction_volume_bound_s(const PolicyConfig& config, double fraction) const {
    double least = kInf;
    for (Placement placement : {Placement::prefix, Placement::strided, Placement::balanced}) {
      const Placed& placed = placed_at(fraction, placement);
      if (placed.chunks.empty()) return 0;
      const int slot_count = slots(config, placed.residency, placed.chunks, placed.slot_bytes);
      if (slot_count >= 1) least = std::min(least, volume_bound_s(placed, slot_count));
    }
    return least;
  }

  const Placed& placed_at(double fraction, Placement placement) const {
    const std::pair<double, int> key{fraction, static_cast<int>(placement)};
    auto it = placed_.find(key);
    if (it != placed_.end()) return it->second;
    Placed p;
    p.residency = residency(fraction, placement);
    p.chunks = chunks(p.residency);
    for (const Chunk& x : p.chunks) p.slot_bytes = std::max(p.slot_bytes, x.bytes);
    p.step_prefix_bytes.push_back(0);
    for (const Chunk& x : p.chunks) {
      if (x.step == 0) p.step_prefix_bytes.push_back(p.step_prefix_bytes.back() + x.bytes);
      if (layout_.at(x.last_reader % n_).collective) p.compute_readers = false;
    }
    p.key = p.shares = key;
    // best_schedule reads the chunks and the slot count alone: placements (or fractions) that cut
    // the same chunks (nothing resident in any placement, a prefix that tensor alignment rounds to
    // another fraction's, strided blocks that round alike) have the same estimates.
    for (const auto& [k, q] : placed_)
      if (q.shares == k && q.chunks == p.chunks) {
        p.shares = k;
        break;
      }
    kept_bytes_ += double(p.chunks.size() * sizeof(Chunk));
    return placed_.emplace(key, std::move(p)).first->second;
  }
  /// best_schedule(placed's chunks, slot_count), computed once per chunk list (unless
  /// planner_exhaustive: once per (fraction, placement)).
  const Estimate& estimate_at(const Placed& placed, const std::vector<Chunk>& chunks, int slot_count) const {
    const std::pair<double, int>& owner = planner_exhaustive ? placed.key : placed.shares;
    const std::tuple<double, int, int> key{owner.first, owner.second, slot_count};
    auto it = estimates_.find(key);
    if (it != estimates_.end()) {
      ++planner_cache_stats.estimate_hits;
      if (owner != placed.key) ++planner_cache_stats.estimate_shared;
      return it->second;
    }
    ++planner_cache_stats.estimate_misses;
    Estimate e = best_schedule(chunks, slot_count, volume_bound_s(placed, slot_count));
    kept_bytes_ += double(e.pieces.size() * sizeof(CopyPiece) + 2 * e.window_start_s.size() * sizeof(double));
    return estimates_.emplace(key, std::move(e)).first->second;
  }

 public:
  /// Bytes held by the memo (placements and estimates), for the cache's limit.
  double kept_bytes() const { return kept_bytes_; }

 private:
  const Workload w_;        ///< owned: the planner outlives the call that made it (planner cache)
  const NodeSpec node_;
  const double chunk_bytes_;
  ForwardCost cost_;
  ProgramLayout layout_;
  int n_ = 0, steps_ = 0;
  std::vector<double> duration_s_;     ///< per position within a step (collective: alone)
  std::vector<double> rest_compute_s_;  ///< per position: Σ duration_s_ of the step's compute positions after it
  int last_compute_position_ = 0;       ///< the step's last compute position
  std::vector<double> block_time_s_;   ///< per block: its positions' durations (compute + collectives alone)
  WorkloadLinkModel link_;             ///< every collective kind on its groups and routes
  std::vector<Collective> collectives_;  ///< distinct collectives of a step
  std::vector<int> collective_g_;      ///< global positions of the collectives
  double gathered_bytes_ = 0;          ///< FSDP: the most gathered shard bytes held at once (else 0)
  double critical_path_s_ = 0;         ///< one step of the program with no copies (compute and uncontended
                                       ///< collectives, overlapped where the plan overlaps them)
  Estimate stall_free_;                ///< the program with no copies: what no schedule beats
  ModeRates mode_rates_[kWindowModes];  ///< per WindowMode
  /// Working arrays of run(), reused across its passes (one planner runs on one thread).
  struct Scratch {
    std::vector<double> start_s, end_s, landed_s, win_start_s, win_end_s, chunk_gap_s;
    std::vector<double> no_windows_s;  ///< +∞ per window: a pass without a prediction
    std::vector<int> piece_last_reader, piece_completes;
    std::vector<std::size_t> chunk_piece;  ///< lazy run: per chunk, the piece that completes it
    std::vector<double> piece_start_s, piece_end_s, piece_cap, piece_bytes, piece_ready_s;
  };
  mutable Scratch scratch_;
  double copy_alone_bytes_per_s_ = 0;
  double copy_fastest_bytes_per_s_ = 0;  ///< the fastest rate any copy gets (alone, or in any window mode)
  double before_last_step_max_s_ = 0;    ///< positions of steps 0..steps−2 at their longest (volume_bound_s)
  mutable std::map<std::pair<double, int>, Placed> placed_;
  mutable std::map<std::tuple<double, int, int>, Estimate> estimates_;
  mutable double kept_bytes_ = 0;
};

/// The planners of the most recent (workload, node, steps, chunk size) inputs, per thread: a
/// sweep's configurations around one chunk size (resident fractions, budgets, lookaheads) reuse one
/// planner and the estimates it kept. Keyed by every field of the inputs (Planner::made_for), so a
/// hit plans exactly as a fresh planner would (tests/test_policy.cpp checks it on random sequences).
/// A grid's policy axes run chunk size inside budget and lookahead (sim/grid.cpp), so consecutive
/// configurations cycle through its chunk sizes: the cache holds eight planners (a least recently
/// used cache smaller than the cycle would miss on every one of them: with four, the large grid's
/// five chunk sizes remade a planner every six configurations).
thread_local std::vector<std::unique_ptr<Planner>> planner_cache;  // most recent first

const Planner& cached_planner(const Workload& w, const NodeSpec& node, const PolicyConfig& config) {
  constexpr std::size_t kKept = 8;                      // planners per thread
  constexpr double kKeptBytes = 32.0 * 1024 * 1024;     // memo bytes per planner before it starts afresh
  constexpr double kKeptBytesAll = 128.0 * 1024 * 1024;  // memo bytes of this thread's planners together
  std::vector<std::unique_ptr<Planner>>& cache = planner_cache;
  // Least recently used planners go while the memos together hold more than kKeptBytesAll (the one
  // in front, about to be used, stays).
  auto trim = [&cache] {
    double all = 0;
    for (const auto& p : cache) all += p->kept_bytes();
    while (cache.size() > 1 && all > kKeptBytesAll) {
      all -= cache.back()->kept_bytes();
      cache.pop_back();
    }
  };
  for (std::size_t i = 0; i < cache.size(); ++i)
    if (cache[i]->made_for(w, node, config.steps, config.chunk_bytes)) {
      if (cache[i]->kept_bytes() > kKeptBytes) break;  // replaced below by a fresh one
      ++planner_cache_stats.planner_hits;
      std::rotate(cache.begin(), cache.begin() + std::ptrdiff_t(i), cache.begin() + std::ptrdiff_t(i) + 1);
      trim();
      return *cache.front();
    }
  auto planner = std::make_unique<Planner>(w, node, config.steps, config.chunk_bytes);  // throws before anything is kept
  ++planner_cache_stats.planner_misses;
  std::erase_if(cache, [&](const std::unique_ptr<Planner>& p) { return p->made_for(w, node, config.steps, config.chunk_bytes); });
  if (cache.size() == kKept) cache.pop_back();
  cache.insert(cache.begin(), std::move(planner));
  trim();
  return *cache.front();
}

class ChunkflowPolicy final : public OffloadPolicy {
 public:
  std::string name() const override { return "chunkflow"; }
  std::string description() const override {
    return "chunked prefetch planned from a closed-loop timeline: yields to, shares (rate-capped) or ignores each "
           "all-to-all window; residency placed where it hides most; plans to a memory budget";
  }
  PlanDecision decide(const Workload& w, const NodeSpec& node, const PolicyConfig& config) const override {
    return cached_planner(w, node, config).decide(config);
  }
};

}  // namespace

std::unique_ptr<OffloadPolicy> make_chunkflow_policy() { return std::make_unique<ChunkflowPolicy>(); }

void clear_chunkflow_planner_cache() { planner_cache.clear(); }

PlannerCacheStats chunkflow_planner_cache_stats() { return planner_cache_stats; }

void set_chunkflow_planner_exhaustive(bool on) { planner_exhaustive = on; }

}  // namespace chunkflow
