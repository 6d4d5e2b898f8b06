#pragma once
// Simulation outcomes remembered by plan decision (issue 12 §2), shared by `chunkflow sweep` and grid
// sweeps (sim/sweep.hpp run_sweep, sim/grid.hpp run_grid_config).
//
// A policy's decision (runtime/policy.hpp decide_plan: the copy schedule, and PlanInfo fields the
// plan only carries) fixes the plan: build_plan_from_schedule reads of it only the schedule, so two
// configurations that differ only in axes the planner did not act on (a memory budget that changes
// no slot, "auto" resolving to a listed fraction, a resident fraction of 1 that offloads nothing
// whatever the chunk size) build the same plan, op for op. run_decision builds, validates and
// simulates a decision the memo has not seen, and for one it has seen takes the op count, summary,
// bound, event count and memory verdict of the plan built before, with the row's info filled by the
// builder's own fill_schedule_info. Equality is checked on the whole encoded decision, not on a
// hash. tests/test_fast_paths.cpp compares every grid row and every sweep row with the full path.
#include <cstddef>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "model/workload.hpp"
#include "runtime/plan_builder.hpp"
#include "sim/bound.hpp"
#include "sim/executor.hpp"
#include "sim/fit.hpp"

namespace chunkflow {

/// What a row takes from building, validating and simulating a plan.
struct SimOutcome {
  StepSummary summary;
  StepBound bound;
  uint64_t events = 0;
  std::size_t ops = 0;    ///< the plan's op count
  MemoryVerdict verdict;  ///< memory_verdict of the plan at the simulated peak
};

/// Hits and misses of a memo so far (for reports and benchmarks).
struct DecisionMemoStats {
  int64_t hits = 0, misses = 0;
  std::size_t bytes = 0;  ///< heap bytes of the entries kept (encoded decisions, outcomes)
};

/// Simulation outcomes by encoded decision, least recently used dropped beyond kMaxBytes of entries
/// (keys, outcomes, their strings and the index): a grid enumerates configurations workload by
/// workload, so the plans a configuration can share sit a few hundred configurations apart at most,
/// and memory stays flat in the number of configurations. Thread-safe.
class DecisionMemo {
 public:
  static constexpr std::size_t kMaxBytes = std::size_t(64) << 20;

  /// The outcome kept under `key` (and marks it most recently used). When another thread has
  /// claimed `key` and is simulating it, waits for its outcome (the two would be equal); when no
  /// thread has, claims `key` for the caller and returns nullopt: the caller then calls insert()
  /// with the outcome, or abandon() if it has none (an exception), so that waiters go on.
  std::optional<SimOutcome> find_or_claim(const std::string& key);
  /// As find_or_claim, but never waits: when another thread is simulating `key` now, returns
  /// nullopt with `*busy` set and claims nothing (the caller can do other work and come back).
  /// Otherwise `*busy` is false and the result is find_or_claim's.
  std::optional<SimOutcome> find_or_claim_unless_busy(const std::string& key, bool* busy);
  /// Keeps `outcome` under `key` and releases the caller's claim on it.
  void insert(const std::string& key, const SimOutcome& outcome);
  /// Releases the caller's claim on `key` without an outcome (a waiter then claims it).
  void abandon(const std::string& key);
  DecisionMemoStats stats();

  /// The hash the memo files `key` under: std::hash of the whole key up to kHashedWhole bytes;
  /// beyond, of its length, its first and last kHashedWhole / 2 bytes and kHashSamples 8-byte words
  /// at evenly spaced offsets. A 1 MiB-chunk decision of the main job encodes to MBs and a miss
  /// hashes it several times (find, claim, insert), ~2 % of the default sweep's instructions
  /// (callgrind, 2026-11-27); equality is always decided on the whole key, so a sampled hash only
  /// makes collisions likelier, never a wrong hit. On an MB key the samples are ~60 pieces apart, so
  /// two decisions that differ in a few pieces at equal length (rate caps) may share a hash; each
  /// look-up then compares the whole keys (memcmp, under the lock; at most kMaxBytes of them).
  static std::size_t key_hash(std::string_view key);
  static constexpr std::size_t kHashedWhole = 4096, kHashSamples = 512;

 private:
  struct KeyHash {
    std::size_t operator()(const std::string& key) const { return key_hash(key); }
  };
  struct Entry {
    std::size_t hash;
    std::string key;
    SimOutcome outcome;
  };
  static std::size_t entry_bytes(const Entry& e);
  /// With m_ held: the outcome kept under `key` (marked most recently used, a hit counted), or null.
  const SimOutcome* find_locked(const std::string& key, std::size_t hash);
  std::mutex m_;
  std::condition_variable claim_released_;
  std::unordered_set<std::string, KeyHash> claimed_;  ///< keys a thread is simulating now
  std::list<Entry> entries_;
  std::unordered_multimap<std::size_t, std::list<Entry>::iterator> index_;
  std::size_t bytes_ = 0;
  int64_t hits_ = 0, misses_ = 0;
};

/// Encodes what build_plan_from_schedule reads of a decision besides the policy's PlanInfo fields
/// (which it copies into the plan and validate() and simulate() do not read): `workload` (an index
/// the caller keeps for its workload and node pair), the simulated steps, the slot count and size as
/// the builder takes them (0 without pieces), whether copies are named by block, and per piece its
/// step, block, chunk index, offset, bytes, rate cap and `after` position, into `out` (reused: no
/// allocation once grown). Equal encodings give equal plans, op for op.
void encode_decision(const CopySchedule& schedule, int workload, int steps, std::string& out);

/// A decided configuration's row content: the plan's info and what simulating it gave.
struct DecisionRun {
  PlanInfo info;
  SimOutcome outcome;
};

/// Runs decision `d` of `steps` forwards of `w` (forward cost `cost` = forward_cost(w)) on `node`:
/// with `memo` null or the decision not in it, builds the plan (build_plan_from_schedule), validates
/// it (runtime/step_plan.hpp: every plan is checked before it runs), simulates it with `options` and
/// keeps the outcome under (decision, `workload_key`); otherwise takes the kept outcome and fills the
/// info as the builder would (fill_schedule_info). `workload_key` must identify (w, node) among the
/// calls sharing `memo`. Throws what build_plan_from_schedule, validate and simulate throw.
DecisionRun run_decision(const Workload& w, const NodeSpec& node, const ForwardCost& cost, int workload_key, int steps,
                         PlanDecision d, const SimOptions& options, DecisionMemo* memo);

/// As run_decision with a memo, but when another thread is simulating an equal decision now, returns
/// nullopt at once and leaves `d` as it was, instead of waiting for that thread's outcome: the
/// caller runs other configurations and comes back to this one (run_sweep does), when the outcome
/// is most likely kept. Otherwise moves from `d` and returns run_decision's result.
std::optional<DecisionRun> run_decision_unless_busy(const Workload& w, const NodeSpec& node, const ForwardCost& cost,
                                                    int workload_key, int steps, PlanDecision& d,
                                                    const SimOptions& options, DecisionMemo& memo);

}  // namespace chunkflow
