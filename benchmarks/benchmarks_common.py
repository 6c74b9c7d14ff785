"""Helpers the benchmarks share."""
from __future__ import annotations

import os
import subprocess
import sys

NUMPY_SNIPPET = """
import sys, time, statistics, numpy as np
n, repeat = int(sys.argv[1]), int(sys.argv[2])
a = np.random.rand(n, n).astype("float32"); b = np.random.rand(n, n).astype("float32")
c = np.empty((n, n), "float32")
for _ in range(3): np.matmul(a, b, out=c)
ts = []
for _ in range(repeat):
    t = time.perf_counter(); np.matmul(a, b, out=c); ts.append(time.perf_counter() - t)
print(statistics.median(ts))
"""


def numpy_matmul_seconds(n: int, repeat: int, coretype: str | None) -> float:
    """Median seconds of numpy's matmul in a fresh process (OpenBLAS reads
    OPENBLAS_CORETYPE once, when it loads)."""
    env = dict(os.environ)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([sys.executable, "-c", NUMPY_SNIPPET, str(n), str(repeat)],
                         env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())
