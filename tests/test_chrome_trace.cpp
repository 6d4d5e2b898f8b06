// Tests of traces/chrome_trace: exact round trip, non-overlapping tracks, byte-identical output,
// and errors that name the file and the JSON pointer.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "traces/chrome_trace.hpp"

using namespace chunkflow;
using nlohmann::json;

namespace {

/// Slack when checking that µs slices on a track do not overlap: ts and dur are each rounded once
/// from seconds, so consecutive slices may disagree by a few ulps of the timestamp.
constexpr double kOverlapSlack_us = 1e-6;

/// A well-formed two-rank, two-step timeline with awkward decimals (0.1 s, 1e-7 s) so that the
/// exact round trip of seconds is exercised, plus memory and link samples and a context block.
Timeline sample_timeline() {
  Timeline t;
  t.source = "simulator";
  t.steps = 2;
  t.ranks = 2;
  t.context = {{"device", "2xH100 \"PCIe\""}, {"git_revision", "abc123"}, {"path", "a\\b/c"}};
  int id = 0;
  for (int step = 0; step < 2; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      const double base_s = step * 0.7 + rank * 1e-7;
      TimelineRow h;
      h.op_id = id++;
      h.name = "s" + std::to_string(step) + ".b00.h2d.c0";
      h.kind = OpKind::h2d;
      h.lane = Lane::h2d;
      h.rank = rank;
      h.step = step;
      h.block = 0;
      h.start_s = base_s;
      h.end_s = base_s + 0.1;
      h.bytes = 64.0 * 1024 * 1024;
      TimelineRow c;
      c.op_id = id++;
      c.name = "s" + std::to_string(step) + ".b00.attn";
      c.kind = OpKind::compute;
      c.lane = Lane::compute;
      c.rank = rank;
      c.step = step;
      c.block = 0;
      c.start_s = h.end_s;
      c.end_s = c.start_s + 0.3;
      c.flop = 1.234567890123e12;
      c.deps = {h.op_id};
      TimelineRow a;
      a.op_id = id++;
      a.name = "s" + std::to_string(step) + ".b00.a2a";
      a.kind = OpKind::collective;
      a.lane = Lane::comm;
      a.rank = rank;
      a.step = step;
      a.block = -1;
      a.start_s = c.end_s;
      a.end_s = a.start_s + 1.0 / 3.0 * 0.1;
      a.bytes = 3e8 / 7;
      a.deps = {c.op_id};
      TimelineRow c2 = c;
      c2.op_id = id++;
      c2.name += ".post";
      c2.start_s = a.end_s;
      c2.end_s = c2.start_s + 0.2;
      c2.deps = {a.op_id, h.op_id};
      t.rows.insert(t.rows.end(), {h, c, a, c2});
      t.memory.push_back({rank, base_s, 1e9 + rank});
      t.memory.push_back({rank, h.end_s, 1.0671e9 / 3});
    }
  }
  t.links = {{"pcie.gpu0.h2d", 0, 0.1, 25e9 / 3},
             {"pcie.gpu1.h2d", 1e-7, 0.1000001, 2.5e10},
             {"pcie.gpu0.h2d", 0.1, 0.2, 0},
             {"pcie.switch0.up", 0.7, 0.8, 1.23456789e10}};
  return t;
}

std::string written(const Timeline& t) {
  std::ostringstream out;
  write_chrome_trace(t, out);
  return out.str();
}

Timeline read_back(const std::string& text, const std::string& file = "x.json") {
  std::istringstream in(text);
  return read_chrome_trace(in, file);
}

/// Rewrites a written trace with `edit` applied to its parsed JSON (the writer's layout is not
/// needed by the reader).
std::string edited(const Timeline& t, const std::function<void(json&)>& edit) {
  json j = json::parse(written(t));
  edit(j);
  return j.dump();
}

std::string error_of(const std::string& text) {
  try {
    read_back(text);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

/// Index in traceEvents of the first event with ph == "X" on a lane tid.
std::size_t first_row_event(const json& j) {
  const auto& ev = j["traceEvents"];
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev[i]["ph"] == "X" && ev[i]["tid"].get<int>() < 3) return i;
  }
  throw std::logic_error("no row event");
}

}  // namespace

TEST_CASE("round trip: read(write(t)) == t exactly", "[chrome_trace]") {
  const Timeline t = sample_timeline();
  const Timeline back = read_back(written(t));
  CHECK(back.rows == t.rows);
  CHECK(back.memory == t.memory);
  CHECK(back.links == t.links);
  CHECK(back.context == t.context);
  CHECK(back.steps == t.steps);
  CHECK(back.ranks == t.ranks);
  CHECK(back.source == t.source);
  CHECK(back == t);
}

TEST_CASE("round trip of random doubles is exact (shortest round-trip number form)",
          "[chrome_trace]") {
  std::mt19937_64 rng(20240607);
  std::uniform_real_distribution<double> u(0, 1);
  Timeline t;
  t.source = "hardware";
  t.steps = 1;
  t.ranks = 3;
  double clock_s[3][3] = {};
  for (int i = 0; i < 300; ++i) {
    TimelineRow r;
    r.op_id = i;
    r.name = "op" + std::to_string(i);
    r.rank = i % 3;
    r.lane = static_cast<Lane>((i / 3) % 3);
    r.kind = r.lane == Lane::comm ? OpKind::collective
                                  : (r.lane == Lane::h2d ? OpKind::h2d : OpKind::compute);
    double& clk = clock_s[r.rank][static_cast<int>(r.lane)];
    r.start_s = clk + u(rng) * 1e-3;
    r.end_s = r.start_s + std::pow(10.0, -7 + 6 * u(rng));
    clk = r.end_s;
    r.bytes = std::floor(u(rng) * 1e9);
    r.flop = u(rng) * 1e13;
    if (i > 0) r.deps = {i - 1};
    t.rows.push_back(r);
    t.memory.push_back({r.rank, r.end_s, u(rng) * 8e10});
  }
  CHECK(read_back(written(t)) == t);
}

TEST_CASE("events on one (pid, tid) do not overlap for a well-formed timeline", "[chrome_trace]") {
  const json j = json::parse(written(sample_timeline()));
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    tracks[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(e["ts"].get<double>(),
                                                                     e["dur"].get<double>());
  }
  CHECK(tracks.size() == 2 * 3 + 3);  // 2 ranks × 3 lanes + 3 links
  for (auto& [track, slices] : tracks) {
    std::sort(slices.begin(), slices.end());
    for (std::size_t i = 1; i < slices.size(); ++i) {
      INFO("pid " << track.first << " tid " << track.second << " slice " << i);
      CHECK(slices[i].first >= slices[i - 1].first + slices[i - 1].second - kOverlapSlack_us);
    }
  }
}

TEST_CASE("layout: Chrome trace fields, metadata names, units in microseconds", "[chrome_trace]") {
  const Timeline t = sample_timeline();
  const json j = json::parse(written(t));
  CHECK(j["displayTimeUnit"] == "ms");
  CHECK(j["chunkflow"] == json{{"steps", 2}, {"ranks", 2}, {"source", "simulator"}});
  CHECK(j["context"]["git_revision"] == "abc123");
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<int, std::string> process_names;
  int counters = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      thread_names[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
    }
    if (e["ph"] == "M" && e["name"] == "process_name") process_names[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "C") {
      ++counters;
      CHECK(e["name"] == "memory");
      CHECK(e["args"].contains("bytes"));
      CHECK(e["args"].size() == 1);  // one counter series
    }
  }
  CHECK(process_names[0] == "rank 0");
  CHECK(process_names[1] == "rank 1");
  CHECK(process_names[kLinksPid] == "links");
  CHECK(thread_names[{1, 0}] == "compute");
  CHECK(thread_names[{1, 1}] == "h2d");
  CHECK(thread_names[{1, 2}] == "comm");
  CHECK(thread_names[{kLinksPid, kFirstLinkTid}] == "pcie.gpu0.h2d");
  CHECK(thread_names[{kLinksPid, kFirstLinkTid + 1}] == "pcie.gpu1.h2d");
  CHECK(thread_names[{kLinksPid, kFirstLinkTid + 2}] == "pcie.switch0.up");
  CHECK(counters == static_cast<int>(t.memory.size()));

  const json& e = j["traceEvents"][first_row_event(j)];
  const TimelineRow& r = t.rows[0];
  CHECK(e["name"] == r.name);
  CHECK(e["cat"] == "h2d");
  CHECK(e["pid"] == r.rank);
  CHECK(e["tid"] == 1);
  CHECK(e["ts"].get<double>() == Approx(r.start_s * 1e6));
  CHECK(e["dur"].get<double>() == Approx((r.end_s - r.start_s) * 1e6));
  for (const char* key : {"op_id", "step", "block", "bytes", "flop", "deps"}) {
    CHECK(e["args"].contains(key));
  }
}

TEST_CASE("determinism: writing twice, or writing what was read, gives byte-identical output",
          "[chrome_trace]") {
  const Timeline t = sample_timeline();
  const std::string a = written(t);
  CHECK(written(t) == a);
  CHECK(written(read_back(a)) == a);
}

TEST_CASE("reader: events without exact seconds fall back to ts/dur in microseconds",
          "[chrome_trace]") {
  const Timeline t = sample_timeline();
  const std::string text = edited(t, [](json& j) {
    for (auto& e : j["traceEvents"]) {
      if (e["ph"] == "X") {
        e["args"].erase("start_s");
        e["args"].erase("end_s");
        e["ts"] = 1500.0;
        e["dur"] = 250.0;
      }
    }
  });
  const Timeline back = read_back(text);
  REQUIRE(back.rows.size() == t.rows.size());
  CHECK(back.rows[0].start_s == Approx(1.5e-3));
  CHECK(back.rows[0].end_s == Approx(1.75e-3));
  CHECK(back.links[0].end_s == Approx(1.75e-3));
}

TEST_CASE("malformed input: errors name the file and the JSON pointer of the bad field",
          "[chrome_trace]") {
  const Timeline t = sample_timeline();
  const std::size_t k = first_row_event(json::parse(written(t)));
  const std::string ev = "/traceEvents/" + std::to_string(k);

  SECTION("dur is a string") {
    const auto msg = error_of(edited(t, [&](json& j) { j["traceEvents"][k]["dur"] = "1"; }));
    CHECK(msg == "x.json: " + ev + "/dur: expected a number, got \"1\"");
  }
  SECTION("missing op_id") {
    const auto msg = error_of(edited(t, [&](json& j) { j["traceEvents"][k]["args"].erase("op_id"); }));
    CHECK(msg == "x.json: " + ev + "/args/op_id: missing, expected an integer");
  }
  SECTION("fractional step") {
    const auto msg = error_of(edited(t, [&](json& j) { j["traceEvents"][k]["args"]["step"] = 1.5; }));
    CHECK(msg == "x.json: " + ev + "/args/step: expected an integer, got 1.5");
  }
  SECTION("a dep that is not an integer") {
    const auto msg = error_of(edited(t, [&](json& j) { j["traceEvents"][k]["args"]["deps"] = {"a"}; }));
    CHECK(msg == "x.json: " + ev + "/args/deps/0: expected an integer, got \"a\"");
  }
  SECTION("unknown op kind") {
    const auto msg = error_of(edited(t, [&](json& j) { j["traceEvents"][k]["cat"] = "d2h"; }));
    CHECK(msg == "x.json: " + ev + "/cat: expected an op kind (compute, h2d or collective), got \"d2h\"");
  }
  SECTION("tid outside lanes and links") {
    const auto msg = error_of(edited(t, [&](json& j) { j["traceEvents"][k]["tid"] = 5; }));
    CHECK(msg.rfind("x.json: " + ev + "/tid: expected a lane tid", 0) == 0);
  }
  SECTION("missing chunkflow block") {
    CHECK(error_of(edited(t, [](json& j) { j.erase("chunkflow"); })) ==
          "x.json: /chunkflow: missing, expected an object");
  }
  SECTION("traceEvents not an array") {
    CHECK(error_of(edited(t, [](json& j) { j["traceEvents"] = 3; })) ==
          "x.json: /traceEvents: expected an array, got 3");
  }
  SECTION("memory counter without bytes") {
    const auto msg = error_of(edited(t, [](json& j) {
      for (auto& e : j["traceEvents"]) {
        if (e["ph"] == "C") {
          e["args"] = json::object();
          break;
        }
      }
    }));
    CHECK(msg.find("x.json: /traceEvents/") == 0);
    CHECK(msg.find("/args/bytes: missing, expected a number") != std::string::npos);
  }
  SECTION("not JSON at all") {
    const auto msg = error_of("{\"traceEvents\": [");
    CHECK(msg.rfind("x.json: (document): not valid JSON", 0) == 0);
  }
}

TEST_CASE("writer rejects non-finite numbers, naming the row", "[chrome_trace]") {
  Timeline t = sample_timeline();
  t.rows[2].end_s = std::numeric_limits<double>::infinity();
  std::ostringstream out;
  try {
    write_chrome_trace(t, out);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("op_id 2") != std::string::npos);
  }
}
