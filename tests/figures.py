"""Comparing figures recomputed here with the figures a build recorded.

A figure computed through BLAS (a matrix product, a sum over many terms) may differ in its last
bits from one machine to another: OpenBLAS picks its kernel by CPU (and by OPENBLAS_CORETYPE),
and kernels add in different orders. So recorded figures are compared as follows:

- counts (ints: cases, queries, resolved cases, skipped lines), strings, booleans and None:
  exactly, and so are the keys and lengths of every dict and list;
- float64 figures within FLOAT64_RTOL of each other, relative to the larger of the two
  (FLOAT64_ATOL for figures at or near zero): 1e-9 is about 4.5 million float64 epsilons, far
  more than reordering a sum can change, and far less than any real change of a figure;
- float32 figures within FLOAT32_RTOL, stated from float32's epsilon in the same way.
"""

import math

import numpy as np

FLOAT64_RTOL = 1e-9  # ~4.5e6 x float64 epsilon (2.2e-16)
FLOAT64_ATOL = 1e-12  # figures that are zero on one machine and 1e-17 on another
FLOAT32_RTOL = 1024 * float(np.finfo(np.float32).eps)  # ~1.2e-4: a float32 sum of a few hundred terms, reordered
FLOAT32_ATOL = 1e-6


def figure_differences(recomputed, recorded, *, float32: bool = False, path: str = "") -> list[str]:
    """Where `recomputed` and `recorded` (JSON-like: dicts, lists, numbers, strings) differ; [] when they agree."""
    rtol, atol = (FLOAT32_RTOL, FLOAT32_ATOL) if float32 else (FLOAT64_RTOL, FLOAT64_ATOL)
    where = path or "figures"
    if isinstance(recorded, dict):
        if not isinstance(recomputed, dict) or set(recomputed) != set(recorded):
            got = sorted(recomputed) if isinstance(recomputed, dict) else type(recomputed).__name__
            return [f"{where}: keys {got} != {sorted(recorded)}"]
        return [d for k in recorded for d in figure_differences(recomputed[k], recorded[k], float32=float32, path=f"{where}.{k}")]
    if isinstance(recorded, list):
        if not isinstance(recomputed, (list, tuple)) or len(recomputed) != len(recorded):
            return [f"{where}: {recomputed!r} != {recorded!r}"]
        return [d for i, (a, b) in enumerate(zip(recomputed, recorded))
                for d in figure_differences(a, b, float32=float32, path=f"{where}[{i}]")]
    if isinstance(recorded, float) and isinstance(recomputed, (float, int)) and not isinstance(recomputed, bool):
        a, b = float(recomputed), recorded
        if math.isnan(a) and math.isnan(b):
            return []
        if a == b or abs(a - b) <= max(rtol * max(abs(a), abs(b)), atol):
            return []
        return [f"{where}: {a!r} != {b!r} (relative difference {abs(a - b) / max(abs(a), abs(b)):.1e}, tolerance {rtol:.0e})"]
    if type(recomputed) is not type(recorded) or recomputed != recorded:  # counts, names, flags: exactly
        return [f"{where}: {recomputed!r} != {recorded!r}"]
    return []


def assert_figures_match(recomputed, recorded, *, float32: bool = False) -> None:
    """Counts exactly, floats within the stated tolerance (see the module's docstring)."""
    differences = figure_differences(recomputed, recorded, float32=float32)
    assert not differences, f"{len(differences)} figures differ:\n" + "\n".join(differences[:20])
