"""Where products straight from a GGUF file's blocks stop beating BLAS on the dequantized layer: one forward pass of n
tokens on a real quantized checkpoint, both ways, in one process.

    python tests/benchmarks/bench_products.py [--models smollm2 gemma3] [--tokens 1 2 4 8 16 24 32 48] [--runs 5] [--threads 1]

"blocks": every matrix multiplied from its blocks (sources.products; Weights.products_for forced on); "BLAS": each layer
dequantized to float32, then BLAS (forced off), as an unheld model's pass runs. The text: the first n tokens of
tests/fixtures/long-document.txt. The two alternate, --runs times each; the medians are printed, with their ratio and
the largest n at which the blocks are faster: attn's FEW_ROWS (models/sources/products.py) is chosen from it.

It clears OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for itself and prints the BLAS kernel and the products' build.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

CLEARED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(k in os.environ for k in CLEARED):  # before NumPy loads OpenBLAS: it reads them once, at load
    os.execve(sys.executable, [sys.executable, *sys.argv], {k: v for k, v in os.environ.items() if k not in CLEARED})

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import checkpoints  # noqa: E402
from tests.benchmarks.bench_threads import kernel  # noqa: E402
from tests.long_text import long_text  # noqa: E402

MODELS = {"smollm2": checkpoints.smollm2_gguf, "gemma3": checkpoints.gemma3_gguf}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--tokens", nargs="+", type=int, default=[1, 2, 4, 8, 16, 24, 32, 48])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    from attn_cli.io import blas
    from attn_cli.models.loading import load
    from attn_cli.models.points import Keep
    from attn_cli.models.sources import products

    blas.choose(args.threads)
    print(f"BLAS: {kernel()}; products: {products.kernel()}; {args.threads} thread(s); load average {os.getloadavg()[0]:.1f}")
    for name in args.models:
        model = load(str(MODELS[name]()))
        ids = model.tokenize(long_text(model, max(args.tokens) + 8)).ids
        keep = Keep(points=("resid_post",), layers=[model.n_layers - 1], rows=[-1])
        print(f"\n{name}: one pass of n tokens, median of {args.runs} (ms)\n{'n':>4} {'blocks':>9} {'BLAS':>9} {'blocks/BLAS':>12}")
        faster = 0
        for n in args.tokens:
            times = {"blocks": [], "BLAS": []}
            for _ in range(args.runs):
                for way, few in (("blocks", 1 << 30), ("BLAS", 0)):
                    products.FEW_ROWS = few
                    start = time.perf_counter()
                    model.forward(ids[:n], keep=keep)
                    times[way].append(time.perf_counter() - start)
            b, d = (1e3 * statistics.median(times[w]) for w in ("blocks", "BLAS"))
            faster = n if b < d and faster == n_before(args.tokens, n) else faster
            print(f"{n:>4} {b:>9.1f} {d:>9.1f} {b / d:>11.2f}x")
        print(f"blocks are faster up to n = {faster} (attn's FEW_ROWS: the products serve passes of up to that many rows)")


def n_before(sizes: list[int], n: int) -> int:
    i = sizes.index(n)
    return 0 if i == 0 else sizes[i - 1]


if __name__ == "__main__":
    main()
