// nvidia-smi topo -m import; see topo_import.hpp.
#include "model/topo_import.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include "model/embedded_data.hpp"
#include "model/error.hpp"
#include "model/node.hpp"

namespace chunkflow {

using ordered_json = nlohmann::ordered_json;

namespace {

// NVLink as the simulator's links carry it: the per-direction rate NCCL's collectives reach, not the
// raw signalling rate. All-to-all busbw 320 GB/s on 8x H100 SXM over NVLink4 x18 (450 GB/s raw per
// direction) [GTC25]; 8x A100 gives 210 of 300 (0.70), the same ratio (gpu-catalogue.md §2.3). The
// built-in NVLink nodes use their measured figures directly (model/nodes/*.json).
constexpr double kNcclOverRawNvlink = 320.0 / 450.0;

/// Lines of `text` without CR, ANSI escape sequences (ESC [ ... letter) and other control bytes
/// but tab.
std::vector<std::string> clean_lines(const std::string& text) {
  std::vector<std::string> lines{""};
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      lines.emplace_back();
    } else if (c == '\x1b') {
      if (i + 1 < text.size() && text[i + 1] == '[') {
        i += 2;
        while (i < text.size() && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
      }
    } else if (c == '\t' || static_cast<unsigned char>(c) >= 0x20) {
      lines.back() += c;
    }
  }
  return lines;
}

std::vector<std::string> tokens(const std::string& line) {
  std::istringstream is(line);
  std::vector<std::string> out;
  for (std::string t; is >> t;) out.push_back(t);
  return out;
}

// The patterns are compiled once: compiling one per matrix cell made a 64-GPU matrix (4096 cells)
// spend most of its import time in std::regex's constructor.
bool is_gpu_name(const std::string& t) {
  static const std::regex gpu_name("GPU[0-9]+");
  return std::regex_match(t, gpu_name);
}

/// A known code: X, NV<n> (n in 1..999: a link count, NV18 on an H100 SXM), PIX, PXB, PHB, NODE,
/// SYS (SOC → SYS). Returns "" for an unknown one, so that nv_count's std::stoi cannot overflow.
std::string normalise_code(const std::string& t) {
  if (t == "X" || t == "PIX" || t == "PXB" || t == "PHB" || t == "NODE" || t == "SYS") return t;
  if (t == "SOC") return "SYS";
  static const std::regex nvlink_code("NV[1-9][0-9]{0,2}");
  if (std::regex_match(t, nvlink_code)) return t;
  return "";
}

int nv_count(const std::string& code) { return code.rfind("NV", 0) == 0 ? std::stoi(code.substr(2)) : 0; }

struct UnionFind {
  std::vector<int> p;
  explicit UnionFind(int n) : p(static_cast<std::size_t>(n)) { std::iota(p.begin(), p.end(), 0); }
  int find(int x) { return p[x] == x ? x : p[x] = find(p[x]); }
  void join(int a, int b) { p[find(a)] = find(b); }
};

std::string cell_name(const TopoMatrix& m, std::size_t r, std::size_t c) {
  return "row " + m.devices[r] + ", column " + m.devices[c];
}

/// The raw JSON of a built-in node file.
ordered_json builtin_node_json(const std::string& id) {
  for (const EmbeddedFile& e : embedded_data_files())
    if (e.path == "model/nodes/" + id + ".json") return ordered_json::parse(e.contents.begin(), e.contents.end());
  throw std::logic_error("built-in node " + id + " is not embedded");
}

}  // namespace

TopoMatrix parse_topo_matrix(const std::string& text, const std::string& file) {
  const std::vector<std::string> lines = clean_lines(text);
  // The header: a line whose first token is GPU0 and whose second is not a cell ("X").
  std::size_t header = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto t = tokens(lines[i]);
    if (t.size() >= 1 && t[0] == "GPU0" && (t.size() == 1 || t[1] != "X")) {
      header = i;
      break;
    }
  }
  if (header == lines.size())
    throw InputError(file, "/", "expected the matrix of nvidia-smi topo -m (a header line starting with GPU0), found none");
  TopoMatrix m;
  for (const std::string& t : tokens(lines[header])) {
    // Matrix columns end where "CPU Affinity", "NUMA Affinity" or "GPU NUMA ID" begin.
    if (t == "CPU" || t == "NUMA" || t == "GPU" || t == "Affinity") break;
    m.devices.push_back(t);
  }
  const std::size_t n = m.devices.size();
  constexpr std::size_t kMaxDevices = 256;  // GPUs and NICs of one node; bounds the n × n matrix
  if (n > kMaxDevices)
    throw InputError(file, "header", "expected at most " + std::to_string(kMaxDevices) + " devices (columns), got " +
                                         std::to_string(n));
  for (std::size_t c = 0; c < n; ++c) {
    if (is_gpu_name(m.devices[c])) {
      if (m.devices[c] != "GPU" + std::to_string(m.gpu_count))
        throw InputError(file, "header, column " + std::to_string(c + 1),
                         "expected GPU" + std::to_string(m.gpu_count) + " (GPUs in order before other devices), got " +
                             m.devices[c]);
      ++m.gpu_count;
    }
    for (std::size_t d = 0; d < c; ++d)
      if (m.devices[d] == m.devices[c])
        throw InputError(file, "header, column " + std::to_string(c + 1), "duplicate device " + m.devices[c]);
  }
  m.codes.assign(n, std::vector<std::string>(n));
  m.numa_affinity.assign(static_cast<std::size_t>(m.gpu_count), "");
  std::size_t line = header + 1;
  for (std::size_t r = 0; r < n; ++r, ++line) {
    while (line < lines.size() && tokens(lines[line]).empty()) ++line;  // blank lines inside the matrix
    const std::vector<std::string> t = line < lines.size() ? tokens(lines[line]) : std::vector<std::string>{};
    if (t.empty() || t[0] != m.devices[r])
      throw InputError(file, "row " + m.devices[r],
                       "expected the row of " + m.devices[r] + " (the matrix has " + std::to_string(n) +
                           " columns), got " + (t.empty() ? std::string("the end of the matrix") : "\"" + lines[line] + "\""));
    for (std::size_t c = 0; c < n; ++c) {
      if (c + 1 >= t.size())
        throw InputError(file, cell_name(m, r, c), "missing cell: the row has " + std::to_string(t.size() - 1) +
                                                       " cells for " + std::to_string(n) + " columns");
      const std::string code = normalise_code(t[c + 1]);
      if (code.empty())
        throw InputError(file, cell_name(m, r, c),
                         "expected X, NV<n>, PIX, PXB, PHB, NODE, SYS or SOC, got \"" + t[c + 1] + "\"");
      if ((code == "X") != (r == c))
        throw InputError(file, cell_name(m, r, c), r == c ? "expected X on the diagonal, got " + code
                                                          : std::string("X off the diagonal"));
      m.codes[r][c] = code;
    }
    // GPU rows go on with CPU affinity, NUMA affinity, GPU NUMA ID (each may be absent).
    if (static_cast<int>(r) < m.gpu_count && t.size() > n + 2) {
      const std::string& numa = t[n + 2];
      static const std::regex numa_id("[0-9]+");
      if (std::regex_match(numa, numa_id)) m.numa_affinity[r] = numa;
    }
    // A NIC row may carry nothing after its cells; a GPU row at most three more fields.
    if (t.size() > n + 1 + 3 + 1)
      throw InputError(file, "row " + m.devices[r],
                       "expected " + std::to_string(n) + " cells and at most CPU Affinity, NUMA Affinity and GPU NUMA ID, got " +
                           std::to_string(t.size() - 1) + " fields");
  }
  if (m.gpu_count == 0) throw InputError(file, "header", "expected at least one GPU column (GPU0), found none");
  if (m.gpu_count > 64)
    throw InputError(file, "header", "expected at most 64 GPUs (a node file's limit), got " + std::to_string(m.gpu_count));
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t c = r + 1; c < n; ++c)
      if (m.codes[r][c] != m.codes[c][r])
        throw InputError(file, cell_name(m, r, c),
                         "asymmetric matrix: " + m.codes[r][c] + " here but " + m.codes[c][r] + " at " + cell_name(m, c, r));
  return m;
}

InferredTopology infer_topology(const TopoMatrix& m, int gpu_nvlink_links) {
  const int G = m.gpu_count;
  const int n = static_cast<int>(m.devices.size());
  InferredTopology t;
  t.gpu_count = G;
  UnionFind socket(n), bridge(n), sw(n);
  std::vector<char> under_switch(static_cast<std::size_t>(n), 0);
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const std::string& c = m.codes[a][b];
      if (c == "PIX" || c == "PXB") {
        sw.join(a, b);
        under_switch[a] = under_switch[b] = 1;
      }
      if (c == "PIX" || c == "PXB" || c == "PHB") bridge.join(a, b);
      if (c == "PIX" || c == "PXB" || c == "PHB" || c == "NODE") socket.join(a, b);
    }
  for (int a = 0; a < G; ++a)
    for (int b = a + 1; b < G; ++b)
      if (!m.numa_affinity[a].empty() && m.numa_affinity[a] == m.numa_affinity[b]) socket.join(a, b);
  // Groups over GPUs only (NICs joined them above).
  auto gpu_groups = [G](UnionFind& uf, int* count) {
    std::map<int, int> index;
    std::vector<int> out;
    for (int i = 0; i < G; ++i) out.push_back(index.emplace(uf.find(i), static_cast<int>(index.size())).first->second);
    *count = static_cast<int>(index.size());
    return out;
  };
  t.socket_of_gpu = gpu_groups(socket, &t.socket_count);
  t.host_bridge_of_gpu = gpu_groups(bridge, &t.host_bridge_count);
  {
    std::map<int, int> index;
    for (int i = 0; i < G; ++i) {
      if (!under_switch[i]) {
        t.switch_of_gpu.push_back(-1);
        continue;
      }
      t.switch_of_gpu.push_back(index.emplace(sw.find(i), static_cast<int>(index.size())).first->second);
    }
    t.switch_count = static_cast<int>(index.size());
  }
  t.nvlinks.assign(static_cast<std::size_t>(G), std::vector<int>(static_cast<std::size_t>(G), 0));
  bool all_pairs = G > 1;
  int common = -1;
  for (int a = 0; a < G; ++a)
    for (int b = 0; b < G; ++b) {
      if (a == b) continue;
      t.nvlinks[a][b] = nv_count(m.codes[a][b]);
      if (t.nvlinks[a][b] == 0) all_pairs = false;
      else if (common < 0) common = t.nvlinks[a][b];
      else if (common != t.nvlinks[a][b]) all_pairs = false;
    }
  t.nvswitch = all_pairs && G > 2 && common * (G - 1) > gpu_nvlink_links;
  return t;
}

std::string import_topo(const std::string& text, const std::string& file, const TopoImportOptions& o) {
  const GpuSpec& gpu = gpu_spec(o.gpu_id, "--gpu");
  const int gen = o.pcie_gen.value_or(gpu.pcie_gen);
  if (gen != 4 && gen != 5)
    throw InputError("", "--pcie-gen", "expected 4 or 5 (the generations with sourced figures), got " + std::to_string(gen));
  const TopoMatrix m = parse_topo_matrix(text, file);
  const InferredTopology t = infer_topology(m, gpu.nvlink_links);
  const int G = t.gpu_count;

  // Sourced figures of the same PCIe generation from a built-in node (8xh100-pcie: Gen5,
  // 8xl40s: Gen4), and the GEMM efficiency of a built-in node with the same GPU when there is one.
  const ordered_json donor = builtin_node_json(gen == 5 ? "8xh100-pcie" : "8xl40s");
  const std::string from = std::string(" (from built-in node ") + (gen == 5 ? "8xh100-pcie" : "8xl40s") + ")";
  ordered_json figures = donor["figures"];
  for (auto& [k, v] : figures.items()) v["source"] = v["source"].get<std::string>() + from;
  figures["gemm_efficiency"] = {{"value", 0.75},
                                {"source", "assumed: no GEMM measurement of " + gpu.id + " in a built-in node; a lead until calibrated"}};
  for (const std::string& id : node_ids()) {
    const ordered_json nj = builtin_node_json(id);
    if (nj["gpu"] == gpu.id) {
      figures["gemm_efficiency"] = nj["figures"]["gemm_efficiency"];
      figures["gemm_efficiency"]["source"] = nj["figures"]["gemm_efficiency"]["source"].get<std::string>() +
                                             " (from built-in node " + id + ")";
      break;
    }
  }
  if (G == 1) {
    figures["shm_flow_bytes_per_s"]["source"] =
        "per-flow cap of the proxy's host traffic" + std::string(" ") + figures["shm_flow_bytes_per_s"]["source"].get<std::string>();
  }

  const std::string pcie = gen == 5 ? "pcie-gen5-x16" : "pcie-gen4-x16";
  const std::string mem = gen == 5 ? "ddr5-socket" : "ddr4-socket";
  const std::string upi = gen == 5 ? "upi-gen5-host" : "upi-gen4-host";
  const ordered_json& donor_types = donor["link_types"];
  ordered_json types = ordered_json::object();
  for (const std::string& k : {pcie, mem, upi}) {
    types[k] = donor_types[k];
    for (auto& [f, v] : types[k].items())
      if (v.is_object()) v["source"] = v["source"].get<std::string>() + from;
  }
  types["fabric"] = {{"kind", "pcie"},
                     {"a_to_b_bytes_per_s", {{"value", 4 * donor_types[pcie]["a_to_b_bytes_per_s"]["value"].get<double>()},
                                             {"source", "assumed: on-die fabric between a host bridge and its socket, 4 x the GPU link, not a bottleneck"}}},
                     {"b_to_a_bytes_per_s", {{"value", 4 * donor_types[pcie]["b_to_a_bytes_per_s"]["value"].get<double>()},
                                             {"source", "assumed: as a_to_b"}}}};
  const double per_link_bidir = gpu.nvlink_links > 0 ? gpu.nvlink_bytes_per_s / gpu.nvlink_links : 0;

  ordered_json vertices = ordered_json::array();
  ordered_json links = ordered_json::array();
  bool uses_fabric = false, uses_upi = false;
  for (int s = 0; s < t.socket_count; ++s) {
    vertices.push_back({{"name", "cpu" + std::to_string(s)}, {"kind", "cpu"}});
    const std::string memory = s == 0 ? "host" : "host" + std::to_string(s);
    if (s > 0) vertices.push_back({{"name", memory}, {"kind", "host_memory"}});
    links.push_back({{"name", "mem" + std::to_string(s)}, {"a", memory}, {"b", "cpu" + std::to_string(s)}, {"type", mem}});
  }
  for (int a = 0; a < t.socket_count; ++a)
    for (int b = a + 1; b < t.socket_count; ++b) {
      links.push_back({{"name", "upi" + std::to_string(a) + std::to_string(b)},
                       {"a", "cpu" + std::to_string(a)},
                       {"b", "cpu" + std::to_string(b)},
                       {"type", upi}});
      uses_upi = true;
    }
  // Children of each host bridge: switches and bare GPUs. A bridge with one child hangs that child
  // on its socket directly; with several it becomes a host_bridge vertex.
  std::map<int, std::set<std::string>> children;
  for (int g = 0; g < G; ++g)
    children[t.host_bridge_of_gpu[g]].insert(t.switch_of_gpu[g] >= 0 ? "sw" + std::to_string(t.switch_of_gpu[g])
                                                                      : "gpu" + std::to_string(g));
  std::map<int, std::string> bridge_vertex;
  for (int g = 0; g < G; ++g) {
    const int hb = t.host_bridge_of_gpu[g];
    const std::string cpu = "cpu" + std::to_string(t.socket_of_gpu[g]);
    if (bridge_vertex.count(hb)) continue;
    if (children[hb].size() > 1) {
      bridge_vertex[hb] = "hb" + std::to_string(hb);
      vertices.push_back({{"name", bridge_vertex[hb]}, {"kind", "host_bridge"}});
      links.push_back({{"name", "fabric.hb" + std::to_string(hb)}, {"a", cpu}, {"b", bridge_vertex[hb]}, {"type", "fabric"}});
      uses_fabric = true;
    } else {
      bridge_vertex[hb] = cpu;
    }
  }
  std::set<int> switches_done;
  for (int g = 0; g < G; ++g) {
    const std::string parent = bridge_vertex[t.host_bridge_of_gpu[g]];
    const int s = t.switch_of_gpu[g];
    if (s >= 0 && switches_done.insert(s).second) {
      vertices.push_back({{"name", "sw" + std::to_string(s)}, {"kind", "pcie_switch"}});
      links.push_back({{"name", "pcie.sw" + std::to_string(s)}, {"a", parent}, {"b", "sw" + std::to_string(s)}, {"type", pcie}});
    }
    links.push_back({{"name", "pcie.gpu" + std::to_string(g)},
                     {"a", s >= 0 ? "sw" + std::to_string(s) : parent},
                     {"b", "gpu" + std::to_string(g)},
                     {"type", pcie}});
  }
  auto nvlink_body = [&](int count) {
    const double per_dir = count * per_link_bidir / 2 * kNcclOverRawNvlink;
    const std::string src = std::to_string(count) + " NVLinks (NV" + std::to_string(count) + " in the imported matrix) x " +
                            gpu.id + "'s " + std::to_string(per_link_bidir / 1e9) + " GB/s per link both ways (catalogue: " +
                            gpu.sources.at("nvlink_bytes_per_s") +
                            "), half per direction, x 320/450: what NCCL's collectives reach of the raw rate (all-to-all "
                            "busbw 320 GB/s on 8x H100 SXM, 450 raw [GTC25], gpu-catalogue.md §2.3)";
    return ordered_json{{"kind", "nvlink"},
                        {"a_to_b_bytes_per_s", {{"value", per_dir}, {"source", src}}},
                        {"b_to_a_bytes_per_s", {{"value", per_dir}, {"source", src}}}};
  };
  bool any_nvlink = false;
  if (t.nvswitch) {
    vertices.push_back({{"name", "nvswitch"}, {"kind", "nvswitch"}});
    for (int g = 0; g < G; ++g)
      links.push_back(ordered_json{{"name", "nvlink.gpu" + std::to_string(g)}, {"a", "gpu" + std::to_string(g)}, {"b", "nvswitch"}});
    any_nvlink = true;
  } else {
    for (int a = 0; a < G; ++a)
      for (int b = a + 1; b < G; ++b)
        if (t.nvlinks[a][b] > 0) {
          ordered_json l{{"name", "nvlink.gpu" + std::to_string(a) + "-gpu" + std::to_string(b)},
                         {"a", "gpu" + std::to_string(a)},
                         {"b", "gpu" + std::to_string(b)}};
          l.update(nvlink_body(t.nvlinks[a][b]));
          links.push_back(l);
          any_nvlink = true;
        }
  }
  if (t.nvswitch) {
    types["nvlink"] = nvlink_body(t.nvlinks[0][1]);
    for (auto& l : links)
      if (l["name"].get<std::string>().rfind("nvlink.gpu", 0) == 0) l["type"] = "nvlink";
  }
  if (any_nvlink && per_link_bidir <= 0)
    throw InputError(file, "/", "the matrix has NVLinks (NV#) but catalogue GPU " + gpu.id + " has no NVLink figure");
  if (!uses_fabric) types.erase("fabric");
  if (!uses_upi) types.erase(upi);

  ordered_json j = ordered_json::object();
  const std::string id = o.node_id.empty() ? std::to_string(G) + "x" + gpu.id + "-imported" : o.node_id;
  std::ostringstream desc;
  desc << G << "x " << gpu.name << " imported from " << file << " (nvidia-smi topo -m): " << t.socket_count
       << " socket(s)/NUMA node(s), " << t.host_bridge_count << " host-bridge group(s), " << t.switch_count
       << " PCIe switch(es), " << (t.nvswitch ? "NVSwitch" : any_nvlink ? "NVLink bridges" : "no NVLink") << "; PCIe Gen"
       << gen << " x16 assumed for every GPU and switch uplink";
  j["id"] = id;
  j["description"] = desc.str();
  j["gpu"] = gpu.id;
  j["gpu_count"] = G;
  j["collective"] = G == 1 ? "pcie-proxy" : "routed";
  j["figures"] = figures;
  j["p2p"] = {{"enabled", gpu.p2p_over_pcie},
              {"level", "PXB"},
              {"source", "NCCL default p2pLevel PATH_PXB (src/graph/paths.cc ncclTopoCheckP2p); P2P on/off from the catalogue: " +
                             gpu.sources.at("p2p_over_pcie")}};
  j["link_types"] = types;
  j["vertices"] = vertices;
  j["links"] = links;
  const std::string out = j.dump(2) + "\n";
  (void)parse_node_file(out, id + ".json");  // what we write must read back
  return out;
}

std::string import_topo_file(const TopoImportOptions& o) {
  std::ifstream in(o.topo_file, std::ios::binary);
  if (!in) throw InputError(o.topo_file, "--topo", "cannot read the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return import_topo(ss.str(), o.topo_file, o);
}

}  // namespace chunkflow
