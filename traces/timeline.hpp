#pragma once
// Timeline: what an executor (simulator or hardware harness) returns for a StepPlan. Rows carry
// the plan's op ids so prediction and measurement line up op by op (shared/DESIGN.md).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "runtime/plan_vocabulary.hpp"

namespace chunkflow {

/// One executed op.
struct TimelineRow {
  int op_id = 0;
  std::string name;          ///< the plan's op name, e.g. "s1.b03.ffn.0"
  OpKind kind = OpKind::compute;
  Lane lane = Lane::compute;
  int rank = 0;
  int step = 0;              ///< denoising step the op belongs to
  int block = -1;            ///< -1 when not tied to a block
  double start_s = 0;        ///< from the run's common start
  double end_s = 0;
  double bytes = 0;          ///< bytes moved (h2d: chunk bytes; collective: per-rank buffer)
  double flop = 0;
  std::vector<int> deps;     ///< op ids this op waited on (the plan's dependencies, not lane order)

  bool operator==(const TimelineRow&) const = default;  ///< exact, field by field
};

/// Memory in use on a rank after an event, in bytes.
struct MemorySample {
  int rank = 0;
  double time_s = 0;
  double bytes = 0;

  bool operator==(const MemorySample&) const = default;
};

/// A link's throughput over an interval (simulated traces only): one track per link direction.
struct LinkSample {
  std::string link;          ///< e.g. "pcie.gpu0.h2d"
  double start_s = 0;
  double end_s = 0;
  double bytes_per_s = 0;

  bool operator==(const LinkSample&) const = default;
};

struct Timeline {
  std::string source;                    ///< "simulator" or "hardware"
  std::vector<TimelineRow> rows;         ///< sorted by op_id
  std::vector<MemorySample> memory;      ///< time-ordered per rank
  std::vector<LinkSample> links;         ///< simulator only
  std::map<std::string, std::string> context;  ///< provenance (device, versions, command, date)
  int steps = 0;                         ///< denoising steps executed
  int ranks = 0;

  bool operator==(const Timeline&) const = default;  ///< exact (used by the trace round trip)
};

/// Summary of the last step of a timeline (the steady-state step after the first ones' cold
/// start). All per-rank figures are the maximum over ranks. Definitions (s = steps − 1; "op of
/// step s" means row.step == s; "compute op" means kind == compute; times in seconds):
///  - step_time_s = E(s) − E(s−1), E(k) = max over ranks of the last end_s of a compute op of
///    step k; E(−1) = 0, so a one-step run gives its whole span from the common start 0 to its
///    last compute end. E(s−1) is also 0 when step s−1 has no compute op.
///  - compute/h2d/comm_time_s: per (rank, lane), the length of the union of [start_s, end_s] of
///    the ops of step s on that lane (overlapping ops count once); max over ranks.
///  - collective_time_s: per rank, Σ (end_s − start_s) of collective ops of step s; max over ranks.
///  - h2d_bytes: per rank, Σ bytes of h2d ops of step s; max over ranks.
///  - prefetch_stall_s: for each compute op c of step s on rank r:
///      other_ready = max(end of the op before c on c's lane of rank r, ordered by
///                        (start_s, end_s, op_id); end of every non-h2d dep of c; 0),
///      h2d_ready   = max end of c's h2d deps (no h2d dep: no stall),
///      stall(c)    = max(0, min(c.start_s, h2d_ready) − other_ready),
///    i.e. the part of c's wait that only the H2D copies explain; Σ per rank, max over ranks.
///    Deps naming an op id absent from the timeline (e.g. a plan's free ops) are ignored.
///  - peak_memory_bytes: max over all memory samples of all ranks and steps (0 without samples).
struct StepSummary {
  int step = 0;                    ///< which step is summarized (steps − 1)
  double step_time_s = 0;          ///< last compute end of `step` − last compute end of `step`−1
                                   ///< (the whole run when steps == 1)
  double compute_time_s = 0;       ///< busy time of the compute lane in the step
  double h2d_time_s = 0;           ///< busy time of the h2d lane on ops of the step
  double comm_time_s = 0;          ///< busy time of the comm lane in the step
  double collective_time_s = 0;    ///< Σ collective op durations in the step
  double prefetch_stall_s = 0;     ///< Σ over the step's compute ops of the time they waited for
                                   ///< H2D deps beyond their other deps and lane predecessor
  double h2d_bytes = 0;            ///< bytes of the step's H2D ops (per rank)
  double peak_memory_bytes = 0;    ///< max memory sample over the whole run
};

/// Computes the summary from rows and memory samples (works for both executors: stall uses the
/// rows' deps and kinds); definitions above. Throws std::invalid_argument on an empty timeline
/// (no rows), on steps < 1, when step steps − 1 has no compute op, and on duplicate op ids.
StepSummary summarize(const Timeline& timeline);

/// For tests: while set, this thread's summarize() (and the simulator's summary without rows,
/// SimOptions::record_rows) sorts every lane's ops and every list of intervals. Unset (the
/// default), a list already in order is not sorted: its order is the unique sorted one (lane ops by
/// (start_s, end_s, op_id), distinct op ids; intervals by (start, end)), unless a time is NaN.
void set_summarize_exhaustive(bool on);

/// Length in seconds of the union of the intervals [start_s, end_s] (empty or reversed
/// intervals count 0). Used for lane busy times.
double union_length_s(std::vector<std::pair<double, double>> intervals_s);

}  // namespace chunkflow
