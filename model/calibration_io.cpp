// The calibration file: writing, reading (with errors naming the file and the JSON pointer) and
// applying a Calibration to a NodeSpec. Format and mapping: model/calibration.hpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/calibration.hpp"
#include "model/calibration_detail.hpp"
#include "model/error.hpp"
#include "model/json_file.hpp"

namespace chunkflow {

using nlohmann::json;

std::string number_text(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

std::map<std::string, std::string> context_map(const json& j, const std::string& path, const std::string& pointer) {
  std::map<std::string, std::string> c;
  if (j.is_null()) return c;
  if (!j.is_object()) throw InputError(path, pointer, "expected a JSON object, got " + j.dump());
  for (auto it = j.begin(); it != j.end(); ++it) c[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  return c;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
json parse_file(const std::string& path) { return read_json_file(path); }

}  // namespace

// ---- JSON ---------------------------------------------------------------------------------------------

namespace {

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json parameters_json(const Calibration& c) {
  json p = json::object();
  auto put = [&](const char* k, const std::optional<double>& v) {
    if (v) p[k] = *v;
  };
  put("h2d_latency_s", c.h2d_latency_s);
  put("h2d_bytes_per_s", c.h2d_bytes_per_s);
  put("d2h_bytes_per_s", c.d2h_bytes_per_s);
  put("h2d_coupling", c.h2d_coupling);
  put("d2h_coupling", c.d2h_coupling);
  put("collective_latency_s", c.collective_latency_s);
  put("collective_bytes_per_s", c.collective_bytes_per_s);
  put("compute_slowdown_h2d", c.compute_slowdown_h2d);
  put("compute_slowdown_collective", c.compute_slowdown_collective);
  put("gemm_efficiency", c.gemm_efficiency);
  put("attention_efficiency", c.attention_efficiency);
  put("tiled_attention_scale", c.tiled_attention_scale);
  put("gemm_efficiency_scale", c.gemm_efficiency_scale);
  put("attention_efficiency_scale", c.attention_efficiency_scale);
  put("hbm_efficiency_scale", c.hbm_efficiency_scale);
  put("host_kernel_issue_scale", c.host_kernel_issue_scale);
  return p;
}

}  // namespace

std::string calibration_to_json(const Calibration& c, const std::string& context_json) {
  json j = json::object();
  j["context"] = context_json.empty() ? json::object() : json::parse(context_json);
  j["node_id"] = c.node_id;
  j["peak_flop_per_s"] = c.peak_flop_per_s;
  j["compute_launch_s"] = c.compute_launch_s;
  json src = json::array();
  for (const auto& s : c.sources) src.push_back({{"path", s.path}, {"fnv1a64", s.fnv1a64}, {"context", s.context}});
  j["sources"] = src;
  j["parameters"] = parameters_json(c);
  json tables = json::array();
  for (const auto& t : c.gemm_tables) tables.push_back({{"k", t.k}, {"n", t.n}, {"m", t.m}, {"efficiency", t.efficiency}});
  j["gemm_tables"] = tables;
  json fits = json::array();
  for (const auto& f : c.fits) {
    json pts = json::array();
    for (const auto& p : f.points) {
      json pj = {{"x", p.x}, {"measured", p.measured}, {"fitted", p.fitted}};
      for (const auto& [k, v] : p.extra) pj[k] = v;
      pts.push_back(pj);
    }
    fits.push_back({{"name", f.name},
                    {"formula", f.formula},
                    {"measurement_key", f.measurement_key},
                    {"x_name", f.x_name},
                    {"y_name", f.y_name},
                    {"parameters", f.parameters},
                    {"r_squared", finite_or_null(f.r_squared)},
                    {"max_relative_residual", f.max_relative_residual},
                    {"points", pts}});
  }
  j["fits"] = fits;
  j["skipped"] = c.skipped;
  return j.dump(2) + "\n";
}

namespace {

/// Reads a number at `pointer`; `check` says whether it is valid, `expected` what it should be.
double read_number(const json& j, const std::string& file, const std::string& pointer, bool (*check)(double),
                   const std::string& expected) {
  if (!j.is_number()) throw InputError(file, pointer, "expected " + expected + ", got " + j.dump());
  const double v = j.get<double>();
  if (!std::isfinite(v) || !check(v)) throw InputError(file, pointer, "expected " + expected + ", got " + j.dump());
  return v;
}

bool positive(double v) { return v > 0; }
bool non_negative(double v) { return v >= 0; }
bool fraction(double v) { return v > 0 && v <= 1; }

}  // namespace

Calibration load_calibration(const std::string& path) {
  const json j = parse_file(path);
  if (!j.is_object()) throw InputError(path, "/", "expected a calibration object (chunkflow calibrate --out)");
  Calibration c;
  c.file = path;
  auto require = [&](const char* key) -> const json& {
    if (!j.contains(key)) throw InputError(path, std::string("/") + key, "missing (not a calibration written by chunkflow calibrate)");
    return j[key];
  };
  const json& node_id = require("node_id");
  if (!node_id.is_string()) throw InputError(path, "/node_id", "expected a string, got " + node_id.dump());
  c.node_id = node_id.get<std::string>();
  c.peak_flop_per_s = read_number(require("peak_flop_per_s"), path, "/peak_flop_per_s", positive, "a positive FLOP/s");
  c.compute_launch_s = read_number(require("compute_launch_s"), path, "/compute_launch_s", non_negative, "a non-negative number of seconds");
  const json& src = require("sources");
  if (!src.is_array()) throw InputError(path, "/sources", "expected an array, got " + src.dump());
  for (std::size_t i = 0; i < src.size(); ++i) {
    const std::string at = "/sources/" + std::to_string(i);
    if (!src[i].is_object() || !src[i].contains("path") || !src[i]["path"].is_string() || !src[i].contains("fnv1a64") ||
        !src[i]["fnv1a64"].is_string())
      throw InputError(path, at, "expected {\"path\": string, \"fnv1a64\": string, \"context\": {...}}, got " + src[i].dump());
    c.sources.push_back({src[i]["path"].get<std::string>(), src[i]["fnv1a64"].get<std::string>(),
                         context_map(src[i].value("context", json()), path, at + "/context")});
  }
  const json& p = require("parameters");
  if (!p.is_object()) throw InputError(path, "/parameters", "expected an object, got " + p.dump());
  struct Spec {
    const char* key;
    std::optional<double> Calibration::*field;
    bool (*check)(double);
    const char* expected;
  };
  const Spec specs[] = {
      {"h2d_latency_s", &Calibration::h2d_latency_s, non_negative, "a non-negative number of seconds"},
      {"h2d_bytes_per_s", &Calibration::h2d_bytes_per_s, positive, "a positive number of bytes/s"},
      {"d2h_bytes_per_s", &Calibration::d2h_bytes_per_s, positive, "a positive number of bytes/s"},
      {"h2d_coupling", &Calibration::h2d_coupling, fraction, "a retained fraction in (0, 1]"},
      {"d2h_coupling", &Calibration::d2h_coupling, fraction, "a retained fraction in (0, 1]"},
      {"collective_latency_s", &Calibration::collective_latency_s, non_negative, "a non-negative number of seconds"},
      {"collective_bytes_per_s", &Calibration::collective_bytes_per_s, positive, "a positive number of bytes/s"},
      {"compute_slowdown_h2d", &Calibration::compute_slowdown_h2d, non_negative, "a non-negative slowdown fraction"},
      {"compute_slowdown_collective", &Calibration::compute_slowdown_collective, non_negative, "a non-negative slowdown fraction"},
      {"gemm_efficiency", &Calibration::gemm_efficiency, fraction, "an efficiency in (0, 1]"},
      {"attention_efficiency", &Calibration::attention_efficiency, fraction, "an efficiency in (0, 1]"},
      {"tiled_attention_scale", &Calibration::tiled_attention_scale, positive, "a positive scale"},
      {"gemm_efficiency_scale", &Calibration::gemm_efficiency_scale, positive, "a positive scale"},
      {"attention_efficiency_scale", &Calibration::attention_efficiency_scale, positive, "a positive scale"},
      {"hbm_efficiency_scale", &Calibration::hbm_efficiency_scale, positive, "a positive scale"},
      {"host_kernel_issue_scale", &Calibration::host_kernel_issue_scale, positive, "a positive scale"},
  };
  for (auto it = p.begin(); it != p.end(); ++it) {
    const Spec* s = nullptr;
    for (const Spec& sp : specs)
      if (it.key() == sp.key) s = &sp;
    if (!s) {
      std::string known;
      for (const Spec& sp : specs) known += (known.empty() ? "" : ", ") + std::string(sp.key);
      throw InputError(path, "/parameters/" + it.key(), "unknown parameter; expected one of " + known);
    }
    c.*(s->field) = read_number(*it, path, "/parameters/" + it.key(), s->check, s->expected);
  }
  if (j.contains("gemm_tables")) {
    const json& ts = j["gemm_tables"];
    if (!ts.is_array()) throw InputError(path, "/gemm_tables", "expected an array, got " + ts.dump());
    for (std::size_t i = 0; i < ts.size(); ++i) {
      const std::string at = "/gemm_tables/" + std::to_string(i);
      const json& t = ts[i];
      if (!t.is_object()) throw InputError(path, at, "expected {\"k\", \"n\", \"m\": [...], \"efficiency\": [...]}");
      GemmEfficiencyTable out;
      for (const char* key : {"k", "n"}) {
        if (!t.contains(key) || !t[key].is_number_integer() || t[key].get<int64_t>() <= 0)
          throw InputError(path, at + "/" + key, "expected a positive integer, got " + (t.contains(key) ? t[key].dump() : "nothing"));
      }
      out.k = t["k"].get<int64_t>();
      out.n = t["n"].get<int64_t>();
      for (const char* key : {"m", "efficiency"})
        if (!t.contains(key) || !t[key].is_array() || t[key].empty())
          throw InputError(path, at + "/" + key, "expected a non-empty array of numbers");
      if (t["m"].size() != t["efficiency"].size())
        throw InputError(path, at + "/efficiency", "expected as many entries as /m (" + std::to_string(t["m"].size()) + "), got " +
                                                       std::to_string(t["efficiency"].size()));
      for (std::size_t q = 0; q < t["m"].size(); ++q) {
        const double m = read_number(t["m"][q], path, at + "/m/" + std::to_string(q), positive, "a positive token count");
        if (!out.m.empty() && !(m > out.m.back()))
          throw InputError(path, at + "/m/" + std::to_string(q), "expected strictly increasing token counts, got " + number_text(m) +
                                                                      " after " + number_text(out.m.back()));
        out.m.push_back(m);
        out.efficiency.push_back(
            read_number(t["efficiency"][q], path, at + "/efficiency/" + std::to_string(q), fraction, "an efficiency in (0, 1]"));
      }
      c.gemm_tables.push_back(std::move(out));
    }
  }
  if (j.contains("fits") && j["fits"].is_array()) {
    for (const json& f : j["fits"]) {
      if (!f.is_object()) continue;
      CalibrationFit fit;
      fit.name = string_member_or(f, "name");
      fit.formula = string_member_or(f, "formula");
      fit.measurement_key = string_member_or(f, "measurement_key");
      fit.r_squared = f.contains("r_squared") && f["r_squared"].is_number() ? f["r_squared"].get<double>() : kNaN;
      fit.max_relative_residual = f.contains("max_relative_residual") && f["max_relative_residual"].is_number()
                                      ? f["max_relative_residual"].get<double>()
                                      : kNaN;
      if (f.contains("parameters") && f["parameters"].is_object())
        for (auto it = f["parameters"].begin(); it != f["parameters"].end(); ++it)
          if (it->is_number()) fit.parameters[it.key()] = it->get<double>();
      c.fits.push_back(std::move(fit));
    }
  }
  return c;
}

namespace {
/// A GPU's PCIe link towards the host: from "host" (former nodes) or ending at a GPU (node files).
bool is_gpu_host_link(const LinkSpec& l) {
  return l.a == "host" || (l.kind == LinkKind::pcie && l.b.rfind("gpu", 0) == 0 && l.a.rfind("gpu", 0) != 0);
}
}  // namespace

void apply_calibration(const Calibration& c, NodeSpec& node) {
  const double rescale = c.peak_flop_per_s / node.peak_flop_per_s;  // η_node = achieved / peak_node
  if (c.gemm_efficiency) node.gemm_efficiency = std::min(1.0, *c.gemm_efficiency * rescale);
  if (c.attention_efficiency) node.attention_efficiency = std::min(1.0, *c.attention_efficiency * rescale);
  if (c.tiled_attention_scale) node.tiled_attention_scale = *c.tiled_attention_scale;
  if (!c.gemm_tables.empty()) {
    node.gemm_efficiency_tables = c.gemm_tables;
    for (auto& t : node.gemm_efficiency_tables)
      for (double& e : t.efficiency) e = std::min(1.0, e * rescale);
  }
  if (c.h2d_latency_s) node.h2d_latency_s = *c.h2d_latency_s;
  if (c.h2d_bytes_per_s) {
    node.copy_engine_bytes_per_s = *c.h2d_bytes_per_s;
    for (auto& l : node.links)
      if (is_gpu_host_link(l)) l.a_to_b_bytes_per_s = std::max(l.a_to_b_bytes_per_s, *c.h2d_bytes_per_s);
  }
  if (c.d2h_bytes_per_s)
    for (auto& l : node.links)
      if (is_gpu_host_link(l)) l.b_to_a_bytes_per_s = *c.d2h_bytes_per_s;
  if (c.h2d_coupling && c.d2h_coupling)
    for (auto& l : node.links)
      if (is_gpu_host_link(l)) {
        const double h2d_under = *c.h2d_coupling * std::min(l.a_to_b_bytes_per_s, node.copy_engine_bytes_per_s);
        const double d2h_under = *c.d2h_coupling * l.b_to_a_bytes_per_s;
        l.duplex_bytes_per_s = h2d_under + d2h_under;
        // A link modelled with per-direction caps under duplex keeps the fitted asymmetry.
        if (l.a_to_b_under_duplex_bytes_per_s > 0 || l.b_to_a_under_duplex_bytes_per_s > 0) {
          l.a_to_b_under_duplex_bytes_per_s = h2d_under;
          l.b_to_a_under_duplex_bytes_per_s = d2h_under;
        }
      }
  if (c.collective_latency_s) node.collective_latency_s = *c.collective_latency_s;
  if (c.collective_bytes_per_s) {
    // host_staged: P−1 peer flows per rank share the out bytes (P of the measurement).
    const CalibrationFit* f = c.fit("collective");
    const double peers = f && f->parameters.count("ulysses_degree") ? std::max(1.0, f->parameters.at("ulysses_degree") - 1) : 1.0;
    node.collective_flow_bytes_per_s =
        node.collective == CollectiveBackend::pcie_proxy ? *c.collective_bytes_per_s : *c.collective_bytes_per_s / peers;
  }
  if (c.compute_slowdown_h2d) node.compute_slowdown_h2d = *c.compute_slowdown_h2d;
  if (c.compute_slowdown_collective) node.compute_slowdown_collective = *c.compute_slowdown_collective;
  if (c.gemm_efficiency_scale) node.gemm_efficiency = std::min(1.0, node.gemm_efficiency * *c.gemm_efficiency_scale);
  if (c.attention_efficiency_scale)
    node.attention_efficiency = std::min(1.0, node.attention_efficiency * *c.attention_efficiency_scale);
  if (c.hbm_efficiency_scale) node.hbm_efficiency = std::min(1.0, node.hbm_efficiency * *c.hbm_efficiency_scale);
  if (c.host_kernel_issue_scale) node.host_kernel_issue_s *= *c.host_kernel_issue_scale;
  validate(node, c.file, "/node");
}

}  // namespace chunkflow
