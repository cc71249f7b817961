"""How fast `attn` starts and loads its vectors, against floors measured in the same run.

Run by hand (not a test):  python tests/benchmarks/bench_vectors.py [--runs 10] [--text-runs 3]

(a) cold start of `attn vectors info` (a new process each time) vs `python -c "import numpy"`;
(b) loading the shipped GloVe 6B 50d (100,000 keys x 50) with attn_cli.vectors.load vs gensim's
    KeyedVectors.load_word2vec_format on the same keys, written first as word2vec text and binary.
All figures are medians.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BIN = Path(sys.executable).parent


def median_seconds(action, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def process(*argv: str):
    return lambda: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def row(label: str, seconds: float, floor: float | None = None, floor_name: str = "") -> None:
    ratio = f"  {seconds / floor:7.2f} x {floor_name}" if floor else ""
    print(f"  {label:<46} {seconds * 1000:9.1f} ms{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per fast measurement")
    parser.add_argument("--text-runs", type=int, default=3, help="runs of gensim's (slow) text reader")
    args = parser.parse_args()

    print(f"(a) cold start, median of {args.runs} new processes")
    numpy_floor = median_seconds(process(sys.executable, "-c", "import numpy"), args.runs)
    info = median_seconds(process(str(BIN / "attn"), "vectors", "info", "--json"), args.runs)
    gensim_import = median_seconds(process(sys.executable, "-c", "import gensim"), max(3, args.runs // 3))
    row('python -c "import numpy" (floor)', numpy_floor)
    row("attn vectors info --json", info, numpy_floor, "floor")
    row('python -c "import gensim" (for scale)', gensim_import, numpy_floor, "floor")

    from gensim.models import KeyedVectors

    from attn_cli.vectors.loading import load

    glove = load()
    matrix = np.asarray(glove.vectors)
    print(f"\n(b) loading the default vectors ({len(glove):,} keys x {glove.vector_size}), in-process, gensim already imported")
    attn_load = median_seconds(load, args.runs)
    attn_lookup = median_seconds(lambda: load().get_vector("verdant"), args.runs)
    row("attn_cli.vectors.loading.load()", attn_load)
    row("attn_cli.vectors.loading.load() + first lookup", attn_lookup)

    with tempfile.TemporaryDirectory() as tmp:
        kv = KeyedVectors(glove.vector_size)
        kv.add_vectors(glove.index_to_key, matrix)
        text, binary = Path(tmp) / "glove.w2v.txt", Path(tmp) / "glove.w2v.bin"
        kv.save_word2vec_format(str(text))
        kv.save_word2vec_format(str(binary), binary=True)
        gensim_bin = median_seconds(lambda: KeyedVectors.load_word2vec_format(str(binary), binary=True), args.runs)
        gensim_text = median_seconds(lambda: KeyedVectors.load_word2vec_format(str(text)), args.text_runs)
        loaded = KeyedVectors.load_word2vec_format(str(binary), binary=True)
        assert loaded.index_to_key == glove.index_to_key and np.array_equal(loaded.vectors, matrix)
    row("gensim load_word2vec_format, binary", gensim_bin, attn_lookup, "attn (load + lookup)")
    row(f"gensim load_word2vec_format, text (median of {args.text_runs})", gensim_text, attn_lookup, "attn (load + lookup)")


if __name__ == "__main__":
    main()
