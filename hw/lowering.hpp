#pragma once
// StepPlan → hw::Program: stream/event mapping, weight placement in the resident arena and the
// chunk slots, the harness' dataflow (which buffers each op reads and writes), and a check that
// the plan's dependencies order every cross-stream buffer reuse. Host-only (no CUDA headers), so
// the CPU tests (tests/hw/) exercise all of it with g++.
#include <cstdint>
#include <string>
#include <vector>

#include "hw/program.hpp"
#include "model/node.hpp"
#include "runtime/step_plan.hpp"

namespace chunkflow::hw {

/// How lower() turns an op's deps on other lanes of its rank into event waits (OpProgram::waits).
enum class CrossLaneWaits {
  /// One wait per other lane: on the dep enqueued last on that lane. A lane is one stream and runs
  /// its ops in enqueue order (Program::order), so that op's end implies the end of every earlier
  /// dep on the lane; the waits order exactly what every_dep orders, with fewer edges. The default
  /// since 2026-11-26: in graph-launched H100 runs, compute ops with two or more waits on the H2D
  /// stream that became ready while a copy ran waited for it (56 of 61), ops with one wait or none
  /// did not (1 of 2,554 waited, not for a copy); hw/README.md "Compute waiting on copies it does
  /// not read".
  latest_per_lane,
  /// One wait per cross-lane dep (the lowering before 2026-11-26; `chunkflow-hw run --waits every`).
  every_dep,
};

/// Options of lower().
struct LoweringOptions {
  CrossLaneWaits waits = CrossLaneWaits::latest_per_lane;
};

/// Lowers `plan` (built by build_plan for `node`) to the executor's program.
///
/// Stream mapping: lanes are streams, ops are enqueued in Program::order (topological over all
/// deps, ties by id); an op's deps on other lanes of the same rank become event waits
/// (OpProgram::waits) as `options.waits` says; same-lane deps become none (stream order). Either
/// way every dep ends before the op starts (stream order plus the waits). Cross-rank deps are
/// allowed only between collective ops (NCCL orders them). Weight placement and the dataflow are
/// described in hw/program.hpp and hw/README.md. Collectives: each op gets its kind's NCCL call,
/// group and bytes (hw/collective_calls.hpp nccl_call with S = the op's bytes) and the index of
/// its group in Program::comm_groups; FSDP all-gathers get the shard's pieces and a
/// gathered-block buffer, which the block's linears read.
///
/// Throws InputError for what the harness cannot run (dtype other than bf16), and
/// std::logic_error naming the op for plans it cannot execute safely: an H2D chunk outside its
/// block or bigger than a slot, offloaded weight bytes of a linear (or of an FSDP shard) held by
/// no H2D op it depends on, an FSDP linear with no all-gather of its block before it, a
/// non-Ulysses collective on the pcie-proxy backend, a rank whose collectives are not in the
/// plan's group order (NCCL could deadlock), a cross-rank dep between non-collective ops, a
/// dependency cycle, or a buffer reuse across streams (chunk slot, collective send/receive or
/// gathered-block buffer) that the deps do not order.
Program lower(const StepPlan& plan, const NodeSpec& node, const LoweringOptions& options = {});

/// Transitive predecessors of every op over all deps: bit j of row i is set when op i (transitively)
/// depends on op j. Rows are ops.size() bits rounded up to 64. Throws std::logic_error on a cycle.
class Ancestors {
 public:
  explicit Ancestors(const StepPlan& plan);
  /// Does `op` transitively depend on `before`?
  bool depends(int op, int before) const {
    return (bits_[size_t(op) * words_ + size_t(before) / 64] >> (before % 64)) & 1u;
  }
  const std::vector<int>& topological_order() const { return order_; }

 private:
  size_t words_ = 0;
  std::vector<uint64_t> bits_;
  std::vector<int> order_;
};

/// One access to a buffer shared between streams, for the hazard check.
struct BufferAccess {
  int op = 0;
  bool write = false;
};

/// Checks that the accesses to one buffer (in issue order, i.e. by op id) are ordered by the deps:
/// every access after a write depends on that write, and every write depends on the reads since
/// the previous write. Returns "" when ordered, else a message naming the two ops.
std::string check_buffer_order(const StepPlan& plan, const Ancestors& anc, const std::string& buffer,
                               std::vector<BufferAccess> accesses);

}  // namespace chunkflow::hw
