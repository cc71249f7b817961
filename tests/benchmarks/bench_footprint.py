"""The memory estimate (models.footprint) against the measured peak, at the sizes tests/test_footprint.py checks.

Run by hand:  python tests/benchmarks/bench_footprint.py [KIND ...]
KIND: predict, "inspect --head", "inspect --page", "generate --page", "explain --page" (default: all). Each run is a fresh process with one
BLAS thread, its peak resident memory from wait4 (tests/test_footprint.measure); the estimate is the footprint's
`resident` (private memory and the file's pages read). Prints one row a run: size, estimate, measured peak, their ratio.
"""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.test_footprint import LENGTHS, PAGE_LENGTHS, RATIO, STEPS, measure, runs  # noqa: E402

SIZES = {"predict": LENGTHS, "inspect --head": LENGTHS, "inspect --page": PAGE_LENGTHS, "generate --page": STEPS, "explain --page": LENGTHS}


def main() -> None:
    kinds = sys.argv[1:] or list(SIZES)
    print(f"{'run':16} {'size':>6} {'estimate':>10} {'peak':>10} {'ratio':>6}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            for size in SIZES[kind]:
                args, estimate = runs(kind, size, Path(tmp))
                measured, out = measure(args + ["--force"] if "--page" in kind else args)
                guess = estimate(out).resident
                unit = "steps" if kind.startswith("generate") else "tokens"
                ok = "" if 1 / RATIO <= guess / measured <= RATIO else "  OUTSIDE 1.5x"
                print(f"{kind:16} {size:>6} {guess / 2**20:>6.0f} MiB {measured / 2**20:>6.0f} MiB {guess / measured:>6.2f}  ({unit}){ok}", flush=True)


if __name__ == "__main__":
    main()
