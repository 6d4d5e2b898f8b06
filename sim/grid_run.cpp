// Running a grid on threads and ranks, streaming ordered output; see grid_run.hpp.
#include "sim/grid_run.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "model/error.hpp"
#include "model/json_file.hpp"
#include "sim/interrupt.hpp"
#include "sim/report.hpp"

namespace chunkflow {

namespace fs = std::filesystem;
using nlohmann::json;

void GridComm::abort(int code) { std::exit(code); }

namespace {

/// One block's output: rows of configurations [first_index, first_index + configs).
struct BlockResult {
  int64_t block = 0, first_index = 0, last_index = 0, rows = 0, left_out = 0;
  std::string first_left_out, csv, jsonl;
};

void put_i64(std::string& out, int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_str(std::string& out, const std::string& s) {
  put_i64(out, int64_t(s.size()));
  out += s;
}
std::string serialize(const BlockResult& b) {
  std::string out;
  for (int64_t v : {b.block, b.first_index, b.last_index, b.rows, b.left_out}) put_i64(out, v);
  for (const std::string* s : {&b.first_left_out, &b.csv, &b.jsonl}) put_str(out, *s);
  return out;
}
BlockResult deserialize(const std::string& in) {
  std::size_t at = 0;
  auto i64 = [&] {
    int64_t v = 0;
    if (at + sizeof v > in.size()) throw std::runtime_error("grid: truncated block message");
    std::memcpy(&v, in.data() + at, sizeof v);
    at += sizeof v;
    return v;
  };
  auto str = [&] {
    const int64_t n = i64();
    if (n < 0 || at + std::size_t(n) > in.size()) throw std::runtime_error("grid: truncated block message");
    std::string s = in.substr(at, std::size_t(n));
    at += std::size_t(n);
    return s;
  };
  BlockResult b;
  b.block = i64();
  b.first_index = i64();
  b.last_index = i64();
  b.rows = i64();
  b.left_out = i64();
  b.first_left_out = str();
  b.csv = str();
  b.jsonl = str();
  return b;
}

struct Block {
  int64_t id = 0;
  int owner = 0;
  std::vector<GridConfig> configs;
};

/// Cuts the configurations from `start` on into blocks of at most `block_size` consecutive ones of
/// one workload (a block ends where the grid's next workload begins) and gives each to the rank
/// with the least estimated cost so far (ties: the lowest rank). Every rank makes the same cuts.
/// One thread then runs a workload's configurations together: the chunkflow planner keeps its
/// planners and estimates per thread (runtime/policy_chunkflow.cpp cached_planner), so blocks of one
/// workload spread over threads would each compute them again.
class BlockAssigner {
 public:
  BlockAssigner(const Grid& grid, int64_t start, int ranks, int64_t block_size)
      : cursor_(grid), start_(start), block_size_(block_size), load_(std::size_t(ranks), 0.0) {}
  std::optional<Block> next() {
    Block b;
    b.id = next_id_;
    while (int64_t(b.configs.size()) < block_size_) {
      std::optional<GridConfig> c = std::move(held_);
      held_.reset();
      if (!c) c = cursor_.next();
      if (!c) break;
      if (c->index < start_) continue;
      if (!b.configs.empty() && c->workload != b.configs.front().workload) {
        held_ = c;  // the next block's first
        break;
      }
      b.configs.push_back(*c);
    }
    if (b.configs.empty()) return std::nullopt;
    ++next_id_;
    double cost = 0;
    for (const auto& c : b.configs) cost += c.cost;
    b.owner = int(std::min_element(load_.begin(), load_.end()) - load_.begin());
    load_[b.owner] += cost;
    return b;
  }

 private:
  GridCursor cursor_;
  std::optional<GridConfig> held_;  ///< read past the end of the last block
  int64_t start_, block_size_, next_id_ = 0;
  std::vector<double> load_;
};

/// Rate and ETA on stderr: a redrawn bar on a terminal, a plain line every 10 s otherwise.
class Progress {
 public:
  Progress(bool enabled, int64_t total, int64_t done) : enabled_(enabled), tty_(::isatty(2)), total_(total), start_done_(done) {}
  void update(int64_t done, bool final = false) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double since_print = std::chrono::duration<double>(now - last_).count();
    if (!final && since_print < (tty_ ? 0.25 : 10.0)) return;
    last_ = now;
    const double el = std::chrono::duration<double>(now - t0_).count();
    const double rate = el > 0 ? double(done - start_done_) / el : 0;
    const double eta = rate > 0 ? double(total_ - done) / rate : 0;
    const double pct = total_ > 0 ? 100.0 * double(done) / double(total_) : 100.0;
    char line[256];
    if (tty_) {
      const int width = 30, filled = int(width * pct / 100);
      std::snprintf(line, sizeof line, "\r[%s%s] %5.1f%% %lld/%lld configurations, %.0f/s, ETA %.0f s ",
                    std::string(std::size_t(filled), '#').c_str(), std::string(std::size_t(width - filled), '.').c_str(), pct,
                    static_cast<long long>(done), static_cast<long long>(total_), rate, eta);
      std::cerr << line << (final ? "\n" : "") << std::flush;
    } else {
      std::snprintf(line, sizeof line, "grid: %lld/%lld configurations (%.1f %%), %.0f/s, ETA %.0f s\n",
                    static_cast<long long>(done), static_cast<long long>(total_), pct, rate, eta);
      std::cerr << line << std::flush;
    }
  }

 private:
  bool enabled_, tty_;
  int64_t total_, start_done_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now(), last_ = t0_;
};

/// The blocks of this rank on `threads` workers; the calling thread writes (rank 0, in order) or
/// sends (other ranks). `write` gets each block's result on rank 0 in configuration order.
/// Returns false when a signal stopped it.
bool run_blocks(const Grid& grid, int64_t start, int64_t block_size, int threads, GridComm& comm,
                const std::function<void(const BlockResult&)>& write) {
  const int rank = comm.rank(), ranks = comm.size();
  std::mutex m;
  std::condition_variable cv;
  BlockAssigner work(grid, start, ranks, block_size);
  std::map<int64_t, BlockResult> ready;
  std::exception_ptr error;
  bool stop = false;
  // Completed blocks waiting for the writer: about 4096 configurations' rows per worker, at least
  // two blocks per worker (a block holds up to 4096).
  const std::size_t max_ready = std::size_t(threads) * std::size_t(std::max<int64_t>(2, 4096 / std::max<int64_t>(block_size, 1)));

  auto worker = [&] {
    for (;;) {
      std::optional<Block> b;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return stop || error || ready.size() < max_ready; });
        if (stop || error) return;
        while ((b = work.next()) && b->owner != rank) {
        }
        if (!b) return;
      }
      BlockResult r;
      r.block = b->id;
      r.first_index = b->configs.front().index;
      r.last_index = b->configs.back().index;
      try {
        for (const GridConfig& c : b->configs) {
          if (interrupt_signal()) return;
          const GridRow row = run_grid_config(grid, c);
          if (row.row) {
            r.csv += grid_csv_line(grid, row);
            r.jsonl += grid_json_line(grid, row);
            ++r.rows;
          } else if (r.left_out++ == 0) {
            r.first_left_out = row.left_out_reason;
          }
        }
      } catch (...) {
        std::lock_guard lock(m);
        if (!error) error = std::current_exception();
        cv.notify_all();
        return;
      }
      {
        std::lock_guard lock(m);
        ready.emplace(r.block, std::move(r));
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  auto finish = [&] {
    {
      std::lock_guard lock(m);
      stop = true;
    }
    cv.notify_all();
    for (auto& t : pool) t.join();
  };

  bool completed = true;
  try {
    BlockAssigner order(grid, start, ranks, block_size);
    while (auto b = order.next()) {
      if (b->owner == rank) {
        BlockResult r;
        {
          std::unique_lock lock(m);
          while (!error && !interrupt_signal() && !ready.count(b->id)) cv.wait_for(lock, std::chrono::milliseconds(100));
          if (error) break;
          if (!ready.count(b->id)) {
            completed = false;
            break;
          }
          r = std::move(ready.at(b->id));
          ready.erase(b->id);
        }
        cv.notify_all();
        if (rank == 0) write(r);
        else comm.send_to_root(serialize(r));
      } else if (rank == 0) {
        std::string message;
        if (!comm.receive_from(b->owner, message, [] { return interrupt_signal() != 0; })) {
          completed = false;
          break;
        }
        write(deserialize(message));
      }
    }
  } catch (...) {
    finish();
    throw;
  }
  finish();
  if (error) std::rethrow_exception(error);
  return completed && !interrupt_signal();
}

int64_t block_size_for(int64_t configs, int ranks, int threads) {
  // At least 16 blocks per worker (balance at the end of a run); at most 4096 configurations per block
  // (the rows a block holds in memory).
  return std::clamp<int64_t>(configs / (int64_t(ranks) * threads * 16), 1, 4096);
}

int worker_threads(int requested) { return requested > 0 ? requested : std::max(1, omp_get_max_threads()); }

/// The configuration index of a CSV row line ("index,...") or a JSON line ({"config_index": i, ...}).
std::optional<int64_t> csv_index(const std::string& line) {
  if (line.empty() || line[0] == '#' || line[0] < '0' || line[0] > '9') return std::nullopt;
  return std::strtoll(line.c_str(), nullptr, 10);
}
std::optional<int64_t> jsonl_index(const std::string& line) {
  try {
    const json j = json::parse(line);
    if (j.contains("config_index")) return j.at("config_index").get<int64_t>();
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

/// Byte offsets just after each complete row line, by index; the end of the header lines as index
/// -1 once all `header_lines` of them are complete.
std::map<int64_t, std::size_t> row_ends(const std::string& path, bool jsonl, std::string* first_line, int header_lines) {
  std::ifstream in(path, std::ios::binary);
  std::map<int64_t, std::size_t> ends;
  std::string line;
  std::size_t at = 0;
  int headers = 0;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline: an incomplete last line
    at += line.size() + 1;
    if (headers == 0 && first_line) *first_line = line;
    if (headers < header_lines) {
      if (++headers == header_lines) ends[-1] = at;
      continue;
    }
    if (const auto i = jsonl ? jsonl_index(line) : csv_index(line)) ends[*i] = at;
    else break;  // not a row: keep what came before
  }
  return ends;
}

/// Keeps the rows of the partial files up to the last index both hold; returns the next index, or
/// -1 when a file's header lines are incomplete (no row can be kept: start again).
int64_t prepare_resume(const Grid& grid, const GridCounts& counts, const std::string& csv, const std::string& jsonl) {
  std::string header;
  const auto j_ends = row_ends(jsonl, true, &header, 1);
  const auto c_ends = row_ends(csv, false, nullptr, 2);
  if (!j_ends.count(-1) || !c_ends.count(-1)) return -1;
  json h;
  try {
    h = json::parse(header);
  } catch (const std::exception&) {
    throw InputError(jsonl, "/grid", "cannot --resume: the partial file has no context line");
  }
  const json grid_context = h.is_object() && h.contains("grid") ? h["grid"] : json();
  const bool same_count = grid_context.is_object() && grid_context.contains("configurations") &&
                          grid_context["configurations"].is_number_integer() &&
                          grid_context["configurations"].get<int64_t>() == counts.configurations;
  if (string_member_or(grid_context, "digest") != grid.text_digest || !same_count)
    throw InputError(jsonl, "/grid/digest",
                     "cannot --resume: the partial output is of another grid (expected digest " + grid.text_digest + ")");
  int64_t last = -1;
  for (const auto& [i, end] : j_ends)
    if (i >= 0 && c_ends.count(i)) last = std::max(last, i);
  fs::resize_file(jsonl, last >= 0 ? j_ends.at(last) : j_ends.at(-1));
  fs::resize_file(csv, last >= 0 ? c_ends.at(last) : c_ends.at(-1));
  return last + 1;
}

}  // namespace

GridRunResult run_grid(const Grid& grid, const GridRunOptions& o, GridComm& comm) {
  const auto t0 = std::chrono::steady_clock::now();
  GridRunResult result;
  result.counts = count_grid(grid);
  result.threads = worker_threads(o.threads);
  result.ranks = comm.size();
  const bool root = comm.rank() == 0;
  const fs::path dir(o.out_dir);
  const std::string csv = (dir / "grid.csv").string(), jsonl = (dir / "grid.jsonl").string();
  const std::string csv_partial = csv + ".partial", jsonl_partial = jsonl + ".partial";

  // Rank 0 prepares the files (fresh, or resumed) and tells the others where to start.
  int64_t start = 0;
  std::FILE* csv_out = nullptr;
  std::FILE* jsonl_out = nullptr;
  if (root) {
    try {
      std::error_code ec;
      if (o.resume && !fs::exists(csv_partial, ec) && fs::exists(csv, ec) && fs::exists(jsonl, ec)) {
        result.already_complete = true;
        start = -2;
      } else if (o.resume && fs::exists(csv_partial, ec) && fs::exists(jsonl_partial, ec) &&
                 (start = prepare_resume(grid, result.counts, csv_partial, jsonl_partial)) >= 0) {
        csv_out = std::fopen(csv_partial.c_str(), "ab");
        jsonl_out = std::fopen(jsonl_partial.c_str(), "ab");
      } else {
        start = 0;
        fs::create_directories(dir, ec);
        csv_out = std::fopen(csv_partial.c_str(), "wb");
        jsonl_out = std::fopen(jsonl_partial.c_str(), "wb");
        if (csv_out && jsonl_out) {
          const std::string context = "{\"context\":" + context_block(o.command_line).dump() +
                                      ",\"grid\":" + grid_summary_json(grid, result.counts) + "}\n";
          std::fputs(("# " + context).c_str(), csv_out);
          std::fputs(grid_csv_header().c_str(), csv_out);
          std::fputs(context.c_str(), jsonl_out);
        }
      }
      if (start >= 0 && (!csv_out || !jsonl_out))
        throw std::runtime_error(csv_partial + ": cannot write (the folder " + dir.string() + ")");
    } catch (...) {
      comm.broadcast(-1);
      if (csv_out) std::fclose(csv_out);
      if (jsonl_out) std::fclose(jsonl_out);
      throw;
    }
  }
  start = comm.broadcast(start);
  if (start == -1) comm.abort(2);  // rank 0 reported the error
  if (start == -2) {
    result.already_complete = true;
    if (root) result.csv_path = csv, result.jsonl_path = jsonl;
    return result;
  }
  result.resumed_from = start;
  result.rows = 0;
  if (root && start > 0) {  // rows kept from the interrupted run
    std::ifstream in(csv_partial);
    std::string line;
    while (std::getline(in, line))
      if (csv_index(line)) ++result.rows;
  }

  // Every rank must cut the same blocks: rank 0's size (ranks may run different thread counts).
  const int64_t block_size = comm.broadcast(block_size_for(result.counts.configurations, comm.size(), result.threads));
  Progress progress(root && o.progress, result.counts.configurations, start);
  int64_t done = start;
  bool write_failed = false;
  auto write = [&](const BlockResult& b) {
    if (std::fwrite(b.csv.data(), 1, b.csv.size(), csv_out) != b.csv.size() ||
        std::fwrite(b.jsonl.data(), 1, b.jsonl.size(), jsonl_out) != b.jsonl.size() || std::fflush(csv_out) != 0 ||
        std::fflush(jsonl_out) != 0)
      write_failed = true;
    result.rows += b.rows;
    if (b.left_out > 0 && result.left_out == 0) result.first_left_out = b.first_left_out;
    result.left_out += b.left_out;
    done = b.last_index + 1;
    progress.update(done);
  };
  bool completed = false;
  try {
    completed = run_blocks(grid, start, block_size, result.threads, comm, write);
  } catch (const std::exception& e) {
    if (comm.size() > 1) {
      std::cerr << "chunkflow: error (rank " << comm.rank() << "): " << e.what() << "\n";
      comm.abort(1);
    }
    if (csv_out) std::fclose(csv_out), std::fclose(jsonl_out);
    throw;
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!root) {
    if (!completed) comm.abort(128 + interrupt_signal());
    return result;
  }
  progress.update(done, true);
  std::fclose(csv_out);
  std::fclose(jsonl_out);
  if (write_failed) throw std::runtime_error(csv_partial + ": write failed (disk full?)");
  if (!completed) {
    std::cerr << "chunkflow: interrupted: configurations 0.." << done - 1 << " of " << result.counts.configurations
              << " are in " << csv_partial << " and " << jsonl_partial << "; continue with --resume\n";
    const int sig = interrupt_signal() ? interrupt_signal() : 2;
    if (comm.size() > 1) comm.abort(128 + sig);
    throw Interrupted(sig, int(std::min<int64_t>(done, INT32_MAX)), int(std::min<int64_t>(result.counts.configurations, INT32_MAX)));
  }
  fs::rename(csv_partial, csv);
  fs::rename(jsonl_partial, jsonl);
  result.csv_path = csv;
  result.jsonl_path = jsonl;
  return result;
}

GridCounts for_each_grid_row(const Grid& grid, int threads, const std::function<void(const std::string&)>& on_row) {
  const GridCounts counts = count_grid(grid);
  GridComm single;
  const int t = worker_threads(threads);
  run_blocks(grid, 0, block_size_for(counts.configurations, 1, t), t, single, [&](const BlockResult& b) {
    std::size_t at = 0;
    while (at < b.jsonl.size()) {
      const std::size_t nl = b.jsonl.find('\n', at);
      on_row(b.jsonl.substr(at, nl - at));
      at = nl + 1;
    }
  });
  return counts;
}

}  // namespace chunkflow
