#!/usr/bin/env python3
"""Time an H2D copy from pinned host memory while the GPU computes, through PyTorch.

    python3 scripts/measure_h2d_under_compute.py --out h2d-under-compute.json [--sizes-mib 16 64 256]

Why: prefetch copies run beside compute, and the simulator gives them the copy engine's full rate
whatever the compute does (it slows compute beside copies, compute_slowdown_h2d, but not copies
beside compute). On an H100 the harness's FLUX 1024² chunkflow copies ran at 46.7 GB/s under
compute against 55.1 alone (README "First measurements on an H100"). This measures that effect
directly, per kind of compute, so that a model of it can be fitted on benches, not on the runs it
must predict.

What it measures (one GPU, CUDA events, median of --repeat timed copies after --warmup untimed):
  - for each load in none, gemm (torch.matmul bf16 8192×8192·8192×8192), attention
    (scaled_dot_product_attention bf16, 1×24×4608×128, PyTorch's default backend) and elementwise
    (torch.add of two bf16 tensors of 64 Mi elements: HBM-bound), and each size S: one
    cudaMemcpyAsync of S bytes, pinned host → device, on its own stream, started after the load's
    first iteration has been enqueued and an event behind it has completed, with enough iterations
    queued behind it to outlast the copy (three times the copy's alone time);
  - per point: the copy's median, min and max time, the alone time (load none) at that size, the
    retained fraction alone / loaded, bytes/s, the load's time per iteration alone, and whether the
    load was still running when every timed copy ended (covered).
  - with --walk-gib G: 64 MiB copies that walk a G GiB pinned host buffer in order (as prefetch walks
    a model's weights), two passes, against 64 MiB copies repeated from one place: whether the
    source's footprint (host page translation on the way to host memory) sets the H2D rate.
Needs torch with CUDA; exits 3 without a GPU. Writes the JSON file whole (a temporary file renamed).
"""
import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_kernels import context  # noqa: E402  (same context block as kernels.json)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--sizes-mib", type=int, nargs="+", default=[16, 64, 256], help="copy sizes, MiB")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--walk-gib", type=int, default=0, help="also walk a pinned buffer of this many GiB (0: no)")
    args = ap.parse_args()
    if min(args.sizes_mib) <= 0 or args.repeat < 1 or args.warmup < 0:
        ap.error("--sizes-mib must be positive, --repeat at least 1, --warmup at least 0")
    try:
        import torch
    except ImportError:
        print("measure_h2d_under_compute.py: no torch here", file=sys.stderr)
        sys.exit(3)
    if not torch.cuda.is_available():
        print("measure_h2d_under_compute.py: no CUDA device", file=sys.stderr)
        sys.exit(3)
    torch.manual_seed(1)
    dev = torch.device("cuda")
    max_bytes = max(args.sizes_mib) << 20
    host = torch.randint(0, 256, (max_bytes,), dtype=torch.uint8).pin_memory()
    target = torch.empty(max_bytes, dtype=torch.uint8, device=dev)

    bf16 = torch.bfloat16
    a = torch.randn(8192, 8192, dtype=bf16, device=dev)
    b = torch.randn(8192, 8192, dtype=bf16, device=dev)
    q, k, v = (torch.randn(1, 24, 4608, 128, dtype=bf16, device=dev) for _ in range(3))
    x = torch.randn(64 << 20, dtype=bf16, device=dev)
    y = torch.randn(64 << 20, dtype=bf16, device=dev)
    z = torch.empty_like(x)
    gemm_out = torch.empty(8192, 8192, dtype=bf16, device=dev)
    loads = {
        "none": None,
        "gemm": lambda: torch.matmul(a, b, out=gemm_out),
        "attention": lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
        "elementwise": lambda: torch.add(x, y, out=z),
    }
    load_stream = torch.cuda.Stream()
    copy_stream = torch.cuda.Stream()

    def load_iteration_s(fn, n=20):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(n):
            fn()
        e1.record()
        torch.cuda.synchronize()
        return e0.elapsed_time(e1) / 1e3 / n

    def timed_copy(nbytes, fn, iterations):
        """Seconds of one copy of nbytes beside `iterations` queued calls of fn, and whether the load outlasted it."""
        torch.cuda.synchronize()
        started = torch.cuda.Event()
        load_end = torch.cuda.Event(enable_timing=True)
        c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if fn is not None:
            with torch.cuda.stream(load_stream):
                fn()
                started.record(load_stream)
                for _ in range(iterations):
                    fn()
                load_end.record(load_stream)
            copy_stream.wait_event(started)
        with torch.cuda.stream(copy_stream):
            c0.record(copy_stream)
            target[:nbytes].copy_(host[:nbytes], non_blocking=True)
            c1.record(copy_stream)
        torch.cuda.synchronize()
        covered = fn is None or c1.elapsed_time(load_end) > 0
        return c0.elapsed_time(c1) / 1e3, covered

    points = []
    alone = {}
    per_iteration = {name: (load_iteration_s(fn) if fn else 0.0) for name, fn in loads.items()}
    for name, fn in loads.items():
        for mib in args.sizes_mib:
            nbytes = mib << 20
            estimate_s = alone.get(nbytes, nbytes / 50e9)
            iterations = 0 if fn is None else max(2, math.ceil(3 * estimate_s / per_iteration[name]))
            times, covered = [], True
            for i in range(args.warmup + args.repeat):
                t, c = timed_copy(nbytes, fn, iterations)
                if i >= args.warmup:
                    times.append(t)
                    covered = covered and c
            median = statistics.median(times)
            if fn is None:
                alone[nbytes] = median
            points.append({
                "load": name,
                "bytes": float(nbytes),
                "h2d_time_s_median": median,
                "h2d_time_s_min": min(times),
                "h2d_time_s_max": max(times),
                "h2d_alone_time_s_median": alone[nbytes],
                "retained_fraction": alone[nbytes] / median,
                "h2d_bytes_per_s": nbytes / median,
                "load_iteration_s": per_iteration[name],
                "load_iterations_queued": iterations,
                "covered": covered,
            })
            print(f"{name:12s} {mib:5d} MiB: {nbytes / median / 1e9:6.1f} GB/s, retained {alone[nbytes] / median:.3f}"
                  f"{'' if covered else ' (load ended before the copy)'}")
    walk = []
    if args.walk_gib > 0:
        chunk = 64 << 20
        big = torch.empty(args.walk_gib << 30, dtype=torch.uint8, pin_memory=True)
        big[::4096] = 1  # touch every page once on the host
        torch.cuda.synchronize()

        def copy_s(src_offset):
            c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(copy_stream):
                c0.record(copy_stream)
                target[:chunk].copy_(big[src_offset:src_offset + chunk], non_blocking=True)
                c1.record(copy_stream)
            torch.cuda.synchronize()
            return c0.elapsed_time(c1) / 1e3

        n = (args.walk_gib << 30) // chunk
        for label, offsets in (("repeated", [0] * n), ("walk_pass_1", [i * chunk for i in range(n)]),
                               ("walk_pass_2", [i * chunk for i in range(n)]), ("repeated_after", [0] * n)):
            times = [copy_s(o) for o in offsets]
            walk.append({"source": label, "bytes": float(chunk), "copies": n, "footprint_bytes": float(len(set(offsets)) * chunk),
                         "h2d_time_s_median": statistics.median(times), "h2d_time_s_min": min(times),
                         "h2d_time_s_max": max(times), "h2d_bytes_per_s": chunk * n / sum(times)})
            print(f"{label:15s} {n} x 64 MiB over {len(set(offsets)) * 64} MiB: {chunk * n / sum(times) / 1e9:6.1f} GB/s "
                  f"(median copy {statistics.median(times) * 1e6:.0f} us)")
    ctx = context(args)
    ctx["tool"] = "scripts/measure_h2d_under_compute.py"
    ctx["sizes_mib"] = args.sizes_mib
    out = {"context": ctx, "h2d_under_compute": points}
    if walk:
        out["h2d_source_walk"] = walk
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
