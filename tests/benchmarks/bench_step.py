"""Where one generation step's time goes: a step of one token on a real quantized checkpoint, split into the matrix
products of the layers, the output head, attention, norms and the rest, per layer; and the function calls a layer makes.

    python tests/benchmarks/bench_step.py [--models smollm2 gemma3] [--steps 40] [--threads 1] [--before DIR]

The step is generate's (attn_cli.analysis.generate): the new token's pass over the KV cache, keeping every layer's
attention row as the views need it and the last stream, then the logits. The split times the outermost call of each
part (core.blocks.apply_linear: the layers' products; Readout.logits: the head; core.blocked.attend_rows: attention;
Transformer.norm: norms), medians over --steps steps after 3 warm ones. --before DIR runs the same measurement on
another checkout of attn (a `git worktree` of an older revision, its C modules built) in its own process, for a
before/after table. Function calls: cProfile's count over 10 steps (Python functions and NumPy's C functions it sees).

It clears OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for itself and prints the BLAS kernel and the products' build.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CLEARED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(k in os.environ for k in CLEARED):  # before NumPy loads OpenBLAS: it reads them once, at load
    os.execve(sys.executable, [sys.executable, *sys.argv], {k: v for k, v in os.environ.items() if k not in CLEARED})

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "The capital of France is Paris, and the capital of Germany is"
PARTS = ("layer products", "head", "attention", "norms")

MEASURE = r'''
import cProfile, json, statistics, sys, time
import numpy as np
from attn_cli.core import blocked, blocks
from attn_cli.io import blas
from attn_cli.models import readout, transformer
from attn_cli.models.cache import KVCache
from attn_cli.models.loading import load
from attn_cli.models.points import Keep
path, steps, threads, prompt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
blas.choose(threads)
spent, depth = {}, [0]
def timed(part, f):
    def g(*a, **k):
        depth[0] += 1
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                spent[part] = spent.get(part, 0.0) + time.perf_counter() - t
    return g
blocks.apply_linear = timed("layer products", blocks.apply_linear)
transformer.apply_linear = blocks.apply_linear
transformer.attend_rows = timed("attention", blocked.attend_rows)
readout.Readout.logits = timed("head", readout.Readout.logits)
transformer.Transformer.norm = timed("norms", transformer.Transformer.norm)
model = load(path)
from attn_cli.analysis.generate import HOLD_BYTES
hold = model.weights.hold
hold(HOLD_BYTES, **({"rows": 1} if "rows" in hold.__code__.co_varnames else {}))
cache = KVCache(model)
keep = Keep(points=("attn.pattern", "resid_post"), rows=[-1])
ids = model.tokenize(prompt).ids
model.forward(ids, keep=keep, cache=cache)
token = [ids[-1]]
def step():
    trace = model.forward(token, keep=keep, cache=cache)
    token[0] = int(np.argmax(model.readout(trace.get("resid_post", model.n_layers - 1)[-1:])[0]))
rows = []
for i in range(steps + 3):
    spent.clear()
    t = time.perf_counter()
    step()
    if i >= 3:
        rows.append({"step": time.perf_counter() - t, **spent})
profile = cProfile.Profile()
profile.enable()
for _ in range(10):
    step()
profile.disable()
import pstats
calls = sum(v[1] for v in pstats.Stats(profile).stats.values()) / 10
out = {"layers": model.n_layers, "calls_per_layer": calls / model.n_layers}
for key in ("step", "layer products", "head", "attention", "norms"):
    out[key] = statistics.median(r.get(key, 0.0) for r in rows)
print(json.dumps(out))
'''


def measure(checkout: Path, path: Path, steps: int, threads: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED} | {"PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, "-c", MEASURE, str(path), str(steps), str(threads), PROMPT], capture_output=True, text=True, env=env,
                          cwd=str(checkout))
    if done.returncode:
        raise SystemExit(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(name: str, results: dict) -> None:
    print(f"\n{name}: one step of one token (median, ms), per layer where it says so")
    print(f"{'':>16}" + "".join(f"{label:>14}" for label in results))
    first = next(iter(results.values()))
    lines = [("step", lambda r: 1e3 * r["step"]), ("layer products", lambda r: 1e3 * r["layer products"]), ("head", lambda r: 1e3 * r["head"]),
             ("attention", lambda r: 1e3 * r["attention"]), ("norms", lambda r: 1e3 * r["norms"]),
             ("rest", lambda r: 1e3 * (r["step"] - sum(r[p] for p in PARTS))),
             ("rest / layer", lambda r: 1e3 * (r["step"] - sum(r[p] for p in PARTS)) / r["layers"]),
             ("calls / layer", lambda r: r["calls_per_layer"])]
    for label, value in lines:
        print(f"{label:>16}" + "".join(f"{value(r):>14.2f}" for r in results.values()))
    print(f"({first['layers']} layers)")


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from tests import checkpoints
    from tests.benchmarks.bench_threads import kernel

    models = {"smollm2": checkpoints.smollm2_gguf, "gemma3": checkpoints.gemma3_gguf}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(models), choices=list(models))
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--before", type=Path, help="another checkout of attn (its C modules built) to measure beside this one")
    args = parser.parse_args()
    from attn_cli.models.sources import products

    print(f"BLAS: {kernel()}; products: {products.kernel()}; {args.threads} thread(s); load average {os.getloadavg()[0]:.1f}")
    for name in args.models:
        path = models[name]()
        results = {}
        if args.before:
            results["before"] = measure(args.before.resolve(), path, args.steps, args.threads)
        results["this checkout"] = measure(ROOT, path, args.steps, args.threads)
        table(name, results)


if __name__ == "__main__":
    main()
