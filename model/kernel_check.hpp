#pragma once
// The kernel model against kernels timed on a GPU: `chunkflow validate --kernels FILE` (issue 10's
// compute model, issue 13's first GPU contact). FILE is the JSON that scripts/measure_kernels.py
// writes (cuBLAS GEMMs, SDPA attention by backend, eager elementwise ops, each the median time of one
// PyTorch call between two CUDA events); every point is priced on a node with the same functions
// that price plan stages (model/kernel_model.hpp) and compared with its measured time.
//
// What a timed point holds beside the kernel: the event pair brackets ONE eager call on an otherwise
// idle GPU, so it also holds the host's dispatch of that call (the GPU idles from the first event
// until the launch arrives); in a forward pass the host runs ahead and that time overlaps. Predicted
// time of a point = the model's GPU time (kernel + node.compute_launch_s per kernel, as stages are
// priced) + kKernelHostDispatch_s per PyTorch call, with kKernelHostDispatchSpread_s of uncertainty.
// The H200 data bound it (traces/measured/nvidia-h200/kernels.json, 2026-11-26): the streaming
// elementwise series (residual add, GELU: least squares of time on bytes over four sizes) have
// intercepts of 9.7 and 10.7 µs, i.e. 5–6 µs beyond the 5 µs launch; the smallest GEMM
// (256×1536×1536: 21.7 µs for 1.2 GFLOP, ≥ 1.4 µs of math at 0.85 of peak) leaves at most 15 µs
// beyond kernel and launch for cuBLAS's heavier dispatch. 10 ± 5 µs spans 5–15 µs.
//
// A point is within its tolerance when |ln(predicted / measured)| ≤ ln(1 + tolerance) + calls ·
// kKernelHostDispatchSpread_s / measured. Tolerances by what prices the point (H200, 2026-11-26):
//  - GEMM 20 %: node.gemm_efficiency 0.8 sits between the H200's sustained (MSMF 0.72) and burst
//    (MAMF 0.85) rates of large GEMMs, a −6 %…+11 % band on its own (measured: up to 0.82 of peak,
//    the ≥ 3 ms GEMMs at 0.72–0.76); the first-order tile/wave/fill model adds the rest (worst seen:
//    predicted 0.86 of measured for 4096×5120×5120, 0.89 for 1536×1536 at 8192 and 32760 rows, 1.19
//    for 1024×8960×1536; 1.22 for 256×3072×9216, a 30 µs call within by the dispatch allowance);
//    the repeats' min–max spread is 1–19 % of the median above 100 µs.
//  - attention, cuDNN (priced as FA3) 20 %: the 11–100 ms kernels run at 564–582 TFLOP/s, the
//    S ≥ 4096 ones of ≤ 5.2 ms at 587–681: a band like the GEMMs' around node.attention_efficiency
//    0.6 (593 TFLOP/s); predicted 0.95–1.15 of measured.
//  - attention, flash (FlashAttention-2) 25 %: one point sets it: S = 1024 with 24 heads (192 CTAs on
//    264 slots, one partial wave) takes 85 µs where curve × wave fill + launch + dispatch gives 67 µs
//    (0.79); the model has no term for a lone wave's unhidden prologue and epilogue (one point: not
//    fitted). Every other flash point is predicted at 1.02–1.12 of measured.
//  - elementwise ops, each priced by its access class (residual add and GELU streaming, LayerNorm a
//    row reduction, x·(1 + scale) + shift two broadcast kernels and the [d]-sized 1 + scale) 20 %:
//    the broadcast rate is the H200's slope, so its large shapes fit by construction (1.00–1.05),
//    LayerNorm is priced at 2/3 of the streaming rate (three row transfers for two counted; 0.93 of
//    its H200 slope); the tolerance is set by the points a slope does not describe: LayerNorm with
//    1536-wide rows runs at 0.56 of 4.32 TB/s against 0.70 at 5120 (predicted 0.86 of measured) and
//    GELU-tanh's slope is 0.84 of the add's (priced as streaming: 0.87–1.07).
// On another GPU these tolerances are the H200's: a point outside says where the model or its
// per-GPU figures (catalogue, node efficiencies) do not carry over.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/node.hpp"
#include "model/architecture.hpp"

namespace chunkflow {

/// Host dispatch of one eager PyTorch call inside a timed point, s, and its uncertainty (see above).
inline constexpr double kKernelHostDispatch_s = 10e-6;
inline constexpr double kKernelHostDispatchSpread_s = 5e-6;

/// How the model counts one elementwise op that scripts/measure_kernels.py times, per element of its
/// (tokens × dim) bf16 activation, as model/architecture.cpp counts the eager ops: LayerNorm without
/// affine (read + write 4 B, a row reduction, 1 kernel), GELU-tanh (4 B, streaming, 1), the residual
/// add (reads two, writes one: 6 B, streaming, 1) and the adaLN modulation x·(1 + scale) + shift
/// (two full-size broadcast kernels of 4 B each after the [d]-sized 1 + scale: 8 B, 3 kernels).
/// Throws InputError(file, field, ...) for an op name it does not know, listing the known ones.
ElementwiseOp measured_elementwise_op(const std::string& name, const std::string& file = "",
                                      const std::string& field = "op");

/// One timed point and its prediction.
struct KernelPoint {
  std::string kind;       ///< "gemm", "attention" or "elementwise"
  std::string shape;      ///< "m×k×n", "<backend> B=1 H=24 S=4096 hd=128", "<op> tokens×dim"
  std::string priced_as;  ///< "gemm", "fa3", "fa2", "streaming", "row_reduction", "broadcast"
  double measured_s = 0;
  double predicted_s = 0;  ///< model GPU time + calls · kKernelHostDispatch_s
  int calls = 1;           ///< PyTorch calls (host dispatches) in the timed call
  double tolerance = 0;    ///< relative; see the header comment
  bool within = false;     ///< |ln(predicted/measured)| ≤ ln(1+tolerance) + calls·spread/measured
};

/// Least squares of an elementwise op's time on its counted bytes over its sizes (≥ 2 distinct):
/// t = intercept_s + bytes / measured_bytes_per_s, against the model's rate of the op's class on the
/// node (elementwise_bytes_per_s). model/kernel_model.hpp predicts the broadcast rate of a GPU from
/// its SMs and clock and the row-reduction rate from its DRAM bandwidth; this slope measures them.
struct ElementwiseRate {
  std::string op;            ///< layer_norm, gelu_tanh, residual_add, modulate
  std::string access_class;  ///< the class the model prices its bytes at
  int points = 0;
  double measured_bytes_per_s = 0;  ///< 1 / slope (0 when the slope is not positive)
  double intercept_s = 0;
  double model_bytes_per_s = 0;
};

struct KernelCheck {
  std::string gpu_name;  ///< context.gpu_name of the file ("" when absent)
  int sm_count = 0;      ///< context.sm_count of the file (0 when absent)
  std::vector<KernelPoint> points;      ///< in file order: gemm, attention, elementwise
  std::vector<ElementwiseRate> rates;   ///< one per elementwise op with ≥ 2 distinct sizes
  int skipped = 0;  ///< attention points of backends the model has no kernel for ("efficient",
                    ///< "math"), and points the script recorded as failed (no time_s, an "error")
};

/// The device a kernels file names: context.gpu_name and context.sm_count ("" and 0 when absent or
/// when `kernels` is not an object). Throws InputError(file, "/context", ...) for a context that is
/// not an object, "/context/gpu_name" for a name that is not a string, "/context/sm_count" for an
/// SM count that is not a positive integer.
std::pair<std::string, int> kernels_device(const nlohmann::json& kernels, const std::string& file);

/// Prices every point of `kernels` (the parsed file `file`) on `node` and compares. Shapes: GEMM
/// [m×k]·[k×n] (stage_compute_time_s of a linear stage), attention B·H·q·kv·hd (cuDNN priced as
/// FA3, flash as FA2), elementwise as measured_elementwise_op. Throws InputError(file, JSON pointer,
/// expected form) for a malformed file: not an object, a list that is not an array, a point whose
/// shape fields are not positive integers or whose time_s is not a positive number, an unknown
/// elementwise op, no point at all, a time below 1e-7 s, a context that is not an object or a
/// gpu_name that is not a string; and InputError(file, "/context/sm_count" or "/context/gpu_name",
/// ...) when the file's SM count differs from the node's or its device name denotes another
/// catalogue GPU than the node's (priced on another GPU).
KernelCheck check_kernels(const nlohmann::json& kernels, const std::string& file, const NodeSpec& node);

/// The catalogue GPU (model/catalogue/gpus.json id) a device name as CUDA/PyTorch reports it denotes
/// ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090"):
/// the entry whose model (H100, A100, L40S, RTX 4090, ...) is a word of the name, whose form factor
/// matches (PCIe and NVL when the name says so, the other entries otherwise), whose memory size
/// matches when both name one and, when sm_count > 0, whose SM count is sm_count. "" when none or more
/// than one matches, and for variants the catalogue does not list (a word D, Ti, SUPER, Laptop,
/// Mobile or Max-Q in the name: "RTX 4090 D" is not an RTX 4090).
std::string catalogue_gpu_for_device(const std::string& device_name, int sm_count);

/// The node kernels of catalogue GPU `gpu_id` are priced on when none is named: the built-in node
/// (model/nodes) of that GPU with the fewest GPUs (ties: the smaller id), else the published-record
/// node of that GPU (published_node). Kernel pricing reads only the node's GPU figures, SM count and
/// clock, efficiencies and launch cost. Throws InputError("", field, ...) when neither exists.
NodeSpec kernel_check_node(const std::string& gpu_id, const std::string& field);

/// The JSON object `chunkflow validate --kernels --json` prints (points, by_kind, elementwise_rates).
nlohmann::json kernel_check_to_json(const KernelCheck& c);

}  // namespace chunkflow
