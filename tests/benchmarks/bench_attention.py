"""How fast attn's attention and `inspect --json` are, against PyTorch and floors measured in the same run.

1. Attention, warm, one process per side: attn's `multi_head(E, heads, causal mask, parts=True)` (Q, K,
   V, scores, scaling, mask, softmax, weights V, the Delta E split into self and context parts, the
   heads' updates summed) against PyTorch's `torch.nn.functional.scaled_dot_product_attention` with
   its own Q, K, V products and the heads summed, both in float32 on CPU. One head and two heads,
   n = 64, 512, 2048; E = GloVe word vectors + positions (d = 50), random heads with d_k = 16,
   W_V [50, 50]. Each side runs in its own long-lived worker with the same thread count
   (OMP/OPENBLAS/MKL_NUM_THREADS and torch.set_num_threads); runs alternate between the sides.
   Target: <= 1.0x. Also checked in the same run: attn's weights rows sum to 1 within 1e-6,
   masked weights are exactly 0, the weights agree with attn's float64 reference within 1e-5, and
   both sides' Delta E agree.
2. `attn inspect "<512 words>" --json` against `--jsonl` (the same numbers, not indented). Target <= 1.2x.
3. Peak RSS of `attn inspect "<4096 words>" --json --max-tokens 4096` (stdout to /dev/null), against
   the floor: a process that computes the same result (inspect_text) and writes nothing.
   Target <= 1.5 GB.

Every figure is a median of --runs runs (default 7), interleaved round by round. What else the
(2-core) machine is doing is not controlled: the load average is printed before and after.
The peer is a separate venv (default /work/fixture-venv) with torch; PyTorch is not a dependency
of attn. If it is missing, the peer rows are skipped and said so.

Run by hand:  python tests/benchmarks/bench_attention.py [--runs 7] [--threads 2] [--peer-python PATH] [--skip-json]
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from attn_cli.core.blocks import POSITION_SCALE, positional_encoding  # noqa: E402
from attn_cli.heads.registry import random_head  # noqa: E402
from attn_cli.vectors.loading import load  # noqa: E402
from tests.benchmarks.peer import Worker, show  # noqa: E402

ATTN = str(Path(sys.executable).parent / "attn")
PEER_DEFAULT = "/work/fixture-venv/bin/python"
SIZES = (64, 512, 2048)
HEADS = (1, 2)
D_K = 16
JSON_TOKENS, RSS_TOKENS = 512, 4096
RSS_TARGET_MB = 1500
MB = 1e6

# One worker per side. Reads one JSON command a line on stdin, answers one JSON line on stdout.
WORKER = r'''
import json, sys, time
side, data_file, threads, repo = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
import numpy as np
data = np.load(data_file)
e_all = data["e"]  # [n_max, d] float32
heads = [(data[f"q{h}"], data[f"k{h}"], data[f"v{h}"]) for h in range(int(data["count"]))]  # float32 each
info = {"python": sys.executable, "numpy": np.__version__}
if side == "attn":
    sys.path.insert(0, repo)
    from attn_cli.core import attention
    from attn_cli.core.attention import Head, causal_mask, multi_head
    info["attn_cli"] = attention.__file__

    def prepare(n, h):
        return e_all[:n], [Head(f"h{i}", *heads[i]) for i in range(h)], causal_mask(n)  # the mask made once, as inspect caches it

    def call(x):
        return multi_head(*x, parts=True)

    def delta(x):
        return call(x)[1]

    def exactness(x):
        """Max |row sum - 1|, max |masked weight|, max |weights - float64 reference|."""
        e, hs, mask = x
        outs = call(x)[0]
        ref = multi_head(e.astype(np.float64), [Head(h.name, *(w.astype(np.float64) for w in (h.w_q, h.w_k, h.w_v))) for h in hs], mask)[0]
        return {"dtype": str(outs[0].weights.dtype),
                "row_sum": max(float(np.max(np.abs(o.weights.sum(axis=1, dtype=np.float64) - 1))) for o in outs),
                "masked": max(float(np.max(np.abs(o.weights[~mask]))) for o in outs),
                "reference": max(float(np.max(np.abs(o.weights - r.weights))) for o, r in zip(outs, ref))}
else:
    import torch
    torch.set_num_threads(threads)
    info |= {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def prepare(n, h):
        cat = lambda i: torch.from_numpy(np.concatenate([heads[j][i] for j in range(h)], axis=1))  # [d, h * width]
        return torch.from_numpy(np.ascontiguousarray(e_all[:n])), cat(0), cat(1), cat(2), h

    def call(x):
        e, w_q, w_k, w_v, h = x
        n = e.shape[0]
        with torch.inference_mode():
            q = (e @ w_q).view(n, h, -1).transpose(0, 1)  # [h, n, d_k]
            k = (e @ w_k).view(n, h, -1).transpose(0, 1)
            v = (e @ w_v).view(n, h, -1).transpose(0, 1)  # [h, n, d_v]
            return sdpa(q, k, v, is_causal=True).sum(0)  # [n, d_v]: the heads' updates added up

    def delta(x):
        return call(x).numpy()

    def exactness(x):
        return None

print(json.dumps({"ready": info}), flush=True)
inputs = {}
for line in sys.stdin:
    cmd = json.loads(line)
    key = f"{cmd.get('n')}/{cmd.get('h')}"
    if cmd["op"] == "setup":  # warm up; one call's time, Delta E and (attn) the exactness figures
        inputs[key] = x = prepare(cmd["n"], cmd["h"])
        for _ in range(3):
            call(x)
        start = time.perf_counter()
        call(x)
        single = time.perf_counter() - start
        print(json.dumps({"single": single, "delta": np.asarray(delta(x), dtype=float).tolist(), "exact": exactness(x)}), flush=True)
    elif cmd["op"] == "time":
        x, reps = inputs[key], cmd["reps"]
        start = time.perf_counter()
        for _ in range(reps):
            call(x)
        print(json.dumps({"per_call": (time.perf_counter() - start) / reps}), flush=True)
    else:
        break
'''

# ru_maxrss of RUSAGE_CHILDREN is the largest of all waited-for children: a fresh wrapper has exactly one.
RSS_WRAPPER = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"  # KiB on Linux
)

# The floor of 3: what `inspect` computes for the sentence in the file named first, and no JSON.
COMPUTE_ONLY = r"""
import sys
from attn_cli.heads.registry import default_heads
from attn_cli.analysis.inspect import inspect_text
from attn_cli.models.glove import Settings
from attn_cli.vectors.loading import load
vectors = load()
text = open(sys.argv[1], encoding="utf-8").read()
result = inspect_text(text, vectors, default_heads(vectors.vector_size)[0], Settings(max_tokens=int(sys.argv[2])))
"""




def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def row(label: str, value: str, ratios: str = "", cmd: str = "") -> None:
    print(f"  {label:<44} {value:>10}  {ratios}")
    if cmd:
        print(f"      $ {cmd}")


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def peer_status(peer: str) -> tuple[bool, str]:
    """(usable, why not or its versions)."""
    if not Path(peer).is_file():
        return False, f"no peer python at {peer}"
    done = subprocess.run([peer, "-c", "import numpy, torch; print(numpy.__version__, torch.__version__)"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return False, f"{peer} cannot import numpy and torch: {done.stderr.strip().splitlines()[-1:]}"
    numpy_v, torch_v = done.stdout.split()
    return True, f"numpy {numpy_v}, torch {torch_v}"



def glove_words(count: int, seed: int = 0) -> list[str]:
    """`count` frequent GloVe keys made of letters only (each one token), drawn with a fixed seed."""
    vectors = load()
    words = [w for w in vectors.index_to_key[:20000] if w.isalpha()]
    return random.Random(seed).choices(words, k=count)


def write_data(path: Path, n_max: int) -> None:
    """E [n_max, 50] (GloVe words + positions, as inspect builds it) and the heads, float32, for both workers."""
    vectors = load()
    words = np.array([vectors.get_vector(w) for w in glove_words(n_max, seed=1)], dtype=np.float64)
    e = (words + positional_encoding(n_max, words.shape[1], POSITION_SCALE)).astype(np.float32)
    arrays = {"e": e, "count": np.array(max(HEADS))}
    for h in range(max(HEADS)):
        head = random_head(words.shape[1], seed=h, d_k=D_K)
        arrays |= {f"q{h}": head.w_q.astype(np.float32), f"k{h}": head.w_k.astype(np.float32), f"v{h}": head.w_v.astype(np.float32)}
    np.savez(path, **arrays)


def attention(args, peer_ok: bool, tmp: Path) -> None:
    script, data = tmp / "attention_worker.py", tmp / "data.npz"
    script.write_text(WORKER)
    write_data(data, max(args.sizes))
    attn = Worker(sys.executable, script, ["attn", data, args.threads, REPO], args.threads)
    peer = Worker(args.peer_python, script, ["torch", data, args.threads, REPO], args.threads) if peer_ok else None
    try:
        print(f"\n1. attention, warm, one process per side; median of {args.runs} runs, each run R calls back to back")
        print(f"   threads: {args.threads} (OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = MKL_NUM_THREADS = {args.threads} in both workers"
              f"{', torch.set_num_threads(%d)' % args.threads if peer else ''})")
        print(f"   attn : {attn.info['python']}  numpy {attn.info['numpy']}, {attn.info['attn_cli']}")
        print("          outs, delta, e_prime, own, context = multi_head(E, heads, causal_mask(n), parts=True)")
        if peer:
            print(f"   torch: {peer.info['python']}  numpy {peer.info['numpy']}, torch {peer.info['torch']} (threads {peer.info['torch_threads']})")
            print("          with torch.inference_mode(): Q, K, V = E W_Q, E W_K, E W_V; scaled_dot_product_attention(Q, K, V, is_causal=True).sum(0)")
        else:
            print(f"   peer skipped: {args.peer_reason}")
        print(f"   E: {max(args.sizes)} GloVe words (seeded) + positions, float32, cut to n; heads: random_head(50, seed, d_k={D_K}), W_V [50, 50]")
        print(f"   workers: $ {show(attn.cmd)}")
        if peer:
            print(f"            $ {show(peer.cmd)}")
        for n in args.sizes:
            for h in HEADS:
                a_setup = attn.ask(op="setup", n=n, h=h)
                t_setup = peer.ask(op="setup", n=n, h=h) if peer else None
                fastest = min(a_setup["single"], t_setup["single"]) if peer else a_setup["single"]
                reps = max(3, int(args.run_seconds / max(fastest, 1e-6)) + 1)
                a_times, t_times = [], []
                for r in range(args.runs):  # alternate who goes first; a pause so the other side's threads stop spinning
                    order = [(attn, a_times), (peer, t_times)] if r % 2 == 0 else [(peer, t_times), (attn, a_times)]
                    for worker, times in order:
                        if worker is not None:
                            time.sleep(0.3)
                            times.append(worker.ask(op="time", n=n, h=h, reps=reps)["per_call"])
                a = statistics.median(a_times)
                label = f"n = {n:>4}, {h} head{'s' if h > 1 else ' '}: attn (R = {reps})"
                x = a_setup["exact"]
                exact = (f"      attn {x['dtype']}: max |row sum - 1| {x['row_sum']:.1e}, max masked weight {x['masked']:.0e}, "
                         f"max |w - float64 reference| {x['reference']:.1e}  "
                         f"({verdict(x['row_sum'] <= 1e-6 and x['masked'] == 0 and x['reference'] <= 1e-5)})")
                if peer:
                    t = statistics.median(t_times)
                    row(label, f"{a * 1000:.3f} ms", f"{a / t:5.2f}x torch  (target <= 1.0x: {verdict(a <= t)})")
                    row(f"n = {n:>4}, {h} head{'s' if h > 1 else ' '}: torch SDPA", f"{t * 1000:.3f} ms")
                    diff = float(np.max(np.abs(np.array(a_setup["delta"]) - np.array(t_setup["delta"]))))
                    print(exact + f"; Delta E max |attn - torch| {diff:.1e}")
                else:
                    row(label, f"{a * 1000:.3f} ms", "(no peer)")
                    print(exact)
    finally:
        attn.close()
        if peer:
            peer.close()


def run_seconds(cmd: list[str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {show(cmd)}\n{done.stderr.decode()[-800:]}")
    return seconds, done.stdout


def peak_rss_mb(cmd: list[str]) -> tuple[float, float]:
    """(peak RSS in MB, seconds) of `cmd` with its output thrown away."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", RSS_WRAPPER, *cmd], capture_output=True, text=True, check=True).stdout
    return int(out.strip()) * 1024 / MB, time.perf_counter() - start


def json_figures(args, tmp: Path) -> None:
    sentence = " ".join(glove_words(JSON_TOKENS))
    # --neighbors 0: what is timed is the attention and its JSON, not the nearest-key search
    json_cmd, jsonl_cmd = [ATTN, "inspect", sentence, "--json", "--neighbors", "0"], [ATTN, "inspect", sentence, "--jsonl", "--neighbors", "0"]
    run_seconds(json_cmd)  # page cache
    times: dict[str, list[float]] = {"json": [], "jsonl": []}
    outputs = {}
    for r in range(args.runs):
        for key, cmd in ((("json", json_cmd), ("jsonl", jsonl_cmd)) if r % 2 == 0 else (("jsonl", jsonl_cmd), ("json", json_cmd))):
            seconds, outputs[key] = run_seconds(cmd)
            times[key].append(seconds)
    j, jl = statistics.median(times["json"]), statistics.median(times["jsonl"])
    same = json.loads(outputs["json"]) == json.loads(outputs["jsonl"])
    print(f"\n2. inspect --json against --jsonl, {JSON_TOKENS} tokens (seeded GloVe words), default heads; median of {args.runs} new processes each")
    row("attn inspect <512 words> --json", f"{j * 1000:.0f} ms", f"{j / jl:5.2f}x --jsonl  (target <= 1.2x: {verdict(j / jl <= 1.2)})", show(json_cmd))
    row("attn inspect <512 words> --jsonl", f"{jl * 1000:.0f} ms", "", show(jsonl_cmd))
    print(f"      same content (parsed): {'yes' if same else 'NO'}; sizes {len(outputs['json']) / MB:.1f} MB (indented) and {len(outputs['jsonl']) / MB:.1f} MB")

    text = tmp / "long.txt"
    text.write_text(" ".join(glove_words(RSS_TOKENS)), encoding="utf-8")
    big_cmd = [ATTN, "inspect", text.read_text(), "--json", "--max-tokens", str(RSS_TOKENS), "--neighbors", "0"]
    floor_cmd = [sys.executable, "-c", COMPUTE_ONLY, str(text), str(RSS_TOKENS)]
    rss: dict[str, list[float]] = {"json": [], "floor": []}
    secs: dict[str, list[float]] = {"json": [], "floor": []}
    for _ in range(args.rss_runs):
        for key, cmd in (("json", big_cmd), ("floor", floor_cmd)):
            mb, s = peak_rss_mb(cmd)
            rss[key].append(mb)
            secs[key].append(s)
    big, floor = statistics.median(rss["json"]), statistics.median(rss["floor"])
    print(f"\n3. peak RSS (ru_maxrss of the one child of a fresh wrapper), {RSS_TOKENS} tokens, median of {args.rss_runs}")
    row(f"attn inspect <{RSS_TOKENS} words> --json", f"{big:.0f} MB",
        f"{big / floor:5.2f}x floor  (target <= {RSS_TARGET_MB} MB: {verdict(big <= RSS_TARGET_MB)}); {statistics.median(secs['json']):.1f} s",
        show(big_cmd) + " > /dev/null")
    row("floor: inspect_text only, no JSON", f"{floor:.0f} MB", f"{statistics.median(secs['floor']):.1f} s", show(floor_cmd[:2] + ["<compute only>"] + floor_cmd[3:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of everything; medians are reported")
    parser.add_argument("--rss-runs", type=int, default=3, help="runs of the n = 4096 peak-RSS rows")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads for both sides of 1. (default: all cores)")
    parser.add_argument("--peer-python", default=PEER_DEFAULT, help="a python with torch")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="n for 1.")
    parser.add_argument("--run-seconds", type=float, default=0.1, help="length of one timed run (R calls) for the faster side")
    parser.add_argument("--skip-json", action="store_true", help="only 1.")
    parser.add_argument("--skip-attention", action="store_true", help="only 2. and 3.")
    args = parser.parse_args()

    began = time.perf_counter()
    peer_ok, args.peer_reason = peer_status(args.peer_python)
    print(f"bench_attention: {os.cpu_count()} cores; load average at start {loadavg()}; nothing else on the machine is controlled")
    print(f"attn: {ATTN} (python {sys.executable})")
    print(f"peer: {args.peer_python} ({args.peer_reason})" if peer_ok else f"peer: SKIPPED, {args.peer_reason}; the torch rows are left out")
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_attention:
            attention(args, peer_ok, Path(tmp))
        if not args.skip_json:
            json_figures(args, Path(tmp))
    print(f"\nload average at end {loadavg()}; took {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
