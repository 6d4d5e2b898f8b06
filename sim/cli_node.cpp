// `chunkflow node list | show | import`: the built-in nodes, one node's GPUs, graph and route
// bottlenecks, and a node file from `nvidia-smi topo -m` text (model/topo_import.hpp).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <limits>
#include <sstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "model/node.hpp"
#include "model/topo_import.hpp"
#include "sim/cli.hpp"
#include "sim/interrupt.hpp"
#include "sim/maxmin.hpp"
#include "sim/python_process.hpp"
#include "sim/report.hpp"
#include "sim/topology.hpp"

namespace chunkflow {

using nlohmann::json;

namespace {

std::string gbps(double bytes_per_s) {
  if (!(bytes_per_s < std::numeric_limits<double>::infinity())) return "-";
  return fixed(bytes_per_s / 1e9, 1);
}

/// Everything `node show` prints, as JSON (the console form is rendered from it).
json node_json(const NodeSpec& n) {
  MaxMinSolver solver;
  const Topology t(n, solver);
  json j = json::object();
  j["id"] = n.id;
  j["description"] = n.description;
  if (!n.file.empty()) j["file"] = n.file;
  const GpuSpec& g = gpu_spec(n.gpu_id);
  j["gpu"] = {{"id", g.id},
              {"name", g.name},
              {"count", n.gpu_count},
              {"memory_bytes", g.memory_bytes},
              {"hbm_bytes_per_s", g.hbm_bytes_per_s},
              {"bf16_dense_flop_per_s", g.bf16_dense_flop_per_s},
              {"fp8_dense_flop_per_s", g.fp8_dense_flop_per_s},
              {"fp32_flop_per_s", g.fp32_flop_per_s},
              {"sm_count", g.sm_count},
              {"sm_clock_hz", g.sm_clock_hz},
              {"pcie_gen", g.pcie_gen},
              {"pcie_width", g.pcie_width},
              {"nvlink_gen", g.nvlink_gen},
              {"nvlink_bytes_per_s", g.nvlink_bytes_per_s},
              {"p2p_over_pcie", g.p2p_over_pcie}};
  j["figures"] = {{"peak_flop_per_s", n.peak_flop_per_s},
                  {"hbm_bytes_per_s", n.hbm_bytes_per_s},
                  {"gpu_memory_bytes", n.gpu_memory_bytes},
                  {"gemm_efficiency", n.gemm_efficiency},
                  {"attention_efficiency", n.attention_efficiency},
                  {"compute_launch_s", n.compute_launch_s},
                  {"copy_engine_bytes_per_s", n.copy_engine_bytes_per_s},
                  {"h2d_latency_s", n.h2d_latency_s},
                  {"shm_flow_bytes_per_s", n.collective_flow_bytes_per_s},
                  {"p2p_flow_bytes_per_s", n.p2p_flow_bytes_per_s},
                  {"collective_latency_s", n.collective_latency_s}};
  j["collective"] = n.collective == CollectiveBackend::pcie_proxy ? "pcie-proxy" : "routed";
  j["p2p"] = {{"enabled", n.p2p_enabled}, {"level", to_string(n.p2p_level)}};
  j["sources"] = n.sources;
  json vertices = json::array();
  for (std::size_t v = 0; v < t.vertex_names().size(); ++v)
    vertices.push_back({{"name", t.vertex_names()[v]}, {"kind", to_string(t.vertex_kind(static_cast<int>(v)))}});
  j["vertices"] = vertices;
  json links = json::array();
  for (const LinkSpec& l : n.links)
    links.push_back({{"name", l.name},
                     {"kind", to_string(l.kind)},
                     {"a", l.a},
                     {"b", l.b},
                     {"a_to_b_bytes_per_s", l.a_to_b_bytes_per_s},
                     {"b_to_a_bytes_per_s", l.b_to_a_bytes_per_s},
                     {"duplex_bytes_per_s", l.duplex_bytes_per_s},
                     {"a_to_b_under_duplex_bytes_per_s", l.a_to_b_under_duplex_bytes_per_s},
                     {"b_to_a_under_duplex_bytes_per_s", l.b_to_a_under_duplex_bytes_per_s}});
  j["links"] = links;
  auto path = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ">") + x;
    return s;
  };
  json host = json::array();
  for (int a = 0; a < n.gpu_count; ++a) {
    const std::string gv = Topology::gpu_vertex(a);
    const double h2d = Topology::bottleneck_bytes_per_s(solver, t.route(Topology::kHostVertex, gv));
    const double d2h = Topology::bottleneck_bytes_per_s(solver, t.route(gv, Topology::kHostVertex));
    host.push_back({{"gpu", a},
                    {"h2d_path", path(t.route_vertices(Topology::kHostVertex, gv))},
                    {"h2d_bottleneck_bytes_per_s", h2d},
                    {"h2d_copy_bytes_per_s", std::min(h2d, n.copy_engine_bytes_per_s)},
                    {"d2h_bottleneck_bytes_per_s", d2h}});
  }
  j["host_routes"] = host;
  json peers = json::array();
  for (int a = 0; a < n.gpu_count; ++a)
    for (int b = 0; b < n.gpu_count; ++b) {
      if (a == b) continue;
      const Topology::PeerPath& p = t.peer_path(a, b);
      const double bottleneck = Topology::bottleneck_bytes_per_s(solver, p.route);
      peers.push_back({{"src", a},
                       {"dst", b},
                       {"transport", to_string(p.transport)},
                       {"level", to_string(p.level)},
                       {"path", path(p.vertices)},
                       {"bottleneck_bytes_per_s", bottleneck},
                       {"flow_bytes_per_s", std::min(bottleneck, p.flow_cap_bytes_per_s)}});
    }
  j["peer_routes"] = peers;
  return j;
}

std::string show_text(const json& j) {
  std::ostringstream os;
  os << "node " << j["id"].get<std::string>() << ": " << j["description"].get<std::string>() << "\n";
  const json& g = j["gpu"];
  os << "GPUs: " << g["count"] << " x " << g["id"].get<std::string>() << " (" << g["name"].get<std::string>()
     << "): " << fixed(g["bf16_dense_flop_per_s"].get<double>() / 1e12, 1) << " TFLOP/s dense BF16, "
     << fixed(g["hbm_bytes_per_s"].get<double>() / 1e12, 2) << " TB/s memory, "
     << fixed(g["memory_bytes"].get<double>() / (1024.0 * 1024 * 1024), 2) << " GiB, " << g["sm_count"] << " SMs, PCIe Gen"
     << g["pcie_gen"] << " x" << g["pcie_width"];
  if (g["nvlink_bytes_per_s"].get<double>() > 0)
    os << ", NVLink" << g["nvlink_gen"] << " " << gbps(g["nvlink_bytes_per_s"].get<double>()) << " GB/s bidirectional";
  os << "\ncollectives: " << j["collective"].get<std::string>() << "; P2P "
     << (j["p2p"]["enabled"].get<bool>() ? "on up to level " + j["p2p"]["level"].get<std::string>() : std::string("off"))
     << "\n\n";
  // Figures: name, value in SI units, source (left-aligned prose).
  for (const auto& [k, v] : j["figures"].items()) {
    const auto it = j["sources"].find(k);
    char line[96];
    std::snprintf(line, sizeof line, "  %-26s %-12.4g ", k.c_str(), v.get<double>());
    os << line << (it == j["sources"].end() ? "" : it->get<std::string>()) << "\n";
  }
  os << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& l : j["links"]) {
    auto opt = [](double v) { return v > 0 ? gbps(v) : std::string("-"); };
    rows.push_back({l["name"], l["kind"], l["a"].get<std::string>() + "-" + l["b"].get<std::string>(),
                    gbps(l["a_to_b_bytes_per_s"]), gbps(l["b_to_a_bytes_per_s"]), opt(l["duplex_bytes_per_s"]),
                    opt(l["a_to_b_under_duplex_bytes_per_s"]), opt(l["b_to_a_under_duplex_bytes_per_s"])});
  }
  os << format_table({"link", "kind", "a-b", "a_to_b", "b_to_a", "duplex", "a_to_b_duplex", "b_to_a_duplex"},
                     {"", "", "", "GB/s", "GB/s", "GB/s", "GB/s", "GB/s"}, rows)
     << "\n";
  rows.clear();
  for (const auto& h : j["host_routes"])
    rows.push_back({"gpu" + h["gpu"].dump(), h["h2d_path"], gbps(h["h2d_bottleneck_bytes_per_s"]),
                    gbps(h["h2d_copy_bytes_per_s"]), gbps(h["d2h_bottleneck_bytes_per_s"])});
  os << format_table({"gpu", "h2d_path", "h2d_bottleneck", "h2d_one_copy", "d2h_bottleneck"},
                     {"", "", "GB/s", "GB/s", "GB/s"}, rows)
     << "\n";
  rows.clear();
  for (const auto& p : j["peer_routes"])
    rows.push_back({"gpu" + p["src"].dump() + ">gpu" + p["dst"].dump(), p["transport"], p["level"], p["path"],
                    gbps(p["bottleneck_bytes_per_s"]), gbps(p["flow_bytes_per_s"])});
  if (!rows.empty())
    os << format_table({"pair", "transport", "level", "path", "bottleneck", "one_flow"}, {"", "", "", "", "GB/s", "GB/s"},
                       rows);
  return os.str();
}

}  // namespace

void register_node_commands(CLI::App& app, const CliContext& context) {
  auto* node_cmd = app.add_subcommand("node", "Built-in nodes, one node's graph and routes, and import of nvidia-smi topo -m");
  node_cmd->require_subcommand(1);
  {
    auto* cmd = node_cmd->add_subcommand("list", "List the built-in nodes");
    cmd->callback([] {
      // Descriptions are long prose: id, GPU count and GPU in columns, the description after them.
      std::printf("%-20s %4s  %-14s %s\n", "id", "gpus", "gpu", "description");
      for (const std::string& id : node_ids()) {
        const NodeSpec n = node(id);
        std::printf("%-20s %4d  %-14s %s\n", id.c_str(), n.gpu_count, n.gpu_id.c_str(), n.description.c_str());
      }
    });
  }
  {
    auto* cmd = node_cmd->add_subcommand("show", "A node's GPUs, figures with sources, graph and route bottlenecks");
    auto id = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    auto plot = std::make_shared<std::string>();
    cmd->add_option("node", *id, "Built-in node id or node file")->required();
    cmd->add_flag("--json", *as_json, "Print JSON");
    cmd->add_option("--plot", *plot, "Draw the topology to this PNG (scripts/plot_node.py, matplotlib)");
    cmd->callback([id, as_json, plot, context] {
      const json j = node_json(node(*id, "node"));
      if (*as_json)
        std::cout << j.dump(2) << "\n";
      else
        std::cout << show_text(j);
      if (plot->empty()) return;
      const std::string script = find_script(context, "plot_node.py");
      const std::string tmp = *plot + ".node.json";
      write_file_atomic(tmp, j.dump());
      const int rc = script.empty() ? 127 : run_python(script, {tmp, *plot});
      std::remove(tmp.c_str());
      if (const int sig = interrupt_signal()) throw Interrupted(sig, "drawing " + *plot + " (no image written)");
      if (rc != 0)
        throw std::runtime_error("no plot (scripts/plot_node.py with /usr/bin/python3 and matplotlib; exit " +
                                 std::to_string(rc) + "); run scripts/setup.sh");
      if (!*as_json) std::cout << "wrote " << *plot << "\n";
    });
  }
  {
    auto* cmd = node_cmd->add_subcommand(
        "import", "Write a node file from the text of `nvidia-smi topo -m` (GPU rows and columns, NIC rows, legend or not)");
    auto o = std::make_shared<TopoImportOptions>();
    auto out = std::make_shared<std::string>();
    cmd->add_option("--topo", o->topo_file, "File holding the output of nvidia-smi topo -m")->required();
    cmd->add_option("--gpu", o->gpu_id, "GPU catalogue id: " + [] {
      std::string s;
      for (const auto& g : gpu_ids()) s += (s.empty() ? "" : ", ") + g;
      return s;
    }())->required();
    cmd->add_option("--pcie-gen", o->pcie_gen, "PCIe generation of the GPU links (default: the catalogue's)");
    cmd->add_option("--id", o->node_id, "Id of the node (default: <N>x<gpu>-imported)");
    cmd->add_option("--out", *out, "Node file to write (default: print on stdout)");
    cmd->callback([o, out] {
      const std::string text = import_topo_file(*o);  // throws InputError before anything is written
      if (out->empty())
        std::cout << text;
      else {
        write_file_atomic(*out, text);
        std::cerr << "wrote " << *out << "\n";
      }
    });
  }
}

}  // namespace chunkflow
