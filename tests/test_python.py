#!/usr/bin/python3
"""The Python module (issue 12 §4) gives what the command line gives: every function's result equals
the CLI's JSON (context blocks aside: they name the command line), and input errors raise
chunkflow.InputError with the CLI's message.

Usage (ctest): PYTHONPATH=build/python /usr/bin/python3 tests/test_python.py build/chunkflow
"""
import json
import os
import subprocess
import sys
import tempfile

import chunkflow

CLI = os.path.abspath(sys.argv[1])
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failures = []


def cli_json(*args):
    out = subprocess.run([CLI, *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def without_context(d):
    return {k: v for k, v in d.items() if k != "context"}


def check(name, ok, detail=""):
    print(("PASS: " if ok else "FAIL: ") + name + ("" if ok else " — " + detail))
    if not ok:
        failures.append(name)


# model: the dict of `chunkflow model --json`.
got = chunkflow.model(model="flux.1-dev", height=1024, width=1024, ulysses=2)
want = cli_json("model", "--json", "--model", "flux.1-dev", "--height", "1024", "--width", "1024", "--ulysses", "2")
check("model() equals `model --json`", without_context(got) == without_context(want))
check("model() has the analytical keys", "critical_flop" in got and "regime" in got)

# simulate: every policy, the dict of `chunkflow simulate --json`.
for policy, extra, kwargs in [
    ("no-offload", [], {}),
    ("layerwise", ["--resident-fraction", "0.5"], {"resident_fraction": 0.5}),
    ("chunkflow", ["--chunk-mib", "32", "--resident-fraction", "auto"], {"chunk_mib": 32, "resident_fraction": "auto"}),
]:
    got = chunkflow.simulate(policy=policy, model="wan2.1-t2v-1.3b", frames=17, **kwargs)
    want = cli_json("simulate", "--json", "--policy", policy, "--model", "wan2.1-t2v-1.3b", "--frames", "17", *extra)
    check("simulate(policy=%s) equals `simulate --json`" % policy, without_context(got) == without_context(want),
          "step_time_s %s vs %s" % (got.get("step_time_s"), want.get("step_time_s")))

# tune: the dict of `chunkflow tune --json` (a small grid; out='' writes no files).
got = chunkflow.tune(memory_budget_gib=8, model="wan2.1-t2v-1.3b", frames=17, policies="layerwise,chunkflow",
                     chunk_mib_list=[16, 64], resident_fractions="0,0.5,auto", out="")
want = cli_json("tune", "--json", "--memory-budget-gib", "8", "--model", "wan2.1-t2v-1.3b", "--frames", "17",
                "--policies", "layerwise,chunkflow", "--chunk-mib-list", "16,64", "--resident-fractions", "0,0.5,auto",
                "--out", "")
check("tune() equals `tune --json`", without_context(got) == without_context(want))

# sweep: the rows of `sweep --grid`'s grid.jsonl, from a path and from a dict.
grid_path = os.path.join(ROOT, "scenarios", "grids", "small.json")
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([CLI, "sweep", "--grid", grid_path, "--out", tmp], check=True, capture_output=True)
    with open(os.path.join(tmp, "grid.jsonl")) as f:
        want_rows = [json.loads(line) for line in f.read().splitlines()[1:]]
rows = chunkflow.sweep(grid_path, threads=2)
check("sweep(path) equals grid.jsonl (%d rows)" % len(want_rows), rows == want_rows)
with open(grid_path) as f:
    grid = json.load(f)
rows = chunkflow.sweep(grid, threads=1)
check("sweep(dict) equals grid.jsonl", rows == want_rows)
check("rows are plain dicts with the JSON keys", isinstance(rows[0], dict) and "step_time_s" in rows[0] and "config_index" in rows[0])

# Errors: chunkflow.InputError (a ValueError) with the CLI's message.
def cli_error(*args):
    r = subprocess.run([CLI, *args], capture_output=True, text=True)
    assert r.returncode == 2, r
    return r.stderr.strip().removeprefix("chunkflow: error: ")


for name, call, args in [
    ("frames", lambda: chunkflow.simulate(frames=80), ["simulate", "--json", "--frames", "80"]),
    ("policy", lambda: chunkflow.simulate(policy="fastest"), ["simulate", "--json", "--policy", "fastest"]),
    ("budget", lambda: chunkflow.tune(memory_budget_gib=-1, out=""), ["tune", "--json", "--memory-budget-gib", "-1", "--out", ""]),
]:
    try:
        call()
        check("bad %s raises" % name, False, "no exception")
    except chunkflow.InputError as e:
        want = cli_error(*args)
        check("bad %s raises InputError with the CLI's message" % name, str(e) == want, "%r vs %r" % (str(e), want))
try:
    chunkflow.sweep({"models": ["sd3"]})
    check("bad grid raises", False, "no exception")
except ValueError as e:
    check("bad grid raises a ValueError naming the pointer", "/models/0" in str(e), str(e))
try:
    chunkflow.simulate(no_such_option=1)
    check("unknown option raises", False, "no exception")
except chunkflow.InputError as e:
    check("unknown option raises InputError", "no-such-option" in str(e), str(e))

sys.exit(1 if failures else 0)
