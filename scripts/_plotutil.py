"""Shared helpers of the chunkflow plotting scripts (matplotlib, Agg backend, atomic PNG writes)."""
import json
import os
import signal
import sys


def _terminated(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through save()'s finally, which removes the temporary file


# chunkflow sends SIGTERM to a plotting script when it is interrupted (sim/python_process.hpp).
signal.signal(signal.SIGTERM, _terminated)

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")


def fail(message):
    print(f"{os.path.basename(sys.argv[0])}: error: {message}", file=sys.stderr)
    sys.exit(2)


def save(fig, out):
    """Writes OUT.png through a temporary file and a rename: no partial image on failure."""
    tmp = f"{out}.tmp.{os.getpid()}.png"
    try:
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def is_synthetic(*objects):
    """True when any context block or string mentions 'synthetic' (demo data, not a measurement)."""
    return any("synthetic" in json.dumps(o).lower() for o in objects if o is not None)
