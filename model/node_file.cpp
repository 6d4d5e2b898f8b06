// Node files and the GPU catalogue: data, not code. The built-in ones are embedded at build time
// (model/embedded_data.hpp); the format is described in model/nodes/README.md. Every figure is
// {"value": number, "source": "citation or assumed: ..."}; a bare number is accepted in a user's
// file and recorded with the source "given without a source".
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model/embedded_data.hpp"
#include "model/error.hpp"
#include "model/limits.hpp"
#include "model/node.hpp"

namespace chunkflow {

using nlohmann::json;

namespace {

constexpr std::string_view kCatalogue = "model/catalogue/gpus.json";
constexpr std::string_view kNodesDir = "model/nodes/";

json parse_json(std::string_view text, const std::string& file) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw InputError(file, "/", std::string("not valid JSON: ") + e.what());
  } catch (const json::exception& e) {  // out_of_range 406: a number beyond a double (fuzz_node_file)
    throw InputError(file, "/", std::string("not valid JSON: ") + e.what());
  }
}

/// Typed access to one JSON object with unknown keys rejected; errors name file and pointer.
class Fields {
 public:
  Fields(const json& j, std::string file, std::string pointer) : j_(j), file_(std::move(file)), ptr_(std::move(pointer)) {
    if (!j_.is_object()) throw InputError(file_, ptr_.empty() ? "/" : ptr_, "expected a JSON object, got " + j_.dump());
  }
  bool has(const std::string& k) const { return j_.contains(k); }
  std::string at(const std::string& k) const { return ptr_ + "/" + k; }
  const json& raw(const std::string& k) {
    seen_.insert(k);
    if (!j_.contains(k)) throw InputError(file_, at(k), "missing");
    return j_.at(k);
  }
  std::string string(const std::string& k) {
    const json& v = raw(k);
    if (!v.is_string()) throw InputError(file_, at(k), "expected a string, got " + v.dump());
    return v.get<std::string>();
  }
  bool boolean(const std::string& k) {
    const json& v = raw(k);
    if (!v.is_boolean()) throw InputError(file_, at(k), "expected true or false, got " + v.dump());
    return v.get<bool>();
  }
  int integer(const std::string& k, int lo, int hi) {
    const json& v = raw(k);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw InputError(file_, at(k),
                       "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump());
    return static_cast<int>(v.get<int64_t>());
  }
  /// A figure {"value": x, "source": "..."} (or a bare number): value, and its source into `source`.
  /// `allow_null`: a null value reads as 0 ("none").
  double figure(const std::string& k, std::string* source, bool allow_null = false) {
    const json& v = raw(k);
    const json* value = &v;
    if (v.is_object()) {
      Fields f(v, file_, at(k));
      value = &f.raw("value");
      const std::string s = f.string("source");
      if (s.empty()) throw InputError(file_, at(k) + "/source", "expected a citation or \"assumed: ...\", got \"\"");
      if (source) *source = s;
      f.reject_unknown("value, source");
    } else if (source) {
      *source = "given without a source";
    }
    if (value->is_null() && allow_null) return 0;
    if (!value->is_number())
      throw InputError(file_, at(k) + (v.is_object() ? "/value" : ""), "expected a number, got " + value->dump());
    return value->get<double>();
  }
  void reject_unknown(const std::string& expected) const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!seen_.count(it.key())) throw InputError(file_, at(it.key()), "unknown field; expected one of " + expected);
  }

 private:
  const json& j_;
  std::string file_, ptr_;
  std::set<std::string> seen_;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

GpuSpec read_gpu(const json& j, const std::string& file, const std::string& ptr) {
  Fields f(j, file, ptr);
  GpuSpec g;
  g.id = f.string("id");
  g.name = f.string("name");
  auto num = [&](const char* k, double& out, bool allow_null = false) { out = f.figure(k, &g.sources[k], allow_null); };
  auto count = [&](const char* k, int& out) {
    double v = 0;
    num(k, v, true);
    if (v < 0 || v != static_cast<int>(v)) throw InputError(file, f.at(k), "expected a non-negative integer");
    out = static_cast<int>(v);
  };
  num("memory_bytes", g.memory_bytes);
  num("hbm_bytes_per_s", g.hbm_bytes_per_s);
  num("bf16_dense_flop_per_s", g.bf16_dense_flop_per_s);
  num("fp8_dense_flop_per_s", g.fp8_dense_flop_per_s, true);
  num("fp32_flop_per_s", g.fp32_flop_per_s);
  count("sm_count", g.sm_count);
  num("sm_clock_hz", g.sm_clock_hz);
  count("pcie_gen", g.pcie_gen);
  count("pcie_width", g.pcie_width);
  count("nvlink_gen", g.nvlink_gen);
  count("nvlink_links", g.nvlink_links);
  num("nvlink_bytes_per_s", g.nvlink_bytes_per_s, true);
  {
    const json& v = f.raw("p2p_over_pcie");
    Fields p(v, file, f.at("p2p_over_pcie"));
    g.p2p_over_pcie = p.boolean("value");
    g.sources["p2p_over_pcie"] = p.string("source");
    p.reject_unknown("value, source");
  }
  f.reject_unknown("id, name, memory_bytes, hbm_bytes_per_s, bf16_dense_flop_per_s, fp8_dense_flop_per_s, fp32_flop_per_s, sm_count, "
                   "sm_clock_hz, pcie_gen, pcie_width, nvlink_gen, nvlink_links, nvlink_bytes_per_s, p2p_over_pcie");
  for (auto [k, v] : {std::pair{"memory_bytes", g.memory_bytes}, std::pair{"hbm_bytes_per_s", g.hbm_bytes_per_s},
                      std::pair{"bf16_dense_flop_per_s", g.bf16_dense_flop_per_s}, std::pair{"fp32_flop_per_s", g.fp32_flop_per_s},
                      std::pair{"sm_clock_hz", g.sm_clock_hz}})
    if (!(v > 0)) throw InputError(file, f.at(k), "expected a positive number");
  return g;
}

const std::vector<GpuSpec>& catalogue() {
  static const std::vector<GpuSpec> gpus = [] {
    std::vector<GpuSpec> out;
    for (const EmbeddedFile& e : embedded_data_files()) {
      if (e.path != kCatalogue) continue;
      const std::string file(e.path);
      const json j = parse_json(e.contents, file);
      Fields top(j, file, "");
      (void)top.string("description");
      const json& list = top.raw("gpus");
      if (!list.is_array()) throw InputError(file, "/gpus", "expected an array");
      for (std::size_t i = 0; i < list.size(); ++i) out.push_back(read_gpu(list[i], file, "/gpus/" + std::to_string(i)));
      top.reject_unknown("description, gpus");
    }
    return out;
  }();
  return gpus;
}

VertexKind parse_vertex_kind(const std::string& s, const std::string& file, const std::string& field) {
  for (VertexKind k : {VertexKind::host_memory, VertexKind::cpu, VertexKind::host_bridge, VertexKind::pcie_switch,
                       VertexKind::nvswitch, VertexKind::nic})
    if (to_string(k) == s) return k;
  throw InputError(file, field,
                   "expected one of host_memory, cpu, host_bridge, pcie_switch, nvswitch, nic, got \"" + s + "\"");
}

LinkKind parse_link_kind(const std::string& s, const std::string& file, const std::string& field) {
  for (LinkKind k : {LinkKind::pcie, LinkKind::nvlink, LinkKind::memory, LinkKind::inter_socket})
    if (to_string(k) == s) return k;
  throw InputError(file, field, "expected one of pcie, nvlink, memory, inter_socket, got \"" + s + "\"");
}

PathLevel parse_path_level(const std::string& s, const std::string& file, const std::string& field) {
  for (PathLevel l : {PathLevel::nvl, PathLevel::pix, PathLevel::pxb, PathLevel::phb, PathLevel::node, PathLevel::sys})
    if (to_string(l) == s) return l;
  throw InputError(file, field, "expected one of PIX, PXB, PHB, NODE, SYS, got \"" + s + "\"");
}

/// The fields of a link or link type that carry numbers; `source_prefix` names them in sources.
void read_link_body(Fields& f, LinkSpec& l, std::map<std::string, std::string>& sources, const std::string& src_prefix,
                    const std::string& file) {
  if (f.has("kind")) l.kind = parse_link_kind(f.string("kind"), file, f.at("kind"));
  auto num = [&](const char* k, double& out) {
    if (f.has(k)) out = f.figure(k, &sources[src_prefix + k]);
  };
  num("a_to_b_bytes_per_s", l.a_to_b_bytes_per_s);
  num("b_to_a_bytes_per_s", l.b_to_a_bytes_per_s);
  num("duplex_bytes_per_s", l.duplex_bytes_per_s);
  num("a_to_b_under_duplex_bytes_per_s", l.a_to_b_under_duplex_bytes_per_s);
  num("b_to_a_under_duplex_bytes_per_s", l.b_to_a_under_duplex_bytes_per_s);
}

constexpr const char* kLinkFields =
    "kind, a_to_b_bytes_per_s, b_to_a_bytes_per_s, duplex_bytes_per_s, a_to_b_under_duplex_bytes_per_s, "
    "b_to_a_under_duplex_bytes_per_s";

std::map<std::string, NodeSpec>& builtin_cache() {
  static std::map<std::string, NodeSpec> cache;
  return cache;
}

}  // namespace

std::string to_string(PathLevel level) {
  switch (level) {
    case PathLevel::nvl: return "NV";
    case PathLevel::pix: return "PIX";
    case PathLevel::pxb: return "PXB";
    case PathLevel::phb: return "PHB";
    case PathLevel::node: return "NODE";
    case PathLevel::sys: return "SYS";
  }
  return "?";
}

std::string to_string(VertexKind kind) {
  switch (kind) {
    case VertexKind::host_memory: return "host_memory";
    case VertexKind::cpu: return "cpu";
    case VertexKind::host_bridge: return "host_bridge";
    case VertexKind::pcie_switch: return "pcie_switch";
    case VertexKind::nvswitch: return "nvswitch";
    case VertexKind::gpu: return "gpu";
    case VertexKind::nic: return "nic";
  }
  return "?";
}

std::string to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::pcie: return "pcie";
    case LinkKind::nvlink: return "nvlink";
    case LinkKind::memory: return "memory";
    case LinkKind::inter_socket: return "inter_socket";
  }
  return "?";
}

const GpuSpec& gpu_spec(std::string_view id, const std::string& field) {
  for (const GpuSpec& g : catalogue())
    if (g.id == id) return g;
  throw InputError("", field, "expected a GPU catalogue id (" + join(gpu_ids()) + "), got \"" + std::string(id) + "\"");
}

std::vector<std::string> gpu_ids() {
  std::vector<std::string> ids;
  for (const GpuSpec& g : catalogue()) ids.push_back(g.id);
  return ids;
}

NodeSpec parse_node_file(const std::string& text, const std::string& file) {
  const json j = parse_json(text, file);
  Fields f(j, file, "");
  NodeSpec n;
  n.file = file;
  n.id = f.string("id");
  if (n.id.empty()) throw InputError(file, "/id", "expected a non-empty id");
  if (f.has("description")) n.description = f.string("description");
  n.gpu_id = f.string("gpu");
  const GpuSpec* gpu = nullptr;
  try {
    gpu = &gpu_spec(n.gpu_id, "/gpu");
  } catch (const InputError& e) {
    throw InputError(file, e.field(), e.message());
  }
  n.gpu_name = gpu->name;
  n.gpu_count = f.integer("gpu_count", 1, 64);
  n.peak_flop_per_s = gpu->bf16_dense_flop_per_s;
  n.hbm_bytes_per_s = gpu->hbm_bytes_per_s;
  n.fp32_flop_per_s = gpu->fp32_flop_per_s;  // FP32 non-tensor decoders (model/generation.cpp)
  n.sm_count = gpu->sm_count;  // kernel model: wave quantization (issue 10)
  n.sm_clock_hz = gpu->sm_clock_hz;  // kernel model: per-SM elementwise kernels
  // Attention kernel default (FA3 on Hopper): the architecture from the catalogue id.
  n.gpu_architecture = gpu->id.rfind("h", 0) == 0 ? "hopper" : gpu->id.rfind("a100", 0) == 0 || gpu->id.rfind("rtx30", 0) == 0 ? "ampere" : "ada";
  n.gpu_memory_bytes = gpu->memory_bytes;
  n.sources["peak_flop_per_s"] = "catalogue " + n.gpu_id + ": " + gpu->sources.at("bf16_dense_flop_per_s");
  n.sources["hbm_bytes_per_s"] = "catalogue " + n.gpu_id + ": " + gpu->sources.at("hbm_bytes_per_s");
  n.sources["fp32_flop_per_s"] = "catalogue " + n.gpu_id + ": " + gpu->sources.at("fp32_flop_per_s");
  n.sources["sm_clock_hz"] = "catalogue " + n.gpu_id + ": " + gpu->sources.at("sm_clock_hz");
  n.sources["gpu_memory_bytes"] = "catalogue " + n.gpu_id + ": " + gpu->sources.at("memory_bytes");
  n.p2p_enabled = gpu->p2p_over_pcie;
  if (gpu->p2p_over_pcie == false) n.sources["p2p"] = "catalogue " + n.gpu_id + ": " + gpu->sources.at("p2p_over_pcie");

  const std::string collective = f.has("collective") ? f.string("collective") : "routed";
  if (collective == "routed") n.collective = CollectiveBackend::routed;
  else if (collective == "pcie-proxy") n.collective = CollectiveBackend::pcie_proxy;
  else throw InputError(file, "/collective", "expected \"routed\" or \"pcie-proxy\", got \"" + collective + "\"");

  {
    Fields fig(f.raw("figures"), file, "/figures");
    auto req = [&](const char* k, double& out) { out = fig.figure(k, &n.sources[k]); };
    auto opt = [&](const char* k, double& out) {
      if (fig.has(k)) out = fig.figure(k, &n.sources[k]);
    };
    opt("peak_flop_per_s", n.peak_flop_per_s);
    opt("hbm_bytes_per_s", n.hbm_bytes_per_s);
    opt("gpu_memory_bytes", n.gpu_memory_bytes);
    req("gemm_efficiency", n.gemm_efficiency);
    req("attention_efficiency", n.attention_efficiency);
    req("compute_launch_s", n.compute_launch_s);
    req("copy_engine_bytes_per_s", n.copy_engine_bytes_per_s);
    req("h2d_latency_s", n.h2d_latency_s);
    req("shm_flow_bytes_per_s", n.collective_flow_bytes_per_s);
    n.sources["collective_flow_bytes_per_s"] = n.sources["shm_flow_bytes_per_s"];
    opt("p2p_flow_bytes_per_s", n.p2p_flow_bytes_per_s);
    req("collective_latency_s", n.collective_latency_s);
    fig.reject_unknown(
        "peak_flop_per_s, hbm_bytes_per_s, gpu_memory_bytes, gemm_efficiency, attention_efficiency, compute_launch_s, "
        "copy_engine_bytes_per_s, h2d_latency_s, shm_flow_bytes_per_s, p2p_flow_bytes_per_s, collective_latency_s");
  }

  if (f.has("p2p")) {
    Fields p(f.raw("p2p"), file, "/p2p");
    if (p.has("enabled")) n.p2p_enabled = p.boolean("enabled");
    if (p.has("level")) n.p2p_level = parse_path_level(p.string("level"), file, "/p2p/level");
    if (n.p2p_level == PathLevel::nvl) throw InputError(file, "/p2p/level", "expected PIX, PXB, PHB, NODE or SYS, got NV");
    if (p.has("disabled_pairs")) {
      const json& pairs = p.raw("disabled_pairs");
      if (!pairs.is_array()) throw InputError(file, "/p2p/disabled_pairs", "expected an array of [a, b] GPU pairs");
      for (std::size_t i = 0; i < pairs.size(); ++i) {
        const json& q = pairs[i];
        const std::string at = "/p2p/disabled_pairs/" + std::to_string(i);
        if (!q.is_array() || q.size() != 2 || !q[0].is_number_integer() || !q[1].is_number_integer() ||
            q[0].get<int64_t>() < 0 || q[1].get<int64_t>() < 0 || q[0].get<int64_t>() >= n.gpu_count ||
            q[1].get<int64_t>() >= n.gpu_count || q[0] == q[1])
          throw InputError(file, at, "expected [a, b], two distinct GPU indices below " + std::to_string(n.gpu_count) +
                                         ", got " + q.dump());
        n.p2p_disabled_pairs.emplace_back(q[0].get<int>(), q[1].get<int>());
      }
    }
    n.sources["p2p"] = p.string("source");
    p.reject_unknown("enabled, level, disabled_pairs, source");
  }

  std::map<std::string, std::pair<LinkSpec, std::map<std::string, std::string>>> types;
  if (f.has("link_types")) {
    const json& t = f.raw("link_types");
    if (!t.is_object()) throw InputError(file, "/link_types", "expected an object of named link types");
    for (auto it = t.begin(); it != t.end(); ++it) {
      Fields lt(it.value(), file, "/link_types/" + it.key());
      auto& [spec, src] = types[it.key()];
      read_link_body(lt, spec, src, "", file);
      lt.reject_unknown(kLinkFields);
    }
  }

  std::set<std::string> names{"host"};
  for (int g = 0; g < n.gpu_count; ++g) names.insert("gpu" + std::to_string(g));
  if (f.has("vertices")) {
    const json& vs = f.raw("vertices");
    if (!vs.is_array()) throw InputError(file, "/vertices", "expected an array of {name, kind}");
    for (std::size_t i = 0; i < vs.size(); ++i) {
      const std::string at = "/vertices/" + std::to_string(i);
      Fields v(vs[i], file, at);
      VertexSpec spec{v.string("name"), parse_vertex_kind(v.string("kind"), file, at + "/kind")};
      if (spec.name.empty() || !names.insert(spec.name).second)
        throw InputError(file, at + "/name", "expected a new, non-empty vertex name, got \"" + spec.name + "\"");
      v.reject_unknown("name, kind");
      n.vertices.push_back(spec);
    }
  }

  const json& links = f.raw("links");
  if (!links.is_array()) throw InputError(file, "/links", "expected an array of links");
  std::set<std::string> link_names;
  for (std::size_t i = 0; i < links.size(); ++i) {
    const std::string at = "/links/" + std::to_string(i);
    Fields lf(links[i], file, at);
    LinkSpec l;
    std::map<std::string, std::string> src;
    if (lf.has("type")) {
      const std::string type = lf.string("type");
      auto it = types.find(type);
      if (it == types.end()) throw InputError(file, at + "/type", "expected a key of /link_types, got \"" + type + "\"");
      l = it->second.first;
      src = it->second.second;
    }
    l.name = lf.string("name");
    l.a = lf.string("a");
    l.b = lf.string("b");
    read_link_body(lf, l, src, "", file);
    lf.reject_unknown(std::string("name, a, b, type, ") + kLinkFields);
    for (const std::string* end : {&l.a, &l.b})
      if (!names.count(*end))
        throw InputError(file, at + (end == &l.a ? "/a" : "/b"),
                         "expected \"host\", a GPU \"gpu0\"..\"gpu" + std::to_string(n.gpu_count - 1) +
                             "\" or a name from /vertices, got \"" + *end + "\"");
    if (!link_names.insert(l.name).second) throw InputError(file, at + "/name", "duplicate link name \"" + l.name + "\"");
    if (!(l.a_to_b_bytes_per_s > 0) || !(l.b_to_a_bytes_per_s > 0))
      throw InputError(file, at, "expected positive a_to_b_bytes_per_s and b_to_a_bytes_per_s (here or in its type)");
    for (const auto& [k, s] : src) n.sources["links/" + l.name + "/" + k] = s;
    n.links.push_back(l);
  }
  f.reject_unknown("id, description, gpu, gpu_count, collective, figures, p2p, link_types, vertices, links");
  validate(n, file, "/figures");
  check_node_ranges(n, file, "/figures");  // the documented ranges (model/limits.hpp)
  return n;
}

NodeSpec node(std::string_view id_or_path, const std::string& field) {
  {
    static std::mutex m;
    std::lock_guard<std::mutex> lock(m);
    auto& cache = builtin_cache();
    if (auto it = cache.find(std::string(id_or_path)); it != cache.end()) return it->second;
    // Only the built-in file asked for is parsed (model/nodes/<id>.json): one of them, not all, at
    // the start of every command.
    for (const EmbeddedFile& e : embedded_data_files())
      if (e.path.substr(0, kNodesDir.size()) == kNodesDir && e.path.ends_with(".json") &&
          e.path.substr(kNodesDir.size(), e.path.size() - kNodesDir.size() - 5) == id_or_path) {
        NodeSpec n = parse_node_file(std::string(e.contents), std::string(e.path));
        n.file.clear();
        if (n.id != id_or_path) throw std::logic_error("built-in node file " + std::string(e.path) + " has id " + n.id);
        return cache.emplace(n.id, std::move(n)).first->second;
      }
  }
  const std::string path(id_or_path);
  std::error_code ec;
  if (!path.empty() && std::filesystem::is_regular_file(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, "/", "cannot read the node file");
    std::ostringstream ss;
    ss << in.rdbuf();
    return parse_node_file(ss.str(), path);
  }
  throw InputError("", field,
                   "expected a built-in node id (" + join(node_ids()) + ") or a node file, got \"" + path + "\"");
}

std::vector<std::string> node_ids() {
  std::vector<std::string> ids;
  for (const EmbeddedFile& e : embedded_data_files())
    if (e.path.substr(0, kNodesDir.size()) == kNodesDir && e.path.ends_with(".json"))
      ids.emplace_back(e.path.substr(kNodesDir.size(), e.path.size() - kNodesDir.size() - 5));
  return ids;
}

}  // namespace chunkflow
