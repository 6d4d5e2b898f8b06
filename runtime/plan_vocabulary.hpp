#pragma once
// The plan's vocabulary: the lanes of a rank and the kinds of op a StepPlan holds. It belongs to
// runtime/ (the plan defines it); traces/ imports it to label what an executor measured.
// Header-only so that traces/ needs no link dependency on runtime/.
#include <stdexcept>
#include <string>

namespace chunkflow {

/// Lanes of a rank: the CUDA streams of the harness, the serial resources of the simulator.
enum class Lane { compute, h2d, comm };
/// Op kinds of a plan.
enum class OpKind { compute, h2d, collective };

/// "compute", "h2d", "comm". Throws std::invalid_argument for a value outside the enum.
inline const char* to_string(Lane lane) {
  switch (lane) {
    case Lane::compute: return "compute";
    case Lane::h2d: return "h2d";
    case Lane::comm: return "comm";
  }
  throw std::invalid_argument("to_string(Lane): value " + std::to_string(static_cast<int>(lane)) + " is not a lane");
}

/// "compute", "h2d", "collective". Throws std::invalid_argument for a value outside the enum.
inline const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::compute: return "compute";
    case OpKind::h2d: return "h2d";
    case OpKind::collective: return "collective";
  }
  throw std::invalid_argument("to_string(OpKind): value " + std::to_string(static_cast<int>(kind)) +
                              " is not an op kind");
}

/// Inverse of to_string; throws std::invalid_argument for an unknown name.
inline Lane lane_from_string(const std::string& s) {
  if (s == "compute") return Lane::compute;
  if (s == "h2d") return Lane::h2d;
  if (s == "comm") return Lane::comm;
  throw std::invalid_argument("unknown lane \"" + s + "\" (expected compute, h2d or comm)");
}

/// Inverse of to_string; throws std::invalid_argument for an unknown name.
inline OpKind op_kind_from_string(const std::string& s) {
  if (s == "compute") return OpKind::compute;
  if (s == "h2d") return OpKind::h2d;
  if (s == "collective") return OpKind::collective;
  throw std::invalid_argument("unknown op kind \"" + s + "\" (expected compute, h2d or collective)");
}

}  // namespace chunkflow
