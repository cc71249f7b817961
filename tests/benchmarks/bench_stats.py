"""`attn heads stats` on a corpus of 10,000 sentences: throughput, peak RSS, and a two-worker Dask run against one process.

Run by hand:  PYTHONPATH=. python tests/benchmarks/bench_stats.py [--sentences 10000] [--model PATH] [--floor 500]

The corpus is made in a scratch folder (never committed): every sentence of data/heads/*/*.tsv and
data/links/*.tsv (their first column, once each), repeated in a seeded shuffle to --sentences lines.
Measured in one run, each a new process:
1. `attn heads stats CORPUS --model M --json` under /usr/bin/time -v, with one BLAS thread and with
   two (--threads): wall time, sentences a second, peak RSS ("Maximum resident set size");
2. the floor: the forward passes alone (attn_cli.api.trace) over the first --floor sentences, one
   BLAS thread, in a process of its own, against api.head_stats (what the command runs) over the
   same sentences, 25 at a time in turn: the ratio is the cost of the figures on top of the model;
3. the documented Dask example (docs/heads-stats.md) on a LocalCluster of two worker processes with
   one thread each, the corpus as two files: wall time from the start of the process (cluster, the
   model loaded in each worker, the figures), and its figures compared with the command's: they
   must be identical (exit 1 otherwise).
The model is all-MiniLM-L6-v2 (tests/checkpoints.py) unless --model says otherwise.
"""

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FLOOR = r'''
import sys, time
from attn_cli import api
model = api.load_model(sys.argv[1])
lines = [l.rstrip("\n") for l in open(sys.argv[2], encoding="utf-8")][: int(sys.argv[3])]
api.trace(model, lines[0])
alone = figures = 0.0
for start in range(0, len(lines), 25):  # interleaved a block at a time, so that a change of load falls on both
    block = lines[start : start + 25]
    t0 = time.perf_counter()
    for line in block:
        api.trace(model, line)
    t1 = time.perf_counter()
    api.head_stats(model, block)
    alone, figures = alone + t1 - t0, figures + time.perf_counter() - t1
print(alone / len(lines), figures / len(lines))
'''

DASK = r'''
import json, re, sys, time
start = time.perf_counter()
from dask.distributed import Client, LocalCluster
page = open(sys.argv[1], encoding="utf-8").read()
example = {"__name__": "__main__"}
exec(re.search(r"<!-- tested by tests/test_stats.py -->\s*```python\n(.*?)```", page, re.S)[1], example)
with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster):
    stats = example["heads_stats_on_dask"](sys.argv[3:], sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - start, "figures": stats.to_dict()}))
'''


def corpus_sentences() -> list[str]:
    found: dict[str, None] = {}
    for path in sorted([*ROOT.glob("data/heads/*/*.tsv"), *ROOT.glob("data/links/*.tsv")]):
        for line in path.read_text(encoding="utf-8").splitlines():
            first = line.split("\t")[0].strip()
            if first and not first.startswith("#") and first.lower() != "sentence" and " " in first:
                found[first] = None
    return list(found)


def make_corpus(folder: Path, n: int) -> tuple[Path, list[Path]]:
    base = corpus_sentences()
    rng = random.Random(0)
    lines = []
    while len(lines) < n:
        batch = base[:]
        rng.shuffle(batch)
        lines += batch
    lines = lines[:n]
    whole = folder / "corpus.txt"
    whole.write_text("\n".join(lines) + "\n", encoding="utf-8")
    halves = [folder / "part-1.txt", folder / "part-2.txt"]
    halves[0].write_text("\n".join(lines[: n // 2]) + "\n", encoding="utf-8")
    halves[1].write_text("\n".join(lines[n // 2 :]) + "\n", encoding="utf-8")
    print(f"corpus: {n:,} lines from {len(base):,} distinct sentences of data/heads and data/links ({whole.stat().st_size / 1e6:.1f} MB)")
    return whole, halves


def timed_command(cmd: list, threads: int) -> tuple[float, float, str]:
    """(seconds, peak RSS MiB from /usr/bin/time -v, stdout)."""
    env = {"OPENBLAS_NUM_THREADS": str(threads), "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"}
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *map(str, cmd)], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed: {done.stderr[-800:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)[1]) / 1024
    return seconds, rss, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=10_000)
    parser.add_argument("--floor", type=int, default=500, help="sentences the forward-pass floor is timed on")
    parser.add_argument("--model", type=Path)
    parser.add_argument("--threads", default="1,2", help="BLAS thread counts of the one-process runs (1 must be among them)")
    args = parser.parse_args()
    if args.model is None:
        from tests.checkpoints import minilm_folder

        args.model = minilm_folder()
    attn = Path(sys.executable).parent / "attn"
    with tempfile.TemporaryDirectory(prefix="attn-bench-stats-") as scratch:
        whole, halves = make_corpus(Path(scratch), args.sentences)
        figures = {}
        counts = [int(t) for t in args.threads.split(",")]
        if 1 not in counts:
            raise SystemExit("--threads must include 1: the Dask workers run one thread each")
        for threads in counts:
            seconds, rss, out = timed_command([attn, "heads", "stats", whole, "--model", args.model, "--json"], threads)
            figures[threads] = json.loads(out)
            tokens = figures[threads]["queries"]
            print(f"heads stats, one process, {threads} BLAS thread{'s' if threads > 1 else ''}: {seconds:7.1f} s, "
                  f"{args.sentences / seconds:6.1f} sentences/s ({tokens / seconds:,.0f} tokens/s), peak RSS {rss:5.0f} MiB")
            if threads == 1:
                one_thread = seconds
        floor, stats = map(float, subprocess.run([sys.executable, "-c", FLOOR, str(args.model), str(whole), str(args.floor)], capture_output=True,
                                     text=True, check=True, env={"OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}).stdout.split())
        print(f"floor, the forward passes alone (1 thread, the first {args.floor} sentences, in one process): {floor * 1e3:.1f} ms a sentence; "
              f"api.head_stats on the same sentences {stats * 1e3:.1f} ms, {stats / floor:.2f}x the floor")
        done = subprocess.run([sys.executable, "-c", DASK, str(ROOT / "docs" / "heads-stats.md"), str(args.model), *map(str, halves)],
                              capture_output=True, text=True, env={"OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
                                                                   "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"})
        if done.returncode != 0:
            raise SystemExit(f"the Dask run failed: {done.stderr[-800:]}")
        dask = json.loads(done.stdout.splitlines()[-1])
        same = dask["figures"] == figures[1]
        if any(figures[t] != figures[1] for t in counts):  # another BLAS thread count may round a product differently: said, not hidden
            print("note: with more BLAS threads the command's figures differ from those with 1 in the last digits")
        print(f"Dask, 2 worker processes x 1 thread, 2 files: {dask['seconds']:7.1f} s, {args.sentences / dask['seconds']:6.1f} sentences/s, "
              f"{one_thread / dask['seconds']:.2f}x one process with 1 thread; figures {'identical' if same else 'DIFFERENT'} "
              "to the command's with 1 thread (every number of its JSON)")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
