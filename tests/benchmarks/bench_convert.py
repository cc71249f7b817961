"""`attn vectors convert` of the full GloVe 6B 50d text (400,000 keys x 50, 171 MB) against gensim's
`KeyedVectors.load_word2vec_format(path, no_header=True)` on the same file, in the same run.

Run by hand:  PYTHONPATH=. python tests/benchmarks/bench_convert.py [--runs 1]

Targets: attn >= 5x faster than gensim; attn's peak RSS <= 1.5x the size of the
folder it writes. attn is timed as a whole new process (start-up, parsing, writing, fsync);
gensim only for its load call, in a process of its own (its import excluded), which favours gensim.
The text file is built once from the pinned wheel (tests/benchmarks/glove400k.py).
The converted folder is checked against gensim's keys and values (equal float32).
"""

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from glove400k import text_file  # noqa: E402
from runs import measured  # noqa: E402

GENSIM = r"""
import json, sys, time
import numpy as np
from gensim.models import KeyedVectors
start = time.perf_counter()
kv = KeyedVectors.load_word2vec_format(sys.argv[1], no_header=True)
seconds = time.perf_counter() - start
ours = np.load(sys.argv[2] + "/vectors.npy", mmap_mode="r")
keys = open(sys.argv[2] + "/keys.txt", encoding="utf-8").read().split("\n")[:-1]
same = keys == kv.index_to_key and np.array_equal(ours, kv.vectors)
print(json.dumps({"seconds": seconds, "same": bool(same)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    source = text_file()
    py = sys.executable
    ours, ours_mib, theirs = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "glove400k"
        script = Path(tmp) / "gensim_load.py"
        script.write_text(GENSIM)
        for _ in range(args.runs):
            shutil.rmtree(out, ignore_errors=True)
            seconds, mib, _ = measured([py, "-m", "attn_cli", "vectors", "convert", source, out])
            ours.append(seconds)
            ours_mib.append(mib)
            theirs_run = json.loads(measured([py, script, source, out])[2])
            theirs.append(theirs_run["seconds"])
        written = sum(p.stat().st_size for p in out.iterdir())
    attn_s, gensim_s, mib = statistics.median(ours), statistics.median(theirs), statistics.median(ours_mib)
    print(f"{source} ({source.stat().st_size / 1e6:.0f} MB), median of {args.runs} run(s)")
    print(f"  attn vectors convert (whole process)          {attn_s:6.2f} s   peak RSS {mib:6.1f} MiB")
    print(f"  gensim load_word2vec_format(no_header=True)   {gensim_s:6.2f} s   (the call alone)")
    print(f"  speed-up {gensim_s / attn_s:.1f}x (target >= 5x)")
    print(f"  peak RSS / folder written ({written / 2**20:.1f} MiB): {mib * 2**20 / written:.2f}x (target <= 1.5x)")
    print(f"  same keys and float32 values as gensim: {'yes' if theirs_run['same'] else 'NO'}")


if __name__ == "__main__":
    main()
