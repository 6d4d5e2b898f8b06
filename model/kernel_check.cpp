// The kernel model against kernels timed on a GPU (model/kernel_check.hpp): reading
// scripts/measure_kernels.py's JSON strictly, pricing each point as plan stages are priced, and the
// per-op least-squares rates of the elementwise series (Eigen).
#include "model/kernel_check.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <Eigen/Dense>

#include "model/analytical.hpp"
#include "model/error.hpp"
#include "model/kernel_model.hpp"
#include "model/published.hpp"

namespace chunkflow {

namespace {

constexpr double kGemmTolerance = 0.20;
constexpr double kCudnnTolerance = 0.20;
constexpr double kFlashTolerance = 0.25;
constexpr double kElementwiseTolerance = 0.20;

std::string pointer(const std::string& list, size_t i, const std::string& key) {
  return "/" + list + "/" + std::to_string(i) + (key.empty() ? "" : "/" + key);
}

int64_t positive_integer(const nlohmann::json& p, const std::string& file, const std::string& list, size_t i,
                         const char* key) {
  const auto it = p.find(key);
  if (it == p.end() || !it->is_number_integer() || it->get<int64_t>() <= 0)
    throw InputError(file, pointer(list, i, key), "expected a positive integer");
  return it->get<int64_t>();
}

// The shortest time a timed point can hold: CUDA events resolve about 0.5 µs, and one launch alone
// takes microseconds; below it a "time" is a unit slip, and the dispatch allowance (spread /
// measured) would accept any prediction.
constexpr double kMinPointSeconds = 1e-7;

double positive_seconds(const nlohmann::json& p, const std::string& file, const std::string& list, size_t i) {
  const auto it = p.find("time_s");
  if (it == p.end() || !it->is_number() || !(it->get<double>() >= kMinPointSeconds) || !std::isfinite(it->get<double>()))
    throw InputError(file, pointer(list, i, "time_s"), "expected a number of seconds of at least 1e-7 (CUDA events resolve about 0.5 us)");
  return it->get<double>();
}

// A point the script recorded as failed ("error" member, no time): skipped, as it says.
bool recorded_failure(const nlohmann::json& p) { return p.contains("error") && !p.contains("time_s"); }

std::string string_field(const nlohmann::json& p, const std::string& file, const std::string& list, size_t i,
                         const char* key) {
  const auto it = p.find(key);
  if (it == p.end() || !it->is_string()) throw InputError(file, pointer(list, i, key), "expected a string");
  return it->get<std::string>();
}

const nlohmann::json* point_list(const nlohmann::json& kernels, const std::string& file, const std::string& list) {
  const auto it = kernels.find(list);
  if (it == kernels.end()) return nullptr;
  if (!it->is_array()) throw InputError(file, "/" + list, "expected an array of timed points");
  for (size_t i = 0; i < it->size(); ++i)
    if (!(*it)[i].is_object()) throw InputError(file, pointer(list, i, ""), "expected an object");
  return &*it;
}

KernelPoint finish(KernelPoint p) {
  p.within = std::abs(std::log(p.predicted_s / p.measured_s)) <=
             std::log1p(p.tolerance) + p.calls * kKernelHostDispatchSpread_s / p.measured_s;
  return p;
}

const char* access_name(ElementwiseAccess a) {
  switch (a) {
    case ElementwiseAccess::streaming: return "streaming";
    case ElementwiseAccess::row_reduction: return "row_reduction";
    case ElementwiseAccess::broadcast: return "broadcast";
  }
  return "streaming";
}

ElementwiseAccess access_of(const ElementwiseOp& op) {
  if (op.eager_broadcast_bytes_per_element > 0) return ElementwiseAccess::broadcast;
  if (op.eager_row_reduction_bytes_per_element > 0) return ElementwiseAccess::row_reduction;
  return ElementwiseAccess::streaming;
}

StageCost eager_elementwise_stage(const ElementwiseOp& op, double elements) {
  StageCost s;
  s.elementwise_bytes = elements * op.eager_bytes_per_element;
  s.elementwise_row_reduction_bytes = elements * op.eager_row_reduction_bytes_per_element;
  s.elementwise_broadcast_bytes = elements * op.eager_broadcast_bytes_per_element;
  s.elementwise_kernels = op.eager_kernels;
  return s;
}

std::string upper_words(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '-' || c == '_') ? ' ' : char(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::set<std::string> device_words(const std::string& device_name) {
  std::istringstream in(upper_words(device_name));
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  std::set<std::string> out;
  for (size_t i = 0; i < words.size(); ++i) {
    // "RTX 4090" is one model word, as the catalogue id spells it (rtx4090).
    if (words[i] == "RTX" && i + 1 < words.size()) {
      out.insert("RTX" + words[i + 1]);
      ++i;
      continue;
    }
    out.insert(words[i]);
  }
  return out;
}

}  // namespace

ElementwiseOp measured_elementwise_op(const std::string& name, const std::string& file, const std::string& field) {
  ElementwiseOp op;
  op.name = name;
  op.eager_kernels = 1;
  if (name == "layer_norm") {
    op.eager_bytes_per_element = 4;
    op.eager_row_reduction_bytes_per_element = 4;
  } else if (name == "gelu_tanh") {
    op.eager_bytes_per_element = 4;
  } else if (name == "residual_add") {
    op.eager_bytes_per_element = 6;
  } else if (name == "modulate") {
    op.eager_bytes_per_element = 8;
    op.eager_broadcast_bytes_per_element = 8;
    op.eager_kernels = 3;
  } else {
    throw InputError(file, field,
                     "expected one of layer_norm, gelu_tanh, residual_add, modulate (the ops "
                     "scripts/measure_kernels.py times), got \"" + name + "\"");
  }
  return op;
}

std::pair<std::string, int> kernels_device(const nlohmann::json& kernels, const std::string& file) {
  std::pair<std::string, int> device{"", 0};
  if (!kernels.is_object()) return device;
  const auto ctx = kernels.find("context");
  if (ctx == kernels.end()) return device;
  if (!ctx->is_object()) throw InputError(file, "/context", "expected an object (the run's context)");
  if (const auto g = ctx->find("gpu_name"); g != ctx->end()) {
    if (!g->is_string()) throw InputError(file, "/context/gpu_name", "expected a string (the CUDA device name)");
    device.first = g->get<std::string>();
  }
  if (const auto s = ctx->find("sm_count"); s != ctx->end()) {
    if (!s->is_number_integer() || s->get<int64_t>() <= 0 || s->get<int64_t>() > 1000000)
      throw InputError(file, "/context/sm_count", "expected a positive integer");
    device.second = int(s->get<int64_t>());
  }
  return device;
}

KernelCheck check_kernels(const nlohmann::json& kernels, const std::string& file, const NodeSpec& node) {
  if (!kernels.is_object())
    throw InputError(file, "", "expected a JSON object with gemm, attention and elementwise point lists "
                               "(scripts/measure_kernels.py's output)");
  KernelCheck c;
  std::tie(c.gpu_name, c.sm_count) = kernels_device(kernels, file);
  if (c.sm_count > 0 && node.sm_count > 0 && c.sm_count != node.sm_count)
    throw InputError(file, "/context/sm_count",
                     "the kernels ran on a GPU with " + std::to_string(c.sm_count) + " SMs, the node " + node.id +
                         " has " + std::to_string(node.sm_count) + "; price them on a node of that GPU (--node)");
  // GPUs with the same SM count (H100 SXM, H200, H800, H100 NVL: 132) differ in clocks, HBM and
  // efficiencies: a device name that denotes a catalogue GPU must be the node's.
  if (const std::string gpu = catalogue_gpu_for_device(c.gpu_name, c.sm_count);
      !gpu.empty() && !node.gpu_id.empty() && gpu != node.gpu_id)
    throw InputError(file, "/context/gpu_name",
                     "the kernels ran on " + c.gpu_name + " (catalogue " + gpu + "), the node " + node.id + " has " +
                         node.gpu_id + "; price them on a node of that GPU (--node)");

  if (const nlohmann::json* list = point_list(kernels, file, "gemm")) {
    for (size_t i = 0; i < list->size(); ++i) {
      const nlohmann::json& r = (*list)[i];
      if (recorded_failure(r)) {
        ++c.skipped;
        continue;
      }
      StageCost s;
      s.stage.kind = BlockStage::Kind::linear;
      s.gemm = GemmShape{positive_integer(r, file, "gemm", i, "m"), positive_integer(r, file, "gemm", i, "k"),
                         positive_integer(r, file, "gemm", i, "n")};
      s.flop = s.gemm.flop();
      s.weight_bytes = 2.0 * double(s.gemm.k) * double(s.gemm.n);
      KernelPoint p;
      p.kind = "gemm";
      p.shape = std::to_string(s.gemm.m) + "x" + std::to_string(s.gemm.k) + "x" + std::to_string(s.gemm.n);
      p.priced_as = "gemm";
      p.measured_s = positive_seconds(r, file, "gemm", i);
      p.predicted_s = stage_compute_time_s(s, node) + kKernelHostDispatch_s;
      p.tolerance = kGemmTolerance;
      c.points.push_back(finish(p));
    }
  }
  if (const nlohmann::json* list = point_list(kernels, file, "attention")) {
    for (size_t i = 0; i < list->size(); ++i) {
      const nlohmann::json& r = (*list)[i];
      const std::string backend = string_field(r, file, "attention", i, "backend");
      if (recorded_failure(r) || (backend != "cudnn" && backend != "flash")) {  // no counterpart in the model
        ++c.skipped;
        continue;
      }
      StageCost s;
      s.stage.kind = BlockStage::Kind::attention;
      s.attention = AttentionShape{positive_integer(r, file, "attention", i, "batch"),
                                   positive_integer(r, file, "attention", i, "heads"),
                                   positive_integer(r, file, "attention", i, "q_tokens"),
                                   positive_integer(r, file, "attention", i, "kv_tokens"),
                                   positive_integer(r, file, "attention", i, "head_dim")};
      s.flop = s.attention.flop();
      s.attention_kernel = backend == "cudnn" ? AttentionKernel::fa3 : AttentionKernel::fa2;
      KernelPoint p;
      p.kind = "attention";
      p.shape = backend + " B=" + std::to_string(s.attention.batch) + " H=" + std::to_string(s.attention.heads) +
                " S=" + std::to_string(s.attention.q_tokens) +
                (s.attention.kv_tokens != s.attention.q_tokens ? "/" + std::to_string(s.attention.kv_tokens) : "") +
                " hd=" + std::to_string(s.attention.head_dim);
      // The kernel the node runs for the request (FA3 falls back to FA2 off Hopper).
      p.priced_as = resolve_attention_kernel(s.attention_kernel, node) == AttentionKernel::fa3 ? "fa3" : "fa2";
      p.measured_s = positive_seconds(r, file, "attention", i);
      p.predicted_s = stage_compute_time_s(s, node) + kKernelHostDispatch_s;
      p.tolerance = backend == "cudnn" ? kCudnnTolerance : kFlashTolerance;
      c.points.push_back(finish(p));
    }
  }
  struct Series {
    ElementwiseAccess access;
    std::vector<double> bytes, seconds;
  };
  std::map<std::string, Series> series;
  if (const nlohmann::json* list = point_list(kernels, file, "elementwise")) {
    for (size_t i = 0; i < list->size(); ++i) {
      const nlohmann::json& r = (*list)[i];
      if (recorded_failure(r)) {
        ++c.skipped;
        continue;
      }
      const std::string name = string_field(r, file, "elementwise", i, "op");
      const ElementwiseOp op = measured_elementwise_op(name, file, pointer("elementwise", i, "op"));
      const int64_t tokens = positive_integer(r, file, "elementwise", i, "tokens");
      const int64_t dim = positive_integer(r, file, "elementwise", i, "dim");
      const double elements = double(tokens) * double(dim);
      KernelPoint p;
      p.kind = "elementwise";
      p.shape = name + " " + std::to_string(tokens) + "x" + std::to_string(dim);
      p.priced_as = access_name(access_of(op));
      p.calls = op.eager_kernels;
      p.measured_s = positive_seconds(r, file, "elementwise", i);
      p.predicted_s = elementwise_time_s(eager_elementwise_stage(op, elements), node) + p.calls * kKernelHostDispatch_s;
      p.tolerance = kElementwiseTolerance;
      c.points.push_back(finish(p));
      Series& s = series.try_emplace(name, Series{access_of(op), {}, {}}).first->second;
      s.bytes.push_back(elements * op.eager_bytes_per_element);
      s.seconds.push_back(p.measured_s);
    }
  }
  if (c.points.empty())
    throw InputError(file, "", "expected at least one timed point in gemm, attention (cudnn or flash) or elementwise");

  for (const auto& [name, s] : series) {
    if (std::set<double>(s.bytes.begin(), s.bytes.end()).size() < 2) continue;  // a slope needs two sizes
    // t = a + b·bytes: least squares over the op's sizes (Eigen's column-pivoting QR).
    Eigen::MatrixX2d a(s.bytes.size(), 2);
    Eigen::VectorXd t(s.bytes.size());
    for (size_t i = 0; i < s.bytes.size(); ++i) {
      a(Eigen::Index(i), 0) = 1.0;
      a(Eigen::Index(i), 1) = s.bytes[i];
      t(Eigen::Index(i)) = s.seconds[i];
    }
    // Scale the bytes column to order 1 so the QR's rank decision is not fooled by units.
    const double scale = *std::max_element(s.bytes.begin(), s.bytes.end());
    a.col(1) /= scale;
    const Eigen::Vector2d x = a.colPivHouseholderQr().solve(t);
    ElementwiseRate rate;
    rate.op = name;
    rate.access_class = access_name(s.access);
    rate.points = int(s.bytes.size());
    const double slope_s_per_byte = x(1) / scale;
    rate.measured_bytes_per_s = slope_s_per_byte > 0 ? 1.0 / slope_s_per_byte : 0.0;
    rate.intercept_s = x(0);
    rate.model_bytes_per_s = elementwise_bytes_per_s(s.access, node);
    c.rates.push_back(rate);
  }
  return c;
}

std::string catalogue_gpu_for_device(const std::string& device_name, int sm_count) {
  const std::set<std::string> words = device_words(device_name);
  // Variants the catalogue does not list ("RTX 4090 D", "RTX 3090 Ti", "RTX 4080 SUPER", laptop
  // parts) share a model word with one that it does: none of them is that GPU.
  for (const char* variant : {"D", "TI", "SUPER", "LAPTOP", "MOBILE", "MAX", "Q"})
    if (words.count(variant)) return "";
  auto form = [](const std::set<std::string>& w) { return w.count("PCIE") ? 1 : w.count("NVL") ? 2 : 0; };
  std::string found;
  for (const std::string& id : gpu_ids()) {
    const std::string spelled = upper_words(id);  // "A100 SXM 80GB"
    std::istringstream in(spelled);
    std::set<std::string> id_words;
    for (std::string w; in >> w;) id_words.insert(w);
    const std::string model = spelled.substr(0, spelled.find(' '));
    if (!words.count(model) || form(words) != form(id_words)) continue;
    // A memory size in the id ("80GB") must be the device's when the device names one.
    bool memory_ok = true;
    for (const std::string& w : id_words)
      if (w.size() > 2 && w.compare(w.size() - 2, 2, "GB") == 0)
        for (const std::string& d : words)
          if (d.size() > 2 && d.compare(d.size() - 2, 2, "GB") == 0 && std::isdigit(static_cast<unsigned char>(d[0])) &&
              d != w)
            memory_ok = false;
    if (!memory_ok) continue;
    if (sm_count > 0 && gpu_spec(id).sm_count != sm_count) continue;
    if (!found.empty()) return "";  // ambiguous
    found = id;
  }
  return found;
}

NodeSpec kernel_check_node(const std::string& gpu_id, const std::string& field) {
  std::string best;
  int best_gpus = 0;
  for (const std::string& id : node_ids()) {
    const NodeSpec n = node(id);
    if (n.gpu_id != gpu_id) continue;
    if (best.empty() || n.gpu_count < best_gpus || (n.gpu_count == best_gpus && id < best)) {
      best = id;
      best_gpus = n.gpu_count;
    }
  }
  if (!best.empty()) return node(best);
  const std::vector<std::string> published = published_gpu_ids();
  if (std::find(published.begin(), published.end(), gpu_id) != published.end()) return published_node(gpu_id, 1);
  throw InputError("", field, "no built-in node has the GPU " + gpu_id + "; name one with --node (a node id or file)");
}

nlohmann::json kernel_check_to_json(const KernelCheck& c) {
  nlohmann::json points = nlohmann::json::array();
  std::map<std::string, std::vector<double>> ratios;
  std::map<std::string, int> within;
  for (const KernelPoint& p : c.points) {
    points.push_back({{"kind", p.kind},
                      {"shape", p.shape},
                      {"priced_as", p.priced_as},
                      {"measured_s", p.measured_s},
                      {"predicted_s", p.predicted_s},
                      {"ratio", p.predicted_s / p.measured_s},
                      {"calls", p.calls},
                      {"tolerance", p.tolerance},
                      {"within", p.within}});
    const std::string key = p.kind == "gemm" ? "gemm" : p.kind + " " + p.priced_as;
    ratios[key].push_back(p.predicted_s / p.measured_s);
    within[key] += p.within ? 1 : 0;
  }
  nlohmann::json by_kind = nlohmann::json::object();
  for (auto& [key, r] : ratios) {
    std::sort(r.begin(), r.end());
    const size_t n = r.size();
    by_kind[key] = {{"points", n},
                    {"within", within[key]},
                    {"min_ratio", r.front()},
                    {"median_ratio", n % 2 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2])},
                    {"max_ratio", r.back()}};
  }
  nlohmann::json rates = nlohmann::json::array();
  for (const ElementwiseRate& r : c.rates)
    rates.push_back({{"op", r.op},
                     {"access_class", r.access_class},
                     {"points", r.points},
                     {"measured_bytes_per_s", r.measured_bytes_per_s},
                     {"intercept_s", r.intercept_s},
                     {"model_bytes_per_s", r.model_bytes_per_s}});
  return {{"gpu_name", c.gpu_name}, {"sm_count", c.sm_count}, {"skipped", c.skipped},
          {"points", points},       {"by_kind", by_kind},       {"elementwise_rates", rates}};
}

}  // namespace chunkflow
