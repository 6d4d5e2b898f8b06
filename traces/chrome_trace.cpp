// Chrome Trace Event JSON writer and reader; layout in traces/chrome_trace.hpp.
#include "traces/chrome_trace.hpp"

#include <cmath>
#include <cstdio>
#include <istream>
#include <limits>
#include <map>
#include <ostream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace chunkflow {

namespace {

using nlohmann::json;

constexpr double kMicrosecondsPerSecond = 1e6;

// ---------------------------------------------------------------------------------------------
// Writer
// ---------------------------------------------------------------------------------------------

double finite(double value, const std::string& what) {
  if (!std::isfinite(value)) {
    throw std::invalid_argument("write_chrome_trace: " + what + " is not finite (" +
                                std::to_string(value) + "); JSON has no NaN or infinity");
  }
  return value;
}

std::string row_label(const TimelineRow& row) {
  return "row op_id " + std::to_string(row.op_id) + " (\"" + row.name + "\")";
}

json metadata(const char* name, int pid, int tid, const std::string& value) {
  return json{{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"args", {{"name", value}}}};
}

std::string rate_label(double bytes_per_s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GB/s", bytes_per_s / 1e9);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Reader: every access names its JSON pointer in errors
// ---------------------------------------------------------------------------------------------

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string shown(const json& value) {
  std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
  constexpr std::size_t kMaxShown = 60;
  if (s.size() > kMaxShown) s = s.substr(0, kMaxShown) + "...";
  return s;
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& message) const {
    throw std::runtime_error(file_ + ": " + (pointer.empty() ? "(document)" : pointer) + ": " +
                             message);
  }
  [[noreturn]] void fail_value(const std::string& pointer, const std::string& expected,
                               const json& value) const {
    fail(pointer, "expected " + expected + ", got " + shown(value));
  }

  const json& field(const json& object, const std::string& pointer, const std::string& key,
                    const std::string& expected) const {
    auto it = object.find(key);
    if (it == object.end()) fail(pointer + "/" + escape_pointer_token(key), "missing, expected " + expected);
    return *it;
  }

  const json& object(const json& parent, const std::string& pointer, const std::string& key) const {
    const json& v = field(parent, pointer, key, "an object");
    if (!v.is_object()) fail_value(pointer + "/" + escape_pointer_token(key), "an object", v);
    return v;
  }

  double number(const json& parent, const std::string& pointer, const std::string& key) const {
    const json& v = field(parent, pointer, key, "a number");
    if (!v.is_number()) fail_value(pointer + "/" + escape_pointer_token(key), "a number", v);
    return v.get<double>();
  }

  int integer_value(const json& v, const std::string& pointer) const {
    if (v.is_number_unsigned()) {
      if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
        fail_value(pointer, "an integer that fits in int", v);
      }
      return static_cast<int>(v.get<std::uint64_t>());
    }
    if (v.is_number_integer()) {
      const auto i = v.get<std::int64_t>();
      if (i < std::numeric_limits<int>::min() || i > std::numeric_limits<int>::max()) {
        fail_value(pointer, "an integer that fits in int", v);
      }
      return static_cast<int>(i);
    }
    fail_value(pointer, "an integer", v);
  }

  int integer(const json& parent, const std::string& pointer, const std::string& key) const {
    return integer_value(field(parent, pointer, key, "an integer"),
                         pointer + "/" + escape_pointer_token(key));
  }

  std::string string(const json& parent, const std::string& pointer, const std::string& key) const {
    const json& v = field(parent, pointer, key, "a string");
    if (!v.is_string()) fail_value(pointer + "/" + escape_pointer_token(key), "a string", v);
    return v.get<std::string>();
  }

  /// Exact seconds from args[key_s] when present, else from the event's µs field.
  double seconds(const json& args, const std::string& args_pointer, const std::string& key_s,
                 double us) const {
    if (args.contains(key_s)) return number(args, args_pointer, key_s);
    return us / kMicrosecondsPerSecond;
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

}  // namespace

void write_chrome_trace(const Timeline& timeline, std::ostream& out) {
  std::vector<json> events;

  // Processes: ranks 0..ranks−1 plus any other rank a row or memory sample uses.
  std::set<int> pids;
  for (int r = 0; r < timeline.ranks; ++r) pids.insert(r);
  for (const auto& row : timeline.rows) pids.insert(row.rank);
  for (const auto& m : timeline.memory) pids.insert(m.rank);
  for (int pid : pids) {
    events.push_back(metadata("process_name", pid, 0, "rank " + std::to_string(pid)));
    for (Lane lane : {Lane::compute, Lane::h2d, Lane::comm}) {
      events.push_back(metadata("thread_name", pid, static_cast<int>(lane), to_string(lane)));
    }
  }
  // Link tracks in order of first sample.
  std::map<std::string, int> link_tid;
  for (const auto& l : timeline.links) {
    if (!link_tid.count(l.link)) {
      const int tid = kFirstLinkTid + static_cast<int>(link_tid.size());
      link_tid.emplace(l.link, tid);
      if (tid == kFirstLinkTid) events.push_back(metadata("process_name", kLinksPid, 0, "links"));
      events.push_back(metadata("thread_name", kLinksPid, tid, l.link));
    }
  }

  for (const auto& row : timeline.rows) {
    const std::string label = row_label(row);
    const double start_s = finite(row.start_s, label + " start_s");
    const double end_s = finite(row.end_s, label + " end_s");
    json args = {{"op_id", row.op_id},
                 {"step", row.step},
                 {"block", row.block},
                 {"bytes", finite(row.bytes, label + " bytes")},
                 {"flop", finite(row.flop, label + " flop")},
                 {"deps", row.deps},
                 {"start_s", start_s},
                 {"end_s", end_s}};
    events.push_back(json{{"ph", "X"},
                          {"name", row.name},
                          {"cat", to_string(row.kind)},
                          {"pid", row.rank},
                          {"tid", static_cast<int>(row.lane)},
                          {"ts", start_s * kMicrosecondsPerSecond},
                          {"dur", (end_s - start_s) * kMicrosecondsPerSecond},
                          {"args", std::move(args)}});
  }
  for (std::size_t i = 0; i < timeline.memory.size(); ++i) {
    const auto& m = timeline.memory[i];
    const std::string label = "memory sample " + std::to_string(i);
    const double time_s = finite(m.time_s, label + " time_s");
    events.push_back(json{{"ph", "C"},
                          {"name", "memory"},
                          {"pid", m.rank},
                          {"tid", 0},
                          {"ts", time_s * kMicrosecondsPerSecond},
                          {"time_s", time_s},
                          {"args", {{"bytes", finite(m.bytes, label + " bytes")}}}});
  }
  for (std::size_t i = 0; i < timeline.links.size(); ++i) {
    const auto& l = timeline.links[i];
    const std::string label = "link sample " + std::to_string(i) + " (" + l.link + ")";
    const double start_s = finite(l.start_s, label + " start_s");
    const double end_s = finite(l.end_s, label + " end_s");
    const double rate = finite(l.bytes_per_s, label + " bytes_per_s");
    events.push_back(json{{"ph", "X"},
                          {"name", rate_label(rate)},
                          {"cat", "link"},
                          {"pid", kLinksPid},
                          {"tid", link_tid.at(l.link)},
                          {"ts", start_s * kMicrosecondsPerSecond},
                          {"dur", (end_s - start_s) * kMicrosecondsPerSecond},
                          {"args", {{"bytes_per_s", rate}, {"start_s", start_s}, {"end_s", end_s}}}});
  }

  json context = json::object();
  for (const auto& [key, value] : timeline.context) context[key] = value;
  const json chunkflow_block = {
      {"steps", timeline.steps}, {"ranks", timeline.ranks}, {"source", timeline.source}};

  out << "{\"context\":" << context.dump() << ",\n\"chunkflow\":" << chunkflow_block.dump()
      << ",\n\"displayTimeUnit\":\"ms\",\n\"traceEvents\":[";
  for (std::size_t i = 0; i < events.size(); ++i) {
    out << (i == 0 ? "\n" : ",\n") << events[i].dump();
  }
  out << "\n]}\n";
  if (!out) throw std::runtime_error("write_chrome_trace: the output stream failed");
}

Timeline read_chrome_trace(std::istream& in, const std::string& file_name) {
  const Reader rd(file_name);
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {  // parse_error, and out_of_range 406 for numbers beyond a double
    rd.fail("", std::string("not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) rd.fail_value("", "a JSON object", doc);

  Timeline t;
  const json& cf = rd.object(doc, "", "chunkflow");
  t.steps = rd.integer(cf, "/chunkflow", "steps");
  t.ranks = rd.integer(cf, "/chunkflow", "ranks");
  t.source = rd.string(cf, "/chunkflow", "source");
  if (doc.contains("context")) {
    const json& ctx = rd.object(doc, "", "context");
    for (const auto& [key, value] : ctx.items()) t.context[key] = rd.string(ctx, "/context", key);
  }

  const json& events = rd.field(doc, "", "traceEvents", "an array");
  if (!events.is_array()) rd.fail_value("/traceEvents", "an array", events);

  // Pass 1: link track names from thread_name metadata.
  std::map<std::pair<int, int>, std::string> thread_names;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::string p = "/traceEvents/" + std::to_string(i);
    const json& e = events[i];
    if (!e.is_object()) rd.fail_value(p, "an event object", e);
    const std::string ph = rd.string(e, p, "ph");
    if (ph != "M" || rd.string(e, p, "name") != "thread_name") continue;
    const json& args = rd.object(e, p, "args");
    thread_names[{rd.integer(e, p, "pid"), rd.integer(e, p, "tid")}] =
        rd.string(args, p + "/args", "name");
  }

  // Pass 2: rows, memory samples, link samples in file order.
  for (std::size_t i = 0; i < events.size(); ++i) {
    const std::string p = "/traceEvents/" + std::to_string(i);
    const json& e = events[i];
    const std::string ph = rd.string(e, p, "ph");
    if (ph == "X") {
      const int pid = rd.integer(e, p, "pid");
      const int tid = rd.integer(e, p, "tid");
      const double ts = rd.number(e, p, "ts");
      const double dur = rd.number(e, p, "dur");
      const json& args = rd.object(e, p, "args");
      const std::string ap = p + "/args";
      if (tid >= 0 && tid < 3) {
        TimelineRow row;
        row.name = rd.string(e, p, "name");
        const std::string cat = rd.string(e, p, "cat");
        try {
          row.kind = op_kind_from_string(cat);
        } catch (const std::invalid_argument&) {
          rd.fail_value(p + "/cat", "an op kind (compute, h2d or collective)", e["cat"]);
        }
        row.lane = static_cast<Lane>(tid);
        row.rank = pid;
        row.op_id = rd.integer(args, ap, "op_id");
        row.step = rd.integer(args, ap, "step");
        row.block = rd.integer(args, ap, "block");
        row.bytes = rd.number(args, ap, "bytes");
        row.flop = rd.number(args, ap, "flop");
        const json& deps = rd.field(args, ap, "deps", "an array of op ids");
        if (!deps.is_array()) rd.fail_value(ap + "/deps", "an array of op ids", deps);
        for (std::size_t k = 0; k < deps.size(); ++k) {
          row.deps.push_back(rd.integer_value(deps[k], ap + "/deps/" + std::to_string(k)));
        }
        row.start_s = rd.seconds(args, ap, "start_s", ts);
        row.end_s = rd.seconds(args, ap, "end_s", ts + dur);
        t.rows.push_back(std::move(row));
      } else if (tid >= kFirstLinkTid) {
        auto it = thread_names.find({pid, tid});
        if (it == thread_names.end()) {
          rd.fail(p + "/tid", "no thread_name metadata names this link track (pid " +
                                  std::to_string(pid) + ", tid " + std::to_string(tid) + ")");
        }
        LinkSample l;
        l.link = it->second;
        l.bytes_per_s = rd.number(args, ap, "bytes_per_s");
        l.start_s = rd.seconds(args, ap, "start_s", ts);
        l.end_s = rd.seconds(args, ap, "end_s", ts + dur);
        t.links.push_back(std::move(l));
      } else {
        rd.fail_value(p + "/tid", "a lane tid 0, 1, 2 or a link tid ≥ " + std::to_string(kFirstLinkTid),
                      e["tid"]);
      }
    } else if (ph == "C") {
      if (rd.string(e, p, "name") != "memory") continue;
      const double ts = rd.number(e, p, "ts");
      const json& args = rd.object(e, p, "args");
      MemorySample m;
      m.rank = rd.integer(e, p, "pid");
      m.bytes = rd.number(args, p + "/args", "bytes");
      m.time_s = e.contains("time_s") ? rd.number(e, p, "time_s") : ts / kMicrosecondsPerSecond;
      t.memory.push_back(m);
    }
  }
  return t;
}

}  // namespace chunkflow
