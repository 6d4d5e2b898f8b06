#pragma once
// Chrome Trace Event JSON writer and reader for a Timeline (Perfetto, chrome://tracing).
// Format: shared/reference/systems-and-hardware.md §7.
//
// Layout of a written file (keys of every object in sorted order except the top level, which is
// written in this order; one event per line):
//   {"context": {<Timeline::context>},
//    "chunkflow": {"ranks": R, "source": "...", "steps": S},
//    "displayTimeUnit": "ms",
//    "traceEvents": [
//      M events: process_name "rank <r>" (pid r) for r in [0, R) and for every other pid a row
//                uses; thread_name "compute"/"h2d"/"comm" (tid 0/1/2) per rank process;
//                for link samples, process_name "links" (pid = kLinksPid) and one thread_name
//                per link (tid 10, 11, ... in order of the link's first sample);
//      X events, one per row in row order: name = row name, cat = op kind, pid = rank,
//                tid = lane index, ts = start_s·1e6, dur = (end_s − start_s)·1e6 (µs),
//                args {block, bytes, deps, end_s, flop, op_id, start_s, step};
//      C events, one per memory sample in order: name "memory", pid = rank, ts = time_s·1e6,
//                args {"bytes": bytes}, plus an event-level key "time_s" (exact seconds);
//      X events, one per link sample in order: pid = kLinksPid, tid = the link's track, name =
//                the rate in GB/s ("25.00 GB/s", so it reads on the slice), cat "link",
//                args {bytes_per_s, end_s, start_s}]}
//
// Link throughput is written as X slices rather than C counters: a link sample is an interval
// with a constant rate, a slice keeps both ends exactly (counters would merge adjacent intervals
// and lose the end of the last one), and Perfetto shows the rate as the slice's label.
//
// Exact round trip: ts/dur are microseconds for the viewers, but seconds do not survive the
// ·1e6 and back, so the exact seconds travel alongside (args start_s/end_s, "time_s"); numbers
// are written in nlohmann's shortest round-trip form, so read_chrome_trace(write_chrome_trace(t))
// == t for every timeline with finite numbers.
#include <iosfwd>
#include <string>

#include "traces/timeline.hpp"

namespace chunkflow {

/// pid of the process that holds the link tracks (kept apart from rank pids 0..ranks−1).
inline constexpr int kLinksPid = 1000000;
/// tid of the first link track; lanes use tids 0, 1, 2.
inline constexpr int kFirstLinkTid = 10;

/// Writes `timeline` as Chrome Trace Event JSON (layout above) to `out`. Deterministic: the same
/// timeline gives byte-identical output. Throws std::invalid_argument naming the row, sample or
/// field when a number is not finite (JSON has no NaN/inf), and std::runtime_error when the
/// stream fails.
void write_chrome_trace(const Timeline& timeline, std::ostream& out);

/// Reads a trace written by write_chrome_trace back into a Timeline (rows, memory and link
/// samples in file order). `file_name` only labels errors. Events of other phases are ignored;
/// X events without args start_s/end_s take their times from ts/dur (µs). Throws
/// std::runtime_error "<file>: <JSON pointer>: <what was expected>, got <value>" on malformed
/// input, e.g. "x.json: /traceEvents/3/dur: expected a number, got \"1\"".
Timeline read_chrome_trace(std::istream& in, const std::string& file_name);

}  // namespace chunkflow
