// Microbenchmarks (see bench.hpp and hw/BENCH_SCHEMA.md).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>

#include "hw/bench.hpp"
#include "hw/cuda_util.cuh"
#include "hw/host_data.hpp"
#include "hw/kernels.cuh"

namespace chunkflow::hw {

namespace {

struct Timing {
  double median = 0, min = 0, max = 0;
};

Timing summarize_s(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

/// Context shared by the measurements: device 0, two streams, the largest buffers.
struct Env {
  const BenchConfig& cfg;
  int device_count = 0;
  Stream a, b, c;
  Stream paced{Stream::HighestPriority{}};  ///< copy_cap: the paced copies (as the executor's h2d stream)
  PinnedBuffer host_a, host_b;
  DeviceBuffer dev_a, dev_b;
  PinnedBuffer stage[2];      ///< proxy staging (mapped)
  DeviceBuffer send, recv;    ///< proxy / collective buffers

  explicit Env(const BenchConfig& c) : cfg(c) {}

  std::vector<int64_t> sizes(int64_t from) const {
    std::vector<int64_t> s;
    for (int64_t x = std::max(from, cfg.min_bytes); x <= cfg.max_bytes; x *= 4) s.push_back(x);
    return s;
  }

  /// Times `body` (which enqueues on stream `s`) with events: warmup, then repeat.
  Timing time(cudaStream_t s, const std::function<void()>& body) const {
    Event e0, e1;
    for (int i = 0; i < cfg.warmup; ++i) body();
    CF_CUDA(cudaStreamSynchronize(s));
    std::vector<double> t;
    for (int i = 0; i < std::max(1, cfg.repeat); ++i) {
      e0.record(s);
      body();
      e1.record(s);
      CF_CUDA(cudaEventSynchronize(e1.get()));
      t.push_back(e1.seconds_since(e0));
    }
    return summarize_s(t);
  }

  /// Times `body` (which enqueues on stream `s`) captured once into a CUDA Graph and replayed, as
  /// chunkflow-hw runs its plans (--launch graph): no host launch gap between its kernels. Warmup,
  /// then repeat, each replay between two events.
  Timing time_graph(cudaStream_t s, const std::function<void()>& body) const {
    const std::unique_ptr<GraphHandle> g = capture_graph(s, body);
    return time(s, [&] { CF_CUDA(cudaGraphLaunch(g->exec, s)); });
  }

  /// Times `measured` on stream sa while `piece` repeats on stream sb, both behind one start
  /// event, until after the measured body ends (H10 of the code review: the background never
  /// stops early, so the measured rate is the concurrent one throughout). `pieces` is the first
  /// guess of repetitions; it doubles until the background outlasts the measured body.
  Timing time_with_background(cudaStream_t sa, const std::function<void()>& measured, cudaStream_t sb,
                              const std::function<void()>& piece, int pieces) const {
    Event start, ea, eb;
    pieces = std::max(1, pieces);
    std::vector<double> t;
    for (int i = 0; i < cfg.warmup + std::max(1, cfg.repeat);) {
      start.record(sa);
      CF_CUDA(cudaStreamWaitEvent(sb, start.get(), 0));
      measured();
      ea.record(sa);
      for (int k = 0; k < pieces; ++k) piece();
      eb.record(sb);
      CF_CUDA(cudaDeviceSynchronize());
      const double ta = ea.seconds_since(start), tb = eb.seconds_since(start);
      if (tb < ta) {  // the background ended first: more pieces, and repeat this repetition
        if (pieces >= 1024) throw std::runtime_error("bench: the background cannot outlast the measured body (1024 pieces)");
        pieces *= 2;
        continue;
      }
      if (i >= cfg.warmup) t.push_back(ta);
      ++i;
    }
    return summarize_s(t);
  }
};

/// Repetitions of a background piece of solo duration `piece_s` that cover `measured_s`, with room.
int cover(double measured_s, double piece_s) { return int(std::min(4096.0, std::ceil(1.5 * measured_s / std::max(piece_s, 1e-7)) + 1)); }

void add_timing(BenchPoint& p, const std::string& prefix, const Timing& t) {
  p.numbers.push_back({prefix + "time_s_median", t.median});
  p.numbers.push_back({prefix + "time_s_min", t.min});
  p.numbers.push_back({prefix + "time_s_max", t.max});
}

BenchResult copy_sweep(Env& env, cudaMemcpyKind kind) {
  BenchResult r;
  for (int64_t bytes : env.sizes(env.cfg.min_bytes)) {
    void* dst = kind == cudaMemcpyHostToDevice ? static_cast<void*>(env.dev_a.get())
                : kind == cudaMemcpyDeviceToHost ? static_cast<void*>(env.host_a.get())
                                                 : static_cast<void*>(env.dev_b.get());
    const void* src = kind == cudaMemcpyHostToDevice ? static_cast<const void*>(env.host_a.get())
                                                     : static_cast<const void*>(env.dev_a.get());
    const auto t = env.time(env.a.get(), [&] {
      CF_CUDA(cudaMemcpyAsync(dst, src, size_t(bytes), kind, env.a.get()));
    });
    BenchPoint p;
    p.numbers.push_back({"bytes", double(bytes)});
    add_timing(p, "", t);
    p.numbers.push_back({"bytes_per_s", double(bytes) / t.median});
    r.points.push_back(std::move(p));
  }
  return r;
}

/// The pcie-proxy all-to-all of a per-rank buffer of `bytes` on stream s (see executor.cu).
void proxy_all_to_all(Env& env, ProxyMode mode, int64_t bytes, cudaStream_t s, cudaStream_t aux, int& parity) {
  const int P = std::max(2, env.cfg.ulysses_degree);
  const int64_t out = bytes / P * (P - 1), local = bytes - out;
  const int w = parity, rd = 1 - parity;
  parity = rd;
  if (mode == ProxyMode::kernel) {
    launch_proxy_all_to_all(env.send.get(), env.recv.get(), env.stage[w].device_pointer(),
                            env.stage[rd].device_pointer(), out, local, s);
    return;
  }
  Event fork(cudaEventDisableTiming), join(cudaEventDisableTiming);
  fork.record(s);
  CF_CUDA(cudaStreamWaitEvent(aux, fork.get(), 0));
  CF_CUDA(cudaMemcpyAsync(env.stage[w].get(), env.send.get(), size_t(out), cudaMemcpyDeviceToHost, s));
  CF_CUDA(cudaMemcpyAsync(env.recv.get(), env.stage[rd].get(), size_t(out), cudaMemcpyHostToDevice, aux));
  if (local > 0) CF_CUDA(cudaMemcpyAsync(env.recv.get() + out, env.send.get() + out, size_t(local), cudaMemcpyDeviceToDevice, s));
  join.record(aux);
  CF_CUDA(cudaStreamWaitEvent(s, join.get(), 0));
}

BenchResult collective_proxy(Env& env, ProxyMode mode) {
  BenchResult r;
  const int P = std::max(2, env.cfg.ulysses_degree);
  int parity = 0;
  for (int64_t bytes : env.sizes(1 << 20)) {
    const auto t = env.time(env.a.get(), [&] { proxy_all_to_all(env, mode, bytes, env.a.get(), env.c.get(), parity); });
    BenchPoint p;
    p.numbers.push_back({"bytes", double(bytes)});
    p.numbers.push_back({"ulysses_degree", double(P)});
    p.numbers.push_back({"out_bytes", double(bytes / P * (P - 1))});
    add_timing(p, "", t);
    p.numbers.push_back({"algbw_bytes_per_s", double(bytes) / t.median});
    p.numbers.push_back({"busbw_bytes_per_s", double(bytes) / t.median * double(P - 1) / double(P)});
    r.points.push_back(std::move(p));
  }
  return r;
}

/// For each size: H2D of `bytes` alone and while `other` (a transfer of `bytes` on the given
/// stream) repeats throughout, and `other` alone and while H2D copies of `bytes` repeat
/// throughout. Each direction is timed only while the other runs (time_with_background).
BenchResult h2d_with(Env& env, const std::string& other_name,
                     const std::function<void(int64_t bytes, cudaStream_t s)>& other) {
  BenchResult r;
  for (int64_t bytes : env.sizes(16 << 20)) {
    auto h2d = [&] { CF_CUDA(cudaMemcpyAsync(env.dev_a.get(), env.host_a.get(), size_t(bytes), cudaMemcpyHostToDevice, env.a.get())); };
    auto h2d_b = [&] { CF_CUDA(cudaMemcpyAsync(env.dev_a.get(), env.host_a.get(), size_t(bytes), cudaMemcpyHostToDevice, env.b.get())); };
    auto other_a = [&] { other(bytes, env.a.get()); };
    auto other_b = [&] { other(bytes, env.b.get()); };
    const Timing h_alone = env.time(env.a.get(), h2d), o_alone = env.time(env.a.get(), other_a);
    const Timing th = env.time_with_background(env.a.get(), h2d, env.b.get(), other_b, cover(h_alone.median, o_alone.median));
    const Timing to = env.time_with_background(env.a.get(), other_a, env.b.get(), h2d_b, cover(o_alone.median, h_alone.median));
    BenchPoint p;
    p.numbers.push_back({"bytes", double(bytes)});
    add_timing(p, "h2d_", th);
    add_timing(p, other_name + "_", to);
    p.numbers.push_back({"h2d_bytes_per_s", double(bytes) / th.median});
    p.numbers.push_back({other_name + "_bytes_per_s", double(bytes) / to.median});
    p.numbers.push_back({"h2d_alone_time_s_median", h_alone.median});
    p.numbers.push_back({other_name + "_alone_time_s_median", o_alone.median});
    r.points.push_back(std::move(p));
  }
  return r;
}

/// copy-cap (issue 8): a paced H2D (enqueue_paced_copy, the executor's rate-capped path) at each
/// cap: the rate it achieves alone, and the slowdown of a proxy all-to-all (both modes) while
/// capped copies run throughout, with the capped copy's rate meanwhile.
BenchResult copy_cap(Env& env) {
  BenchResult r;
  const int64_t bytes = std::min<int64_t>(env.cfg.max_bytes, 256ll << 20);
  const int64_t sub = env.cfg.pace_sub_chunk_bytes;
  DeviceBuffer t0(2 * sizeof(uint64_t));
  uint64_t* t0a = t0.as<uint64_t>();
  uint64_t* t0b = t0a + 1;
  int parity = 0;
  for (ProxyMode mode : {ProxyMode::kernel, ProxyMode::copy_engine}) {
    const std::string mode_name = mode == ProxyMode::kernel ? "kernel" : "copy-engine";
    auto a2a_a = [&] { proxy_all_to_all(env, mode, bytes, env.a.get(), env.c.get(), parity); };
    auto a2a_b = [&] { proxy_all_to_all(env, mode, bytes, env.b.get(), env.c.get(), parity); };
    const Timing a2a_alone = env.time(env.a.get(), a2a_a);
    for (double cap : env.cfg.copy_caps_bytes_per_s) {
      auto paced = [&](cudaStream_t s, uint64_t* mark) {
        enqueue_paced_copy(env.dev_a.get(), env.host_a.get(), bytes, cudaMemcpyHostToDevice, cap, sub, mark, s);
      };
      const cudaStream_t ps = env.paced.get();
      const Timing alone = env.time(ps, [&] { paced(ps, t0a); });
      // A background that cannot outlast the measured body means the measured one is starved
      // (copy-engine mode: the paced sub-chunks queue behind every all-to-all copy already
      // submitted to the same engine); the point then records the starvation instead of a time.
      std::optional<Timing> a2a_with, h2d_with;
      try {
        a2a_with = env.time_with_background(env.a.get(), a2a_a, ps, [&] { paced(ps, t0b); },
                                            cover(a2a_alone.median, alone.median));
      } catch (const std::runtime_error&) {
        CF_CUDA(cudaDeviceSynchronize());
      }
      try {
        h2d_with = env.time_with_background(ps, [&] { paced(ps, t0a); }, env.b.get(), a2a_b,
                                            cover(alone.median, a2a_alone.median));
      } catch (const std::runtime_error&) {
        CF_CUDA(cudaDeviceSynchronize());
      }
      BenchPoint p;
      p.labels = {{"collective_mode", mode_name}};
      p.numbers = {{"cap_bytes_per_s", cap}, {"bytes", double(bytes)}, {"sub_chunk_bytes", double(sub)}};
      add_timing(p, "", alone);
      p.numbers.push_back({"achieved_bytes_per_s", double(bytes) / alone.median});
      p.numbers.push_back({"achieved_over_cap", cap > 0 ? double(bytes) / alone.median / cap : 0.0});
      p.numbers.push_back({"collective_bytes", double(bytes)});
      p.numbers.push_back({"collective_alone_time_s_median", a2a_alone.median});
      p.numbers.push_back({"collective_starved", a2a_with ? 0.0 : 1.0});
      if (a2a_with) {
        add_timing(p, "collective_", *a2a_with);
        p.numbers.push_back({"collective_slowdown", a2a_with->median / a2a_alone.median - 1.0});
      }
      p.numbers.push_back({"h2d_with_collective_starved", h2d_with ? 0.0 : 1.0});
      if (h2d_with) {
        add_timing(p, "h2d_with_collective_", *h2d_with);
        p.numbers.push_back({"h2d_with_collective_bytes_per_s", double(bytes) / h2d_with->median});
      }
      r.points.push_back(std::move(p));
    }
  }
  return r;
}

/// Device buffer of `elems` bf16 values: a seeded host pattern of 4096 values folded to size.
DeviceBuffer random_bf16(int64_t elems, uint64_t seed, cudaStream_t s) {
  DeviceBuffer out(size_t(std::max<int64_t>(elems, 1)) * 2);
  const auto pattern = initial_hidden(seed, 0, 4096);
  DeviceBuffer src(pattern.size() * 2);
  CF_CUDA(cudaMemcpy(src.get(), pattern.data(), src.bytes(), cudaMemcpyHostToDevice));
  launch_fold(src.as<bf16>(), int64_t(pattern.size()), out.as<bf16>(), elems, Activation::identity, s);
  CF_CUDA(cudaStreamSynchronize(s));
  return out;
}

/// A cuBLAS handle with its own 32 MiB workspace, bound to `stream` (the GEMM and attention benches;
/// a later cublasSetStream may move it). Errors: DeviceError from cuBLAS or the allocation.
struct BenchCublas {
  CublasHandle handle;
  DeviceBuffer workspace{32 << 20};
  explicit BenchCublas(cudaStream_t stream) {
    CF_CUBLAS(cublasSetStream(handle.get(), stream));
    CF_CUBLAS(cublasSetWorkspace(handle.get(), workspace.get(), workspace.bytes()));
  }
  cublasHandle_t get() const { return handle.get(); }
};

BenchResult gemm(Env& env) {
  BenchResult r;
  const BenchCublas h(env.a.get());
  for (const auto& g : env.cfg.gemms) {
    DeviceBuffer x = random_bf16(g.m * g.k, 1, env.a.get());
    DeviceBuffer w = random_bf16(g.n * g.k, 2, env.a.get());
    DeviceBuffer y(size_t(g.m * g.n) * 2);
    const auto t = env.time(env.a.get(), [&] { gemm_bf16(h.get(), x.as<bf16>(), w.as<bf16>(), y.as<bf16>(), g.m, g.k, g.n); });
    BenchPoint p;
    p.labels = {{"model", g.model}, {"block_kind", g.block_kind}, {"linear", g.linear}};
    const double flop = 2.0 * double(g.m) * double(g.k) * double(g.n);
    p.numbers = {{"m", double(g.m)}, {"k", double(g.k)}, {"n", double(g.n)}, {"flop", flop},
                 {"weight_bytes", double(g.k * g.n * 2)}};
    add_timing(p, "", t);
    p.numbers.push_back({"flop_per_s", flop / t.median});
    r.points.push_back(std::move(p));
  }
  return r;
}

/// GEMM time alone and while a transfer of `bytes` runs on another stream (compute slowdown from
/// PCIe traffic: SM-driven proxy kernels compete for SMs, copy engines for memory bandwidth).
BenchResult compute_with(Env& env, const std::string& what) {
  BenchResult r;
  const BenchCublas h(env.a.get());
  // The largest-FLOP shapes (up to 4): long enough to overlap a whole transfer.
  std::vector<BenchGemm> shapes = env.cfg.gemms;
  std::sort(shapes.begin(), shapes.end(), [](const BenchGemm& x, const BenchGemm& y) { return x.m * x.k * x.n > y.m * y.k * y.n; });
  shapes.resize(std::min<size_t>(shapes.size(), 4));
  const int64_t bytes = env.cfg.max_bytes;
  int parity = 0;
  for (const auto& g : shapes) {
    DeviceBuffer x = random_bf16(g.m * g.k, 1, env.a.get());
    DeviceBuffer w = random_bf16(g.n * g.k, 2, env.a.get());
    DeviceBuffer y(size_t(g.m * g.n) * 2);
    auto run_gemm = [&] { gemm_bf16(h.get(), x.as<bf16>(), w.as<bf16>(), y.as<bf16>(), g.m, g.k, g.n); };
    const Timing alone = env.time(env.a.get(), run_gemm);
    auto transfer_on = [&](cudaStream_t s) {
      if (what == "h2d")
        CF_CUDA(cudaMemcpyAsync(env.dev_b.get(), env.host_b.get(), size_t(bytes), cudaMemcpyHostToDevice, s));
      else
        proxy_all_to_all(env, ProxyMode::kernel, bytes, s, env.c.get(), parity);
    };
    CF_CUBLAS(cublasSetStream(h.get(), env.b.get()));
    auto gemm_b = [&] { run_gemm(); };
    // The transfer alone, then each one timed while the other repeats throughout.
    const Timing transfer_alone = env.time(env.a.get(), [&] { transfer_on(env.a.get()); });
    const Timing transfer = env.time_with_background(env.a.get(), [&] { transfer_on(env.a.get()); }, env.b.get(), gemm_b,
                                                     cover(transfer_alone.median, alone.median));
    CF_CUBLAS(cublasSetStream(h.get(), env.a.get()));
    const Timing with = env.time_with_background(env.a.get(), run_gemm, env.b.get(), [&] { transfer_on(env.b.get()); },
                                                 cover(alone.median, transfer_alone.median));
    BenchPoint p;
    p.labels = {{"model", g.model}, {"block_kind", g.block_kind}, {"linear", g.linear}};
    p.numbers = {{"m", double(g.m)}, {"k", double(g.k)}, {"n", double(g.n)},
                 {"flop", 2.0 * double(g.m) * double(g.k) * double(g.n)}, {"bytes", double(bytes)}};
    add_timing(p, "alone_", alone);
    add_timing(p, "", with);
    add_timing(p, what + "_", transfer);
    p.numbers.push_back({"slowdown", with.median / alone.median - 1.0});
    r.points.push_back(std::move(p));
  }
  return r;
}

BenchResult attention(Env& env) {
  BenchResult r;
  const BenchCublas h(env.a.get());
  // One tile for every shape, as a run uses: the executor sizes one workspace per rank for the
  // plan's largest batch·heads and head dim (hw/executor.cu), so the bench measures the tile the
  // scenario's runs execute with.
  int64_t max_rows = 0, max_head_dim = 0;
  for (const auto& a : env.cfg.attentions) {
    max_rows = std::max(max_rows, a.rows);
    max_head_dim = std::max(max_head_dim, a.head_dim);
  }
  const int64_t run_tile = AttentionTile::choose_tile(max_rows, max_head_dim, env.cfg.attention_tile_bytes);
  for (const auto& a : env.cfg.attentions) {
    AttentionTile tile;
    tile.rows = a.rows;
    tile.head_dim = a.head_dim;
    tile.tile = run_tile;
    DeviceBuffer tb(size_t(AttentionTile::bytes(a.rows, tile.tile, a.head_dim)));
    std::byte* at = tb.get();
    auto take = [&](int64_t bytes) { std::byte* q = at; at += (bytes + 255) / 256 * 256; return q; };
    tile.scores = reinterpret_cast<float*>(take(a.rows * tile.tile * tile.tile * 4));
    tile.probs = reinterpret_cast<bf16*>(take(a.rows * tile.tile * tile.tile * 2));
    tile.out_acc = reinterpret_cast<float*>(take(a.rows * tile.tile * a.head_dim * 4));
    tile.row_max = reinterpret_cast<float*>(take(a.rows * tile.tile * 4));
    tile.row_sum = reinterpret_cast<float*>(take(a.rows * tile.tile * 4));
    DeviceBuffer q = random_bf16(a.rows * a.q_tokens * a.head_dim, 3, env.a.get());
    DeviceBuffer k = random_bf16(a.rows * a.kv_tokens * a.head_dim, 4, env.a.get());
    DeviceBuffer v = random_bf16(a.rows * a.kv_tokens * a.head_dim, 5, env.a.get());
    DeviceBuffer o(size_t(a.rows * a.q_tokens * a.head_dim) * 2);
    // Graph-launched, as the runs execute it: its many short kernels (3 per score tile) would
    // otherwise carry the host's launch gaps, which a run does not (H200, 2026-11-26: the Wan 81f
    // self-attention took 36.7 ms here stream-launched, 32.5 ms inside the runs).
    const auto t = env.time_graph(env.a.get(), [&] {
      attention_forward(h.get(), env.a.get(), q.as<bf16>(), k.as<bf16>(), v.as<bf16>(), o.as<bf16>(), a.rows,
                        a.q_tokens, a.kv_tokens, a.head_dim, tile);
    });
    BenchPoint p;
    p.labels = {{"model", a.model}, {"launch", "graph"}};
    const double flop = 4.0 * double(a.rows) * double(a.q_tokens) * double(a.kv_tokens) * double(a.head_dim);
    p.numbers = {{"rows", double(a.rows)}, {"q_tokens", double(a.q_tokens)}, {"kv_tokens", double(a.kv_tokens)},
                 {"head_dim", double(a.head_dim)}, {"tile", double(tile.tile)}, {"flop", flop}};
    add_timing(p, "", t);
    p.numbers.push_back({"flop_per_s", flop / t.median});
    r.points.push_back(std::move(p));
  }
  return r;
}

BenchResult collective_nccl(Env& env) {
  BenchResult r;
  const int n = env.device_count;
  std::vector<ncclComm_t> raw(static_cast<size_t>(n));
  std::vector<int> devs(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) devs[size_t(d)] = d;
  CF_NCCL(ncclCommInitAll(raw.data(), n, devs.data()));
  std::vector<NcclComm> comms;
  for (auto c : raw) comms.emplace_back(c);
  std::vector<Stream> streams;
  std::vector<DeviceBuffer> send, recv;
  std::vector<Event> start, stop;
  const int64_t max_bytes = env.cfg.max_bytes;
  for (int d = 0; d < n; ++d) {
    use_device(d);
    streams.emplace_back();
    send.emplace_back(size_t(max_bytes));
    recv.emplace_back(size_t(max_bytes));
    start.emplace_back();
    stop.emplace_back();
  }
  auto all_to_all = [&](int64_t bytes) {
    const int64_t per = bytes / n;
    CF_NCCL(ncclGroupStart());
    for (int d = 0; d < n; ++d)
      for (int peer = 0; peer < n; ++peer) {
        CF_NCCL(ncclSend(send[size_t(d)].get() + peer * per, size_t(per), ncclInt8, peer, comms[size_t(d)].get(), streams[size_t(d)].get()));
        CF_NCCL(ncclRecv(recv[size_t(d)].get() + peer * per, size_t(per), ncclInt8, peer, comms[size_t(d)].get(), streams[size_t(d)].get()));
      }
    CF_NCCL(ncclGroupEnd());
  };
  auto sync_all = [&] {
    for (int d = 0; d < n; ++d) {
      use_device(d);
      CF_CUDA(cudaStreamSynchronize(streams[size_t(d)].get()));
    }
  };
  for (int64_t bytes : env.sizes(1 << 20)) {
    for (int i = 0; i < env.cfg.warmup; ++i) all_to_all(bytes);
    sync_all();
    std::vector<double> t;
    for (int i = 0; i < std::max(1, env.cfg.repeat); ++i) {
      for (int d = 0; d < n; ++d) {
        use_device(d);
        start[size_t(d)].record(streams[size_t(d)].get());
      }
      all_to_all(bytes);
      for (int d = 0; d < n; ++d) {
        use_device(d);
        stop[size_t(d)].record(streams[size_t(d)].get());
      }
      sync_all();
      double worst = 0;
      for (int d = 0; d < n; ++d) worst = std::max(worst, stop[size_t(d)].seconds_since(start[size_t(d)]));
      t.push_back(worst);
    }
    const auto tm = summarize_s(t);
    BenchPoint p;
    p.numbers.push_back({"bytes", double(bytes)});
    p.numbers.push_back({"ranks", double(n)});
    add_timing(p, "", tm);
    p.numbers.push_back({"algbw_bytes_per_s", double(bytes) / tm.median});
    p.numbers.push_back({"busbw_bytes_per_s", double(bytes) / tm.median * double(n - 1) / double(n)});
    r.points.push_back(std::move(p));
  }
  // Release on each device before returning to device 0.
  for (int d = n - 1; d >= 0; --d) {
    use_device(d);
    stop.pop_back();
    start.pop_back();
    recv.pop_back();
    send.pop_back();
    streams.pop_back();
  }
  comms.clear();
  use_device(0);
  return r;
}

struct Entry {
  std::string key, description;
  std::function<std::string(const Env&)> waive;  ///< non-empty: reason it cannot run here
  std::function<BenchResult(Env&)> run;
};

std::vector<Entry> entries() {
  auto never = [](const Env&) { return std::string(); };
  auto needs_gemms = [](const Env& e) { return e.cfg.gemms.empty() ? std::string("no GEMM shapes configured") : std::string(); };
  auto needs_attentions = [](const Env& e) {
    return e.cfg.attentions.empty() ? std::string("no attention shapes configured") : std::string();
  };
  return {
      {"h2d_bandwidth", "pinned host→device cudaMemcpyAsync (copy engine) against transfer size", never,
       [](Env& e) { return copy_sweep(e, cudaMemcpyHostToDevice); }},
      {"d2h_bandwidth", "device→pinned host cudaMemcpyAsync (copy engine) against transfer size", never,
       [](Env& e) { return copy_sweep(e, cudaMemcpyDeviceToHost); }},
      {"d2d_bandwidth", "device→device cudaMemcpyAsync against size (bytes copied; the weight gather's cost)", never,
       [](Env& e) { return copy_sweep(e, cudaMemcpyDeviceToDevice); }},
      {"h2d_with_d2h", "H2D of S bytes while a D2H of S bytes runs on another stream (both rates)", never,
       [](Env& e) {
         return h2d_with(e, "d2h", [&e](int64_t bytes, cudaStream_t s) {
           CF_CUDA(cudaMemcpyAsync(e.host_b.get(), e.dev_b.get(), size_t(bytes), cudaMemcpyDeviceToHost, s));
         });
       }},
      {"collective_proxy_kernel",
       "pcie-proxy all-to-all, kernel mode (SM writes/reads mapped pinned host memory), per-rank buffer size", never,
       [](Env& e) { return collective_proxy(e, ProxyMode::kernel); }},
      {"collective_proxy_copy_engine", "pcie-proxy all-to-all, copy-engine mode (D2H and H2D memcpy), per-rank buffer size",
       never, [](Env& e) { return collective_proxy(e, ProxyMode::copy_engine); }},
      {"collective_nccl", "NCCL all-to-all (grouped ncclSend/ncclRecv) over every GPU, per-rank buffer size",
       [](const Env& e) {
         return e.device_count < 2 ? "needs ≥ 2 GPUs, found " + std::to_string(e.device_count) : std::string();
       },
       [](Env& e) { return collective_nccl(e); }},
      {"h2d_with_collective_kernel", "H2D of S bytes while a kernel-mode proxy all-to-all of S bytes runs", never,
       [](Env& e) {
         int parity = 0;
         return h2d_with(e, "collective", [&e, parity](int64_t bytes, cudaStream_t s) mutable {
           proxy_all_to_all(e, ProxyMode::kernel, bytes, s, e.c.get(), parity);
         });
       }},
      {"h2d_with_collective_copy_engine", "H2D of S bytes while a copy-engine proxy all-to-all of S bytes runs", never,
       [](Env& e) {
         int parity = 0;
         return h2d_with(e, "collective", [&e, parity](int64_t bytes, cudaStream_t s) mutable {
           proxy_all_to_all(e, ProxyMode::copy_engine, bytes, s, e.c.get(), parity);
         });
       }},
      {"copy_cap", "rate-capped (paced) H2D: achieved rate per cap, and the slowdown of a proxy all-to-all beside it", never,
       [](Env& e) { return copy_cap(e); }},
      {"compute_with_h2d", "GEMM time alone and while a max-size H2D copy runs on another stream", needs_gemms,
       [](Env& e) { return compute_with(e, "h2d"); }},
      {"compute_with_collective", "GEMM time alone and while a max-size kernel-mode proxy all-to-all runs", needs_gemms,
       [](Env& e) { return compute_with(e, "collective"); }},
      {"gemm", "cuBLAS bf16 GEMM (fp32 accumulate) for each block linear's shape at several token counts", needs_gemms,
       [](Env& e) { return gemm(e); }},
      {"attention", "tiled attention (cuBLAS batched GEMMs + online softmax) at several token counts", needs_attentions,
       [](Env& e) { return attention(e); }},
  };
}

}  // namespace

std::vector<std::pair<std::string, std::string>> bench_registry() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : entries()) out.push_back({e.key, e.description});
  return out;
}

std::vector<BenchResult> run_benchmarks(const BenchConfig& config) {
  const auto all = entries();
  for (const auto& k : config.only)
    if (std::none_of(all.begin(), all.end(), [&](const Entry& e) { return e.key == k; }))
      throw std::invalid_argument("unknown measurement \"" + k + "\" (see `chunkflow-hw bench --list`)");
  Env env(config);
  env.device_count = require_devices(1);
  use_device(0);
  env.host_a = PinnedBuffer(size_t(config.max_bytes), cudaHostAllocDefault);
  env.host_b = PinnedBuffer(size_t(config.max_bytes), cudaHostAllocDefault);
  env.dev_a = DeviceBuffer(size_t(config.max_bytes));
  env.dev_b = DeviceBuffer(size_t(config.max_bytes));
  env.send = DeviceBuffer(size_t(config.max_bytes));
  env.recv = DeviceBuffer(size_t(config.max_bytes));
  for (auto& s : env.stage) s = PinnedBuffer(size_t(config.max_bytes), cudaHostAllocMapped);
  std::memset(env.host_a.get(), 1, env.host_a.bytes());
  std::vector<BenchResult> results;
  for (const auto& e : all) {
    if (!config.only.empty() && std::find(config.only.begin(), config.only.end(), e.key) == config.only.end())
      continue;
    BenchResult r;
    if (const std::string why = e.waive(env); !why.empty()) {
      r.status = "waived";
      r.reason = why;
    } else {
      r = e.run(env);
    }
    r.key = e.key;
    r.description = e.description;
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace chunkflow::hw
