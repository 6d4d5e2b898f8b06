// Grid files and their configurations; see grid.hpp.
#include "sim/grid.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "model/error.hpp"
#include "model/json_file.hpp"
#include "model/limits.hpp"
#include "runtime/plan_limits.hpp"
#include "sim/fit.hpp"
#include "sim/report.hpp"

namespace chunkflow {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kGridKeys =
    "name, description, scenario, models, shapes, nodes, layouts, policies, chunk_mib, resident_fractions, "
    "memory_budget_gib, lookahead, simulated_steps, steps";
/// /workload fields that belong to other axes (models, shapes), not to a layout.
const std::set<std::string> kNotLayoutKeys = {"model", "height", "width", "frames", "batch", "steps"};
const std::set<std::string> kShapeKeys = {"height", "width", "frames", "batch"};

std::string fnv1a_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/// The list under `key`: absent → nullopt; anything but a non-empty array → InputError.
const json* axis(const json& g, const std::string& file, const std::string& key) {
  if (!g.contains(key)) return nullptr;
  const json& v = g.at(key);
  if (!v.is_array() || v.empty()) throw InputError(file, "/" + key, "expected a non-empty list, got " + v.dump());
  return &v;
}

double positive_number(const json& v, const std::string& file, const std::string& field, const std::string& what) {
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    throw InputError(file, field, "expected " + what + ", got " + v.dump());
  return v.get<double>();
}

int integer_at_least(const json& v, int least, const std::string& file, const std::string& field) {
  if (!v.is_number_integer() || v.get<int64_t>() < least || v.get<int64_t>() > 1000000)
    throw InputError(file, field, "expected an integer ≥ " + std::to_string(least) + ", got " + v.dump());
  return int(v.get<int64_t>());
}

/// "key=value;key=value" of a layout entry (strings unquoted), in key order.
std::string layout_label(const json& layout) {
  std::string s;
  for (auto it = layout.begin(); it != layout.end(); ++it)
    s += (s.empty() ? "" : ";") + it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
  return s;
}

/// A path in the grid file: as given when absolute or when it exists from the working folder,
/// else relative to the grid file's folder.
std::string resolve_path(const std::string& p, const std::string& base_dir) {
  const auto ids = node_ids();
  if (std::find(ids.begin(), ids.end(), p) != ids.end()) return p;  // a built-in node id, not a path
  const fs::path path(p);
  std::error_code ec;
  if (path.is_absolute() || base_dir.empty() || fs::exists(path, ec)) return p;
  return (fs::path(base_dir) / path).lexically_normal().string();
}

/// Re-throws an error of a composed scenario with the grid's pointer for the node entry.
[[noreturn]] void rethrow_node_error(const InputError& e, const std::string& file, int i) {
  std::string field = e.field();
  if (field.rfind("/node", 0) == 0) field = "/nodes/" + std::to_string(i) + field.substr(5);
  else if (field.empty() || field == "node") field = "/nodes/" + std::to_string(i);
  // A node file's own errors name that file; keep them.
  if (!e.file().empty() && e.file() != file) throw e;
  throw InputError(file, field, e.message());
}

Grid parse_grid(const json& g, const std::string& file, const std::string& base_dir) {
  if (!g.is_object()) throw InputError(file, "/", "expected a JSON object (a grid: lists per axis)");
  static const std::set<std::string> known = {"name", "description", "scenario", "models", "shapes", "nodes", "layouts",
                                              "policies", "chunk_mib", "resident_fractions", "memory_budget_gib",
                                              "lookahead", "simulated_steps", "steps"};
  for (auto it = g.begin(); it != g.end(); ++it)
    if (!known.count(it.key())) throw InputError(file, "/" + it.key(), std::string("unknown field; expected one of ") + kGridKeys);
  Grid grid;
  grid.sim_memo = std::make_shared<DecisionMemo>();
  grid.file = file;
  grid.text_digest = fnv1a_hex(g.dump());
  auto text = [&](const char* key, std::string& out) {
    if (!g.contains(key)) return;
    if (!g.at(key).is_string()) throw InputError(file, std::string("/") + key, "expected a string, got " + g.at(key).dump());
    out = g.at(key).get<std::string>();
  };
  text("name", grid.name);
  text("description", grid.description);
  if (grid.name.empty()) grid.name = file.empty() ? "grid" : fs::path(file).stem().string();

  // The base scenario: its raw node and workload JSON are what the axes override.
  Scenario base;
  json base_node, base_workload;
  std::string base_name;
  if (g.contains("scenario")) {
    if (!g.at("scenario").is_string()) throw InputError(file, "/scenario", "expected a scenario file path, got " + g.at("scenario").dump());
    const std::string path = resolve_path(g.at("scenario").get<std::string>(), base_dir);
    const json raw = read_json_file(path, "the scenario file");
    base = scenario_from_json(raw, path);
    base_node = raw.at("node");
    if (base_node.is_string()) base_node = resolve_path(base_node.get<std::string>(), fs::path(path).parent_path().string());
    base_workload = raw.at("workload");
    base_name = base.name;
  } else {
    base = default_scenario();
    base_node = base.node.id;
    const Workload& w = base.workload;
    base_workload = {{"model", w.model}, {"height", w.height}, {"width", w.width},
                     {"frames", w.frames}, {"batch", w.batch}, {"ulysses_degree", w.ulysses_degree}};
    base_name = base.name;
  }

  // ---- workload axes -----------------------------------------------------------------------
  std::vector<std::string> models;
  if (const json* a = axis(g, file, "models")) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      const std::string field = "/models/" + std::to_string(i);
      if (!(*a)[i].is_string()) throw InputError(file, field, "expected a model id, got " + (*a)[i].dump());
      try {
        architecture((*a)[i].get<std::string>(), field);
      } catch (const InputError& e) {
        throw InputError(file, field, e.message());
      }
      models.push_back((*a)[i].get<std::string>());
    }
  } else {
    models.push_back(base.workload.model);
  }
  std::vector<json> shapes;
  if (const json* a = axis(g, file, "shapes")) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      const std::string field = "/shapes/" + std::to_string(i);
      const json& s = (*a)[i];
      if (!s.is_object()) throw InputError(file, field, "expected an object {height, width, frames, batch}, got " + s.dump());
      for (auto it = s.begin(); it != s.end(); ++it) {
        if (!kShapeKeys.count(it.key()))
          throw InputError(file, field + "/" + it.key(), "unknown field; expected height, width, frames, batch");
        integer_at_least(*it, 1, file, field + "/" + it.key());
      }
      shapes.push_back(s);
    }
  } else {
    shapes.push_back(json::object());
  }
  std::vector<json> nodes;
  if (const json* a = axis(g, file, "nodes")) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      json n = (*a)[i];
      if (n.is_string()) n = resolve_path(n.get<std::string>(), base_dir);
      else if (!n.is_object())
        throw InputError(file, "/nodes/" + std::to_string(i), "expected a node id, a node file or {\"id\": ..., overrides}, got " + n.dump());
      // The node alone (with the base workload): unknown ids and bad overrides are grid errors.
      try {
        scenario_from_json({{"name", base_name}, {"node", n}, {"workload", base_workload}}, file);
      } catch (const InputError& e) {
        if (e.field().rfind("/node", 0) == 0 || e.field() == "node" || (!e.file().empty() && e.file() != file))
          rethrow_node_error(e, file, int(i));
        // Otherwise the base workload does not fit this node: a combination matter, decided below.
      }
      nodes.push_back(n);
    }
  } else {
    nodes.push_back(base_node);
  }
  std::vector<json> layouts;
  if (const json* a = axis(g, file, "layouts")) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      const std::string field = "/layouts/" + std::to_string(i);
      const json& l = (*a)[i];
      if (!l.is_object()) throw InputError(file, field, "expected an object of /workload layout fields, e.g. {\"ulysses_degree\": 2}, got " + l.dump());
      for (auto it = l.begin(); it != l.end(); ++it) {
        if (kNotLayoutKeys.count(it.key()))
          throw InputError(file, field + "/" + it.key(), "not a layout field (models and shapes have their own lists)");
        if (!it->is_number_integer() && !it->is_string())
          throw InputError(file, field + "/" + it.key(), "expected an integer or a string, got " + it->dump());
        // A key the scenario reader does not know is a grid error, not an invalid combination.
        json w = base_workload;
        w[it.key()] = *it;
        try {
          scenario_from_json({{"name", base_name}, {"node", base_node}, {"workload", w}}, file);
        } catch (const InputError& e) {
          if (e.field() == "/workload/" + it.key() && e.message().rfind("unknown field", 0) == 0)
            throw InputError(file, field + "/" + it.key(), "unknown layout field; " + e.message());
        }
      }
      layouts.push_back(l);
    }
  } else {
    layouts.push_back(json::object());
  }

  // Denoising steps of the generation (/workload/steps; absent: the base's, or the model's default).
  std::vector<json> denoising;
  if (const json* a = axis(g, file, "steps")) {
    for (std::size_t i = 0; i < a->size(); ++i) denoising.push_back(integer_at_least((*a)[i], 1, file, "/steps/" + std::to_string(i)));
  } else {
    denoising.push_back(json());
  }

  // ---- policy axes ---------------------------------------------------------------------------
  const PolicyConfig& bp = base.policy;
  std::vector<std::string> policies;
  if (const json* a = axis(g, file, "policies")) {
    const auto known = policy_names();
    for (std::size_t i = 0; i < a->size(); ++i) {
      const std::string field = "/policies/" + std::to_string(i);
      if (!(*a)[i].is_string() || std::find(known.begin(), known.end(), (*a)[i].get<std::string>()) == known.end()) {
        std::string k;
        for (const auto& n : known) k += (k.empty() ? "" : ", ") + n;
        throw InputError(file, field, "expected one of " + k + ", got " + (*a)[i].dump());
      }
      policies.push_back((*a)[i].get<std::string>());
    }
  } else {
    policies.push_back(bp.policy);
  }
  std::vector<double> chunk_bytes;
  if (const json* a = axis(g, file, "chunk_mib")) {
    for (std::size_t i = 0; i < a->size(); ++i)
      chunk_bytes.push_back(positive_number((*a)[i], file, "/chunk_mib/" + std::to_string(i), "a chunk size > 0 MiB") * kMiB);
  } else {
    chunk_bytes.push_back(bp.chunk_bytes);
  }
  std::vector<std::optional<double>> fractions;
  if (const json* a = axis(g, file, "resident_fractions")) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      const json& v = (*a)[i];
      if (v.is_string() && v.get<std::string>() == "auto") fractions.push_back(std::nullopt);
      else if (v.is_number() && v.get<double>() >= 0 && v.get<double>() <= 1) fractions.push_back(v.get<double>());
      else throw InputError(file, "/resident_fractions/" + std::to_string(i), "expected a number in [0, 1] or \"auto\", got " + v.dump());
    }
  } else {
    fractions.push_back(bp.resident_fraction);
  }
  std::vector<std::optional<double>> budgets;
  if (const json* a = axis(g, file, "memory_budget_gib")) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      if ((*a)[i].is_null()) budgets.push_back(std::nullopt);
      else budgets.push_back(positive_number((*a)[i], file, "/memory_budget_gib/" + std::to_string(i), "a budget > 0 GiB or null") * kGiB);
    }
  } else {
    budgets.push_back(bp.memory_budget_bytes);
  }
  std::vector<int> lookaheads, steps;
  if (const json* a = axis(g, file, "lookahead")) {
    for (std::size_t i = 0; i < a->size(); ++i) lookaheads.push_back(integer_at_least((*a)[i], 1, file, "/lookahead/" + std::to_string(i)));
  } else {
    lookaheads.push_back(bp.lookahead);
  }
  if (const json* a = axis(g, file, "simulated_steps")) {
    for (std::size_t i = 0; i < a->size(); ++i) steps.push_back(integer_at_least((*a)[i], 2, file, "/simulated_steps/" + std::to_string(i)));
  } else {
    steps.push_back(std::max(bp.steps, 2));
  }

  // Policy combinations, collapsing axes that do not apply.
  const int64_t n_policy_product = int64_t(chunk_bytes.size()) * int64_t(fractions.size()) * int64_t(lookaheads.size()) *
                                   int64_t(budgets.size()) * int64_t(steps.size());
  for (const auto& name : policies) {
    int64_t made = 0;
    for (const auto& budget : budgets)
      for (int st : steps) {
        PolicyConfig p;
        p.policy = name;
        p.memory_budget_bytes = budget;
        p.steps = st;
        if (name == "no-offload") {
          p.chunk_bytes = chunk_bytes.front();
          p.lookahead = lookaheads.front();
          p.resident_fraction = 1.0;
          grid.policies.push_back(p);
          ++made;
          continue;
        }
        for (int la : lookaheads)
          for (std::size_t c = 0; c < (name == "chunkflow" ? chunk_bytes.size() : 1); ++c)
            for (const auto& r : fractions) {
              p.lookahead = la;
              p.chunk_bytes = chunk_bytes[c];
              p.resident_fraction = r;
              grid.policies.push_back(p);
              ++made;
            }
      }
    grid.collapsed += n_policy_product - made;
  }

  // Workload combinations, each composed as a scenario and validated by the scenario reader.
  const int64_t n_workload_product = int64_t(models.size()) * int64_t(shapes.size()) * int64_t(nodes.size()) *
                                     int64_t(layouts.size()) * int64_t(denoising.size());
  grid.product_size = n_workload_product * int64_t(policies.size()) * n_policy_product;
  grid.collapsed *= n_workload_product;
  for (std::size_t mi = 0; mi < models.size(); ++mi)
    for (std::size_t si = 0; si < shapes.size(); ++si)
      for (std::size_t ni = 0; ni < nodes.size(); ++ni)
        for (std::size_t li = 0; li < layouts.size(); ++li)
          for (std::size_t di = 0; di < denoising.size(); ++di) {
          json w = base_workload;
          w["model"] = models[mi];
          for (auto it = shapes[si].begin(); it != shapes[si].end(); ++it) w[it.key()] = *it;
          if (!shapes[si].contains("frames") && !architecture(models[mi]).video) w["frames"] = 1;
          for (auto it = layouts[li].begin(); it != layouts[li].end(); ++it) w[it.key()] = *it;
          if (!denoising[di].is_null()) w["steps"] = denoising[di];
          GridWorkload gw;
          try {
            gw.scenario = scenario_from_json({{"name", base_name}, {"node", nodes[ni]}, {"workload", w}}, file);
            const NodeSpec& n = gw.scenario.node;
            const Workload& wl = gw.scenario.workload;
            if (n.collective == CollectiveBackend::host_staged && wl.ulysses_degree > n.gpu_count)
              throw InputError(file, "/workload/ulysses_degree",
                               "expected at most " + std::to_string(n.gpu_count) + " (GPUs of node " + n.id + "), got " +
                                   std::to_string(wl.ulysses_degree));
            gw.cost = forward_cost(wl);
            gw.shape = plan_shape(wl, gw.cost, n);
          } catch (const InputError& e) {
            if (grid.invalid_workloads++ == 0)
              grid.first_invalid_workload = "models/" + std::to_string(mi) + " × shapes/" + std::to_string(si) + " × nodes/" +
                                            std::to_string(ni) + " × layouts/" + std::to_string(li) + " × steps/" + std::to_string(di) + " (" + models[mi] + ", " +
                                            w.dump() + "): " + (e.field().empty() ? "" : e.field() + ": ") + e.message();
            continue;
          }
          Workload& wl = gw.scenario.workload;
          gw.scenario.file = file;
          gw.scenario.name = wl.model + "-" + std::to_string(wl.height) + "x" + std::to_string(wl.width) + "x" +
                             std::to_string(wl.frames) + "-b" + std::to_string(wl.batch) + "-u" +
                             std::to_string(wl.ulysses_degree) + "-" + gw.scenario.node.id;
          gw.node_label = nodes[ni].is_string() ? nodes[ni].get<std::string>() : nodes[ni].dump();
          gw.layout_label = layout_label(layouts[li]);
          grid.workloads.push_back(std::move(gw));
        }
  return grid;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string describe(const PolicyConfig& p) {
  std::ostringstream s;
  s << p.policy;
  if (p.policy == "chunkflow") s << ", chunk " << p.chunk_bytes / kMiB << " MiB";
  if (p.policy != "no-offload")
    s << ", resident fraction " << (p.resident_fraction ? std::to_string(*p.resident_fraction) : std::string("auto"))
      << ", lookahead " << p.lookahead;
  if (p.memory_budget_bytes) s << ", budget " << *p.memory_budget_bytes / kGiB << " GiB";
  s << ", " << p.steps << " simulated steps";
  return s.str();
}

/// Relative cost of simulating a configuration: the ops of its plan, times the passes the
/// chunkflow planner makes (every placement, window mode and pass; auto tries eleven fractions).
double estimated_cost(const GridWorkload& w, const PolicyConfig& p) {
  const double ops = plan_ops_per_step(w.shape, p) * p.steps;
  double planner = 1;
  if (p.policy == "chunkflow") planner = p.resident_fraction ? 3 : 12;
  return ops * planner;
}

}  // namespace

Grid load_grid(const std::string& path) {
  const json g = read_json_file(path, "the grid file");
  return parse_grid(g, path, fs::path(path).parent_path().string());
}

Grid grid_from_text(const std::string& json_text, const std::string& origin, const std::string& base_dir) {
  json g;
  try {
    g = json::parse(json_text);
  } catch (const json::exception& e) {
    throw InputError(origin, "", std::string("malformed JSON: ") + e.what());
  }
  return parse_grid(g, origin, base_dir);
}

GridCursor::GridCursor(const Grid& grid) : grid_(grid) {
  fields_.file = grid_.file;
  fields_.chunk = "/chunk_mib";
  fields_.resident_fraction = "/resident_fractions";
  fields_.lookahead = "/lookahead";
  fields_.steps = "/simulated_steps";
}

std::optional<GridConfig> GridCursor::next() {
  while (w_ < int(grid_.workloads.size())) {
    if (p_ >= int(grid_.policies.size())) {
      ++w_;
      p_ = 0;
      continue;
    }
    const GridWorkload& gw = grid_.workloads[w_];
    const PolicyConfig& p = grid_.policies[p_];
    const int w = w_, pi = p_++;
    try {
      check_plan_limits(gw.shape, p, fields_);
    } catch (const InputError& e) {
      if (invalid_++ == 0)
        first_invalid_ = gw.scenario.name + ", " + describe(p) + ": " + (e.field().empty() ? "" : e.field() + ": ") + e.message();
      continue;
    }
    GridConfig c;
    c.index = index_++;
    c.workload = w;
    c.policy = pi;
    c.cost = estimated_cost(gw, p);
    return c;
  }
  return std::nullopt;
}

GridCounts count_grid(const Grid& grid) {
  GridCounts counts;
  GridCursor cursor(grid);
  while (const auto c = cursor.next()) {
    ++counts.configurations;
    counts.total_cost += c->cost;
  }
  counts.invalid = grid.invalid_workloads * int64_t(grid.policies.size()) + cursor.invalid();
  counts.first_invalid_reason = !grid.first_invalid_workload.empty() ? grid.first_invalid_workload : cursor.first_invalid_reason();
  return counts;
}

GridSimMemoStats grid_sim_memo_stats(const Grid& grid) { return grid.sim_memo ? grid.sim_memo->stats() : GridSimMemoStats{}; }

GridRow run_grid_config(const Grid& grid, const GridConfig& config) {
  const GridWorkload& gw = grid.workloads[config.workload];
  const PolicyConfig& p = grid.policies[config.policy];
  GridRow out;
  out.config = config;
  PlanDecision d;
  try {
    d = decide_plan_validated(gw.scenario.workload, gw.scenario.node, gw.cost, p);  // validated when read
  } catch (const InputError& e) {
    if (!(p.memory_budget_bytes && e.field() == "/policy/memory_budget_gib")) throw;
    out.left_out_reason = gw.scenario.name + ", " + describe(p) + ": " + e.message();
    return out;
  }
  SimOptions options;
  options.record_links = false;
  options.record_memory = false;
  options.record_op_names = false;  // rows need the summary, the bound and the events only
  options.record_rows = false;
  DecisionRun run = run_decision(gw.scenario.workload, gw.scenario.node, gw.cost, config.workload, p.steps, std::move(d),
                                 options, grid.sim_memo.get());
  const SimOutcome& o = run.outcome;
  out.row = SweepRow{int(config.index), p, std::move(run.info), o.summary, o.verdict, o.bound, o.events, o.ops};
  return out;
}

std::string grid_csv_header() {
  return "config_index,model,node,layout,height,width,frames,batch,ulysses_degree,policy,chunk_mib,resident_fraction,"
         "resident_fraction_auto,lookahead,simulated_steps,memory_budget_bytes,step_time_s,peak_memory_bytes,"
         "compute_time_s,h2d_time_s,prefetch_stall_s,collective_time_s,h2d_bytes,offloaded_bytes_per_step,ops,events,"
         "fits,does_not_fit_reason,bound_step_time_s,vs_bound,residency,share_cap_bytes_per_s,denoising_steps,cfg,"
         "forwards_per_step,denoise_time_s\n";
}

std::string grid_csv_line(const Grid& grid, const GridRow& g) {
  const GridWorkload& gw = grid.workloads[g.config.workload];
  const Workload& w = gw.scenario.workload;
  const SweepRow& r = *g.row;
  const StepSummary& m = r.summary;
  std::ostringstream out;
  out.precision(17);
  out << g.config.index << ',' << w.model << ',' << csv_field(gw.node_label) << ',' << csv_field(gw.layout_label) << ','
      << w.height << ',' << w.width << ',' << w.frames << ',' << w.batch << ',' << w.ulysses_degree << ','
      << r.plan.policy << ',' << (r.plan.policy == "chunkflow" ? r.plan.chunk_bytes / kMiB : 0.0) << ','
      << r.plan.resident_fraction << ',' << (r.plan.resident_fraction_auto ? 1 : 0) << ',' << r.plan.lookahead << ','
      << r.plan.steps << ',' << r.plan.memory_budget_bytes << ',' << m.step_time_s << ',' << m.peak_memory_bytes << ','
      << m.compute_time_s << ',' << m.h2d_time_s << ',' << m.prefetch_stall_s << ',' << m.collective_time_s << ','
      << m.h2d_bytes << ',' << r.plan.offloaded_bytes_per_step << ',' << r.ops << ',' << r.events << ','
      << (r.verdict.fits ? 1 : 0) << ',' << csv_field(r.verdict.does_not_fit_reason) << ',' << r.bound.bound_step_time_s
      << ',' << m.step_time_s / r.bound.bound_step_time_s << ',' << csv_field(r.plan.residency) << ','
      << r.plan.share_cap_bytes_per_s << ',' << r.plan.denoising_steps << ',' << r.plan.cfg << ','
      << r.plan.forwards_per_step << ',' << double(r.plan.denoising_steps) * double(r.plan.forwards_per_step) * m.step_time_s
      << '\n';
  return out.str();
}

std::string grid_json_line(const Grid& grid, const GridRow& g) {
  const GridWorkload& gw = grid.workloads[g.config.workload];
  const Workload& w = gw.scenario.workload;
  json j = sweep_row_json(*g.row);
  j["scenario"] = gw.scenario.name;
  j["model"] = w.model;
  j["node"] = gw.node_label;
  j["layout"] = gw.layout_label;
  j["height"] = w.height;
  j["width"] = w.width;
  j["frames"] = w.frames;
  j["batch"] = w.batch;
  j["ulysses_degree"] = w.ulysses_degree;
  j["simulated_steps"] = g.row->plan.steps;
  return j.dump() + "\n";
}

std::string grid_summary_json(const Grid& grid, const GridCounts& counts) {
  json j = {{"file", grid.file},
            {"name", grid.name},
            {"description", grid.description},
            {"digest", grid.text_digest},
            {"product", grid.product_size},
            {"collapsed", grid.collapsed},
            {"invalid", counts.invalid},
            {"first_invalid_reason", counts.first_invalid_reason},
            {"configurations", counts.configurations},
            {"workload_combinations", grid.workloads.size()},
            {"policy_combinations", grid.policies.size()}};
  return j.dump();
}

}  // namespace chunkflow
