"""How fast `attn inspect` is, against floors measured in the same run.

1. Streaming: 10,000 sentences (real GloVe words, fixed seed, 8-15 tokens) through
   `attn inspect - --jsonl`, against a standalone NumPy script (written to a temporary
   file) that does the same tokenisation, lookup, attention and JSON writing.
   Target: within 1.5x of the floor.
2. Cold start: `attn inspect "<the lesson's sentence>" --json` against `python -c "import numpy"`.
   Target: within 2x (medians of 10 runs).

Run by hand:  python tests/benchmarks/bench_inspect.py [--sentences N] [--head NAME ...]
"""

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from attn_cli.heads import registry as heads_module
from attn_cli.core.blocks import POSITION_SCALE
from attn_cli.vectors.tokens import QUOTES, TOKEN
from attn_cli.vectors.loading import load
from attn_cli.vectors.store import DEFAULT_VECTORS

LESSON = "A fluffy blue creature roamed the verdant forest."
ATTN = [str(Path(sys.executable).parent / "attn")]

FLOOR = r'''
import json, re, sys
import numpy as np

TOKEN = re.compile({pattern!r}, {flags})
QUOTES = {quotes!r}
folder, heads_file = sys.argv[1], sys.argv[2]
matrix = np.load(folder + "/vectors.npy", mmap_mode="r", allow_pickle=False)
with open(folder + "/keys.txt", encoding="utf-8") as f:
    index = {{k: i for i, k in enumerate(f.read().split("\n")) if k}}
stored = np.load(heads_file, allow_pickle=False)
def extra(key, h):
    return stored[f"{{key}}{{h}}"] if f"{{key}}{{h}}" in stored.files else None

heads = [(str(stored[f"name{{h}}"]), stored[f"q{{h}}"], stored[f"k{{h}}"], stored[f"v{{h}}"], extra("o", h), extra("b", h), extra("dist", h), extra("sink", h))
         for h in range(int(stored["count"]))]
n_max, d = 512, matrix.shape[1]
rate = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
angles = np.arange(n_max)[:, None] * rate
pe = np.zeros((n_max, d)); pe[:, 0::2] = np.sin(angles); pe[:, 1::2] = np.cos(angles[:, : d // 2]); pe *= {scale!r}
tens = np.array([float(10 ** i) for i in range(23)])

def rounded(a, digits):
    out = a.copy(); ok = np.isfinite(a) & (a != 0)
    dec = np.clip(digits - 1 - np.floor(np.log10(np.abs(a[ok]))), 0, 22).astype(np.int64)
    out[ok] = np.rint(a[ok] * tens[dec]) / tens[dec]
    return out

out = sys.stdout
for n_line, line in enumerate(sys.stdin, 1):
    tokens = TOKEN.findall(line.rstrip("\n").lower().translate(QUOTES))
    rows = [index.get(t) for t in tokens]
    if not tokens or None in rows:
        out.write(json.dumps({{"line": n_line, "error": "bad line"}}) + "\n"); continue
    n = len(tokens)
    e = np.asarray(matrix[rows], dtype=np.float64) + pe[:n]
    allowed = np.tril(np.ones((n, n), dtype=bool))
    delta = np.zeros_like(e); own = np.zeros_like(e); objs = []
    gap = np.arange(n)[:, None] - np.arange(n)[None, :]
    for name, w_q, w_k, w_v, w_o, b_q, dist, sink in heads:
        q = e @ w_q if b_q is None else e @ w_q + b_q
        s = q @ (e @ w_k).T / np.sqrt(w_q.shape[1])
        if dist is not None:
            s -= np.where(gap > 0, dist[0] * gap, np.where(gap < 0, -dist[1] * gap, dist[2]))
        s = np.where(allowed, s, -np.inf)
        top = s.max(axis=1, keepdims=True) if sink is None else np.maximum(s.max(axis=1, keepdims=True), sink)
        w = np.exp(s - top)
        w /= w.sum(axis=1, keepdims=True) + (0.0 if sink is None else np.exp(sink - top))
        v = e @ w_v
        dh, sh = w @ v, np.diag(w)[:, None] * v
        if w_o is not None:
            dh, sh = dh @ w_o, sh @ w_o
        delta += dh; own += sh
        norms = [rounded(np.linalg.norm(x, axis=1), 6).tolist() for x in (dh, dh - sh, sh)]
        objs.append({{"name": name, "d_k": w_q.shape[1], "weights": rounded(w, 7).tolist(),
                     "delta_norms": norms[0], "delta_context_norms": norms[1], "delta_self_norms": norms[2]}})
    ctx = delta - own
    cos = lambda a, b: np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    r = lambda x: rounded(x, 6).tolist()
    out.write(json.dumps({{"tokens": tokens, "mask": "causal", "position": True, "scaled": True, "heads": objs,
                          "delta_norms": r(np.linalg.norm(delta, axis=1)), "delta_context_norms": r(np.linalg.norm(ctx, axis=1)),
                          "delta_self_norms": r(np.linalg.norm(own, axis=1)), "input_norms": r(np.linalg.norm(e, axis=1)),
                          "cosines": r(cos(e, e + delta)), "context_cosines": r(cos(e, e + ctx))}}, ensure_ascii=False) + "\n")
'''


def sentences(count: int, seed: int = 0) -> list[str]:
    """Sentences of real, frequent GloVe words (letters only), 8-15 tokens, the last one a period."""
    vectors = load()
    words = [w for w in vectors.index_to_key[:20000] if w.isalpha()]
    rng = random.Random(seed)
    return [" ".join(rng.choices(words, k=rng.randint(7, 14))) + " ." for _ in range(count)]


def write_floor(folder: Path, specs: list[str]) -> tuple[Path, Path]:
    d = load().vector_size
    heads = [heads_module.resolve_head(s, d, 0) for s in specs]
    arrays = {"count": np.array(len(heads))}
    for h, head in enumerate(heads):
        arrays |= {f"name{h}": np.array(head.name), f"q{h}": head.w_q, f"k{h}": head.w_k, f"v{h}": head.w_v}
        if head.w_o is not None:
            arrays[f"o{h}"] = head.w_o
        for key, value in (("b", head.b_q), ("dist", head.distance), ("sink", head.sink)):
            if value is not None:
                arrays[f"{key}{h}"] = np.asarray(value)
    np.savez(folder / "heads.npz", **arrays)
    script = folder / "floor.py"
    script.write_text(FLOOR.format(pattern=TOKEN.pattern, flags=int(TOKEN.flags), quotes=QUOTES, scale=POSITION_SCALE))
    return script, folder / "heads.npz"


def timed(cmd: list[str], stdin_path: Path | None = None) -> tuple[float, bytes]:
    with open(stdin_path or "/dev/null", "rb") as stdin:
        start = time.perf_counter()
        done = subprocess.run(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} ... failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return seconds, done.stdout


def same_weights(ours: bytes, floor: bytes, lines: int = 200) -> str:
    """'yes', or where the first of `lines` output lines differ (a head file rewritten mid-run would show here)."""
    for n, (a, b) in enumerate(zip(ours.splitlines()[:lines], floor.splitlines()[:lines]), 1):
        x, y = json.loads(a), json.loads(b)
        if x.get("tokens") != y.get("tokens"):
            return f"no, line {n}: tokens or errors differ"
        for hx, hy in zip(x["heads"], y["heads"]):
            if not np.allclose(hx["weights"], hy["weights"], atol=1e-6):
                return f"no, line {n}: weights of head {hx['name']} differ"
    return f"yes (first {lines} lines, weights within 1e-6)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="streaming runs of each (best is kept)")
    parser.add_argument("--cold-runs", type=int, default=10)
    parser.add_argument("--head", action="append", help="heads to use (default: the shipped default heads, else identity)")
    args = parser.parse_args()
    specs = args.head or [h.name for h in heads_module.default_heads(load().vector_size)[0]]

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        text = folder / "sentences.txt"
        text.write_text("\n".join(sentences(args.sentences)) + "\n")
        script, heads_file = write_floor(folder, specs)
        head_args = [a for s in specs for a in ("--head", s)] + ["--neighbors", "0"]  # the floor searches no nearest keys
        ours_cmd = [*ATTN, "inspect", "-", "--jsonl", *head_args]
        floor_cmd = [sys.executable, str(script), str(DEFAULT_VECTORS), str(heads_file)]

        print(f"streaming {args.sentences:,} sentences, heads: {', '.join(specs)}")
        ours_times, floor_times = [], []
        for _ in range(args.runs):
            t, ours_out = timed(ours_cmd, text)
            ours_times.append(t)
            t, floor_out = timed(floor_cmd, text)
            floor_times.append(t)
        agree = same_weights(ours_out, floor_out)
        best_ours, best_floor = min(ours_times), min(floor_times)
        print(f"  attn inspect - --jsonl : {best_ours:6.2f} s  ({args.sentences / best_ours:,.0f} sentences/s)")
        print(f"  bare NumPy floor       : {best_floor:6.2f} s  ({args.sentences / best_floor:,.0f} sentences/s)")
        print(f"  ratio {best_ours / best_floor:.2f}x (target <= 1.5x); outputs agree: {agree}")

    # The imports alone show what the framework costs before `inspect` does anything.
    imports = "import attn_cli.cli\ntry:\n    import typer._adapters  # Typer >= 0.29 parses parameters with pydantic\nexcept ImportError:\n    pass"
    cold_ours, cold_floor, cold_imports = [], [], []
    for _ in range(args.cold_runs):
        cold_ours.append(timed([*ATTN, "inspect", LESSON, "--json", *head_args])[0])
        cold_floor.append(timed([sys.executable, "-c", "import numpy"])[0])
        cold_imports.append(timed([sys.executable, "-c", imports])[0])
    ours, floor, bare = (statistics.median(t) for t in (cold_ours, cold_floor, cold_imports))
    print(f"cold start, median of {args.cold_runs}:")
    print(f"  attn inspect '{LESSON}' --json : {ours * 1000:6.0f} ms")
    print(f"  python -c 'import numpy'       : {floor * 1000:6.0f} ms")
    print(f"  imports only (numpy, typer and what its parameter parsing loads, attn_cli): {bare * 1000:.0f} ms")
    print(f"  ratio {ours / floor:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()
