#!/usr/bin/env python3
"""Time the kernels the compute model prices, through PyTorch, on the GPU this runs on.

    python3 scripts/measure_kernels.py --out kernels.json [--quick]

What it measures (bf16 throughout, one GPU, CUDA events, median of --repeat timed calls after
--warmup untimed ones; inputs drawn from a normal distribution, never zeros):
  - gemm: torch.matmul (cuBLAS / cuBLASLt) of (m × k) · (k × n) at the token counts and linear
    shapes of the models in ../shared/reference/dit-architectures.md (FLUX.1-dev and HunyuanVideo
    d = 3072, Wan2.1-14B d = 5120, Wan2.1-1.3B d = 1536) → FLOP/s = 2·m·k·n / t;
  - attention: torch.nn.functional.scaled_dot_product_attention, non-causal, head dim 128, with each
    backend PyTorch offers on this GPU (flash = FlashAttention-2, cudnn = cuDNN's fused flash
    attention, efficient = memory-efficient) → FLOP/s = 4·B·H·S_q·S_kv·hd / t;
  - elementwise: LayerNorm without affine, GELU (tanh), adaLN modulation x·(1 + scale) + shift,
    a residual add, each over an (S × d) activation → bytes/s = (bytes read + written) / t.
It is the measurement side of model/kernel_model.cpp (`chunkflow validate --kernels FILE` prices it);
scripts/first-contact.sh runs it when torch is there. Needs torch with CUDA; exits 3 without a GPU.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys


def context(args):
    import torch
    p = torch.cuda.get_device_properties(0)
    driver = ""
    try:
        driver = open("/proc/driver/nvidia/version").readline().strip()
    except OSError:
        pass
    return {
        "tool": "scripts/measure_kernels.py",
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "gpu_name": p.name,
        "sm_count": p.multi_processor_count,
        "memory_bytes": p.total_memory,
        "compute_capability": f"{p.major}.{p.minor}",
        "driver": driver,
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "warmup": args.warmup,
        "repeat": args.repeat,
        "git_revision": subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                       text=True).stdout.strip() or "unknown",
    }


def time_s(fn, warmup, repeat):
    """Median seconds of fn() over `repeat` calls, each between two CUDA events."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    times.sort()
    return times[len(times) // 2], times[0], times[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="fewer token counts")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("measure_kernels.py: torch is not installed", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("measure_kernels.py: no CUDA device", file=sys.stderr)
        return 3
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    dev = "cuda"
    bf16 = torch.bfloat16
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)

    def randn(*shape):
        return torch.randn(*shape, device=dev, dtype=bf16, generator=gen)

    # Linear shapes (k, n) of the models' blocks (dit-architectures.md): attention projections,
    # fused QKV, MLP up and down.
    linears = {
        "d3072": [(3072, 3072), (3072, 9216), (3072, 12288), (12288, 3072)],
        "d5120": [(5120, 5120), (5120, 13824), (13824, 5120)],
        "d1536": [(1536, 1536), (1536, 8960), (8960, 1536)],
    }
    tokens = [256, 1024, 2048, 4096, 4608, 8192, 16380, 32760] if not args.quick else [1024, 4608, 16380, 32760]
    out = {"context": context(args), "gemm": [], "attention": [], "elementwise": []}

    for family, shapes in linears.items():
        for (k, n) in shapes:
            b = randn(k, n)
            for m in tokens:
                a = randn(m, k)
                t, lo, hi = time_s(lambda: torch.matmul(a, b), args.warmup, args.repeat)
                flop = 2.0 * m * k * n
                out["gemm"].append({"m": m, "k": k, "n": n, "family": family, "time_s": t, "min_s": lo,
                                    "max_s": hi, "flop": flop, "flop_per_s": flop / t})
                del a
            del b
    print(f"gemm: {len(out['gemm'])} shapes", flush=True)

    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    seqs = [(24, 1024), (24, 4608), (24, 8192), (24, 16384), (12, 32760), (20, 32760), (40, 8190),
            (20, 75600), (12, 4096), (6, 32760)]
    if args.quick:
        seqs = [(24, 4608), (12, 32760), (20, 75600)]
    hd = 128
    for heads, s in seqs:
        q, k_, v = randn(1, heads, s, hd), randn(1, heads, s, hd), randn(1, heads, s, hd)
        flop = 4.0 * heads * s * s * hd
        for name, be in backends.items():
            rec = {"backend": name, "batch": 1, "heads": heads, "q_tokens": s, "kv_tokens": s, "head_dim": hd,
                   "flop": flop}
            try:
                with sdpa_kernel([be]):
                    reps = args.repeat if flop < 2e13 else max(3, args.repeat // 3)
                    t, lo, hi = time_s(lambda: torch.nn.functional.scaled_dot_product_attention(q, k_, v),
                                       args.warmup, reps)
                rec.update({"time_s": t, "min_s": lo, "max_s": hi, "flop_per_s": flop / t})
            except Exception as e:  # a backend that does not run this shape here is recorded, not fatal
                rec["error"] = str(e).splitlines()[0][:200]
            out["attention"].append(rec)
        del q, k_, v
    print(f"attention: {len(out['attention'])} points", flush=True)

    for s, d in [(4608, 3072), (32760, 1536), (32760, 5120), (75600, 5120)]:
        x = randn(s, d)
        scale, shift = randn(d), randn(d)
        y = randn(s, d)
        elem = s * d * 2  # bytes of one (s × d) bf16 tensor
        ops = {
            "layer_norm": (lambda: torch.nn.functional.layer_norm(x, (d,)), 2 * elem),
            "gelu_tanh": (lambda: torch.nn.functional.gelu(x, approximate="tanh"), 2 * elem),
            # Eager x·(1+scale)+shift is two full-size kernels (the multiply, then the add): each
            # reads and writes the activation. (kernels.json of 2026-11-26 counted one pass, 2·elem.)
            "modulate": (lambda: x * (1 + scale) + shift, 4 * elem),
            "residual_add": (lambda: x + y, 3 * elem),
        }
        for name, (fn, nbytes) in ops.items():
            t, lo, hi = time_s(fn, args.warmup, args.repeat)
            out["elementwise"].append({"op": name, "tokens": s, "dim": d, "bytes": nbytes, "time_s": t, "min_s": lo,
                                       "max_s": hi, "bytes_per_s": nbytes / t})
        del x, y
    print(f"elementwise: {len(out['elementwise'])} points", flush=True)

    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, args.out)
    # Short table last.
    for r in out["attention"]:
        if "flop_per_s" in r:
            print(f"sdpa {r['backend']:9s} H={r['heads']:3d} S={r['q_tokens']:6d}: {r['flop_per_s'] / 1e12:6.1f} TFLOP/s")
    for r in out["gemm"]:
        if r["m"] in (1024, 4608, 32760):
            print(f"gemm {r['m']:6d}x{r['k']:5d}x{r['n']:5d}: {r['flop_per_s'] / 1e12:6.1f} TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
