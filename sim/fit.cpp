// The fit verdict; see sim/fit.hpp.
#include "sim/fit.hpp"

#include <algorithm>
#include <cstdio>

namespace chunkflow {

double usable_gpu_memory_bytes(const NodeSpec& node) {
  return std::max(0.0, node.gpu_memory_bytes - kGpuRuntimeReserveBytes);
}

MemoryVerdict memory_verdict(const StepPlan& plan, const NodeSpec& node, double peak_memory_bytes) {
  MemoryVerdict v;
  v.usable_bytes = usable_gpu_memory_bytes(node);
  v.fits = peak_memory_bytes <= v.usable_bytes;
  if (v.fits) return v;
  constexpr double gib = 1024.0 * 1024.0 * 1024.0;
  const double weights = plan.info.resident_weight_bytes;
  const double attention = std::min(plan.cost.attention_workspace_bytes, plan.info.activation_bytes);
  const double activations = plan.info.activation_bytes - attention;
  const double prefetch = std::max(0.0, peak_memory_bytes - weights - plan.info.activation_bytes);
  const struct {
    const char* name;
    double bytes;
  } terms[] = {{"weights", weights}, {"activations", activations}, {"attention workspace", attention},
               {"prefetch buffers", prefetch}};
  double sum = 0;
  std::string figures;
  const char* over = "prefetch buffers";
  for (const auto& t : terms) {
    sum += t.bytes;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s %.2f GiB", figures.empty() ? "" : " + ", t.name, t.bytes / gib);
    figures += buf;
    if (sum > v.usable_bytes) {
      over = t.name;
      break;
    }
  }
  char tail[96];
  std::snprintf(tail, sizeof tail, " > usable %.2f GiB per GPU", v.usable_bytes / gib);
  v.does_not_fit_reason = std::string(over) + ": " + figures + tail;
  return v;
}

}  // namespace chunkflow
