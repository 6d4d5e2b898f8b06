// Simulation outcomes by plan decision; see decision_memo.hpp.
#include "sim/decision_memo.hpp"

#include <cstring>
#include <functional>
#include <string_view>

#include "runtime/step_plan.hpp"

namespace chunkflow {

std::size_t DecisionMemo::key_hash(std::string_view key) {
  const std::size_t n = key.size();
  if (n <= kHashedWhole) return std::hash<std::string_view>{}(key);
  const std::size_t half = kHashedWhole / 2;
  uint64_t h = std::hash<std::string_view>{}(key.substr(0, half)) ^ (std::hash<std::string_view>{}(key.substr(n - half)) * 3);
  h ^= uint64_t(n) * 0x9E3779B97F4A7C15ull;
  const std::size_t stride = (n - sizeof(uint64_t)) / kHashSamples;  // ≥ 7: n > 4096
  for (std::size_t i = 0; i < kHashSamples; ++i) {
    uint64_t w;
    std::memcpy(&w, key.data() + i * stride, sizeof w);
    h = (((h << 5) | (h >> 59)) ^ w) * 0x9E3779B97F4A7C15ull;
  }
  return std::size_t(h ^ (h >> 32));
}

const SimOutcome* DecisionMemo::find_locked(const std::string& key, std::size_t hash) {
  auto range = index_.equal_range(hash);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second->key == key) {
      entries_.splice(entries_.begin(), entries_, it->second);  // most recently used first
      ++hits_;
      return &it->second->outcome;
    }
  return nullptr;
}

std::optional<SimOutcome> DecisionMemo::find_or_claim(const std::string& key) {
  const std::size_t h = key_hash(key);
  std::unique_lock lock(m_);
  for (;;) {
    if (const SimOutcome* o = find_locked(key, h)) return *o;
    if (!claimed_.count(key)) break;
    claim_released_.wait(lock);  // another thread simulates this decision now: take its outcome
  }
  claimed_.insert(key);
  ++misses_;
  return std::nullopt;
}

std::optional<SimOutcome> DecisionMemo::find_or_claim_unless_busy(const std::string& key, bool* busy) {
  const std::size_t h = key_hash(key);
  std::lock_guard lock(m_);
  *busy = false;
  if (const SimOutcome* o = find_locked(key, h)) return *o;
  if (claimed_.count(key)) {
    *busy = true;
    return std::nullopt;
  }
  claimed_.insert(key);
  ++misses_;
  return std::nullopt;
}

void DecisionMemo::insert(const std::string& key, const SimOutcome& outcome) {
  // Waiters are woken on every way out, an allocation failure below included (the claim is gone
  // by then: a waiter claims the key itself). The lock, made after, is released before.
  struct NotifyOnExit {
    std::condition_variable& cv;
    ~NotifyOnExit() { cv.notify_all(); }
  } notify{claim_released_};
  const std::size_t h = key_hash(key);
  {
    std::lock_guard lock(m_);
    // The claim's copy of the key becomes the entry's (one copy of an MB key per miss, not two).
    auto claim = claimed_.extract(key);
    entries_.push_front(Entry{h, claim ? std::move(claim.value()) : key, outcome});
    try {
      index_.emplace(h, entries_.begin());
    } catch (...) {  // not indexed: not kept (the byte count stays that of the indexed entries)
      entries_.pop_front();
      throw;
    }
    bytes_ += entry_bytes(entries_.front());
    while (bytes_ > kMaxBytes && entries_.size() > 1) {
      const Entry& last = entries_.back();
      auto r = index_.equal_range(last.hash);
      for (auto it = r.first; it != r.second; ++it)
        if (it->second == std::prev(entries_.end())) {
          index_.erase(it);
          break;
        }
      bytes_ -= entry_bytes(last);
      entries_.pop_back();
    }
  }
}

void DecisionMemo::abandon(const std::string& key) {
  {
    std::lock_guard lock(m_);
    claimed_.erase(key);
  }
  claim_released_.notify_all();
}

DecisionMemoStats DecisionMemo::stats() {
  std::lock_guard lock(m_);
  return {hits_, misses_, bytes_};
}

/// Heap bytes an entry holds: its list node, its index node, its strings' buffers.
std::size_t DecisionMemo::entry_bytes(const Entry& e) {
  return sizeof(Entry) + 2 * sizeof(void*) + sizeof(std::size_t) + 4 * sizeof(void*) + e.key.capacity() +
         e.outcome.bound.link_resource.capacity() + e.outcome.bound.binding.capacity() +
         e.outcome.verdict.does_not_fit_reason.capacity();
}

namespace {

/// Writes v as a zigzag LEB128 varint at `at` (small integers, negative ones too, take one byte);
/// returns the end. At most 10 bytes.
char* put_varint(char* at, int64_t v) {
  uint64_t z = (uint64_t(v) << 1) ^ uint64_t(v >> 63);
  while (z >= 0x80) {
    *at++ = char(z | 0x80);
    z >>= 7;
  }
  *at++ = char(z);
  return at;
}
char* put_double(char* at, double v) {
  std::memcpy(at, &v, sizeof v);
  return at + sizeof v;
}

}  // namespace

void encode_decision(const CopySchedule& schedule, int workload, int steps, std::string& out) {
  const std::size_t np = schedule.pieces.size();
  out.resize(4 * 10 + 8 + 1 + np * (4 * 10 + 3 * 8));  // an upper bound: written through a pointer
  char* at = out.data();
  for (int64_t v : {int64_t(workload), int64_t(steps), int64_t(np), int64_t(np == 0 ? 0 : schedule.slot_count)})
    at = put_varint(at, v);
  at = put_double(at, np == 0 ? 0.0 : schedule.slot_bytes);
  *at++ = char(schedule.whole_block_names ? 1 : 0);
  for (const CopyPiece& c : schedule.pieces) {
    for (int v : {c.step, c.block, c.chunk, c.after_position}) at = put_varint(at, v);
    for (double v : {c.offset_bytes, c.bytes, c.rate_cap_bytes_per_s}) at = put_double(at, v);
  }
  out.resize(std::size_t(at - out.data()));
}

namespace {

/// run_decision once the memo was asked: `o` is the outcome kept under `key`, or nullopt when the
/// caller holds the claim on `key` (or has no memo).
DecisionRun finish_decision(const Workload& w, const NodeSpec& node, const ForwardCost& cost, int steps, PlanDecision d,
                            const SimOptions& options, DecisionMemo* memo, const std::string& key,
                            std::optional<SimOutcome> o) {
  DecisionRun out;
  if (!o) {  // a decision not seen yet (or dropped): the full path, under this thread's claim
    try {
      StepPlan plan = build_plan_from_schedule(w, node, steps, d.schedule, std::move(d.info), options.record_op_names);
      std::vector<CopyPiece>().swap(d.schedule.pieces);  // built: its MBs go to validate's and the run's arrays
      SimOptions checked = options;
      checked.rank_copy_ops = validate(plan);  // every plan is checked before it runs (runtime/step_plan.hpp)
      const SimResult r = simulate(plan, node, checked);
      out.outcome = SimOutcome{r.summary, r.bound, r.events, plan.ops.size(),
                               memory_verdict(plan, node, r.summary.peak_memory_bytes)};
      out.info = std::move(plan.info);
    } catch (...) {
      if (memo) memo->abandon(key);
      throw;
    }
    if (memo) memo->insert(key, out.outcome);
  } else {  // the plan is the one built before; its info is this decision's, filled as the builder does
    out.outcome = std::move(*o);
    out.info = std::move(d.info);
    fill_schedule_info(w, node, steps, d.schedule, cost, out.info);
  }
  return out;
}

}  // namespace

DecisionRun run_decision(const Workload& w, const NodeSpec& node, const ForwardCost& cost, int workload_key, int steps,
                         PlanDecision d, const SimOptions& options, DecisionMemo* memo) {
  thread_local std::string key;  // reused: no allocation once grown
  std::optional<SimOutcome> o;
  if (memo) {
    encode_decision(d.schedule, workload_key, steps, key);
    o = memo->find_or_claim(key);
  }
  return finish_decision(w, node, cost, steps, std::move(d), options, memo, key, std::move(o));
}

std::optional<DecisionRun> run_decision_unless_busy(const Workload& w, const NodeSpec& node, const ForwardCost& cost,
                                                    int workload_key, int steps, PlanDecision& d,
                                                    const SimOptions& options, DecisionMemo& memo) {
  thread_local std::string key;
  encode_decision(d.schedule, workload_key, steps, key);
  bool busy = false;
  std::optional<SimOutcome> o = memo.find_or_claim_unless_busy(key, &busy);
  if (busy) return std::nullopt;
  return finish_decision(w, node, cost, steps, std::move(d), options, &memo, key, std::move(o));
}

}  // namespace chunkflow
