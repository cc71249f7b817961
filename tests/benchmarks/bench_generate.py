"""`attn generate` on SmolLM2-135M-Instruct against transformers' `generate`, in one run: tokens per second.

Run by hand (not a test), with a Python that has torch, transformers and accelerate (the fixtures' venv,
tests/fixtures/models/README.md) as the peer:

    python tests/benchmarks/bench_generate.py --peer-python /path/to/venv/bin/python [--runs 3] [--threads 1 2]

It clears OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for itself (a user's machine sets neither) and prints the BLAS
kernel NumPy runs. For each thread count, interleaved run by run (medians), each side in its own process with the
model loaded and warmed up (one short generation first):
1. 64 greedy tokens after a 14-token prompt: attn (KV cache, every new token's attention kept for the views) against
   transformers' `generate(do_sample=False, max_new_tokens=64)` on CPU, eager attention,
   float32, the same GGUF file dequantized; goal: attn >= 1.5x transformers' tokens per second;
2. the same loop in attn with no attention kept (the logits alone): what keeping it costs (goal <= 10%);
3. the KV cache's size at 1,000 tokens (the prompt and 64 steps, then the cache's formula at 1,000 positions,
   checked against a cache filled to 1,000 positions).
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

if any(os.environ.get(v) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):  # measure as a user's machine runs: re-exec without them
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
from tests import checkpoints  # noqa: E402

sys.path.insert(0, str(HERE))
from runs import answer  # noqa: E402

PROMPT = "Once upon a time, in a small village by the sea,"  # SmolLM2 writes 64 tokens after it without ending its turn
STEPS = 64

ATTN = """
import json, sys, time
import numpy as np
from attn_cli.models.loading import load
from attn_cli.analysis.generate import GenerateSettings, Generation, generate
from attn_cli.models.cache import KVCache
from attn_cli.models.points import Keep
m = load(sys.argv[1]); prompt, steps, runs = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def with_attention():
    run = Generation(m, prompt, GenerateSettings(steps=steps)); t = time.perf_counter(); n = sum(1 for _ in run)
    return n, time.perf_counter() - t, [s.id for s in run.steps], run.cache.nbytes(), run.cache.length
def logits_alone():  # the same loop keeping only the last stream, no attention
    ids = m.tokenize(prompt).ids; cache = KVCache(m); keep = Keep(points=("resid_post",), layers=[m.n_layers - 1], rows=[-1])
    m.weights.hold(3 << 30); t = time.perf_counter(); new = list(ids); out = []
    for _ in range(steps):
        trace = m.forward(new, keep=keep, cache=cache)
        logits = m.readout(trace.get("resid_post", m.n_layers - 1)[-1:])[0]
        new = [int(np.argmax(logits))]; out.append(new[0])
    return len(out), time.perf_counter() - t, out
with_attention()  # warm: weights dequantized and held, code paths run once
res = {"kept": [], "alone": []}
for _ in range(runs):
    n, dt, ids, cache_bytes, length = with_attention(); res["kept"].append(n / dt)
    n2, dt2, ids2 = logits_alone(); res["alone"].append(n2 / dt2)
assert ids == ids2, (ids, ids2)
cache = KVCache(m)
m.forward(m.tokenize(" ".join(["word"] * 1200)).ids[:1000], keep=Keep.nothing(), cache=cache)
res.update(ids=ids, cache_bytes=cache_bytes, cache_length=length, cache_1000=cache.nbytes(), cache_1000_length=cache.length)
try:  # threadpoolctl names the kernel OpenBLAS picked at run time; without it, what NumPy was built with
    from threadpoolctl import threadpool_info
    res["blas"] = [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}, {i.get('num_threads')} threads" for i in threadpool_info()]
except ImportError:
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    res["blas"] = [f"{blas.get('name')} {blas.get('version')} (pip install threadpoolctl to see the kernel)"]
print(json.dumps(res))
"""

PEER = """
import json, sys, time, torch, transformers
transformers.utils.logging.set_verbosity_error(); transformers.utils.logging.disable_progress_bar()
from transformers import AutoModelForCausalLM, AutoTokenizer
path = sys.argv[1]; folder, name = path.rsplit("/", 1); prompt, steps, runs = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(int(sys.argv[5]))
tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32, attn_implementation="eager").eval()
ids = torch.tensor([tok(prompt)["input_ids"]]); mask = torch.ones_like(ids)
def once():
    with torch.no_grad():
        t = time.perf_counter()
        out = model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=steps, pad_token_id=2)
        return out.shape[1] - ids.shape[1], time.perf_counter() - t, out[0, ids.shape[1]:].tolist()
once()
rates = []
for _ in range(runs):
    n, dt, new = once(); rates.append(n / dt)
print(json.dumps({"rates": rates, "ids": new}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True, help="a Python with torch, transformers and accelerate")
    parser.add_argument("--runs", type=int, default=3, help="timed generations a side, per process")
    parser.add_argument("--rounds", type=int, default=2, help="processes a side, alternating")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    gguf = str(checkpoints.smollm2_gguf())
    print(f"SmolLM2-135M-Instruct Q4_1 ({gguf}); {STEPS} greedy tokens after {PROMPT!r}")
    for threads in args.threads:
        ours, theirs = {"kept": [], "alone": []}, []
        for _ in range(args.rounds):  # alternate the processes: a slow spell of the machine falls on both
            a = answer(sys.executable, ATTN, [gguf, PROMPT, STEPS, args.runs], threads, str(ROOT))
            t = answer(args.peer_python, PEER, [gguf, PROMPT, STEPS, args.runs, threads], threads, None)
            ours["kept"] += a["kept"]
            ours["alone"] += a["alone"]
            theirs += t["rates"]
        kept, alone, peer = (statistics.median(x) for x in (ours["kept"], ours["alone"], theirs))
        same = a["ids"] == t["ids"]
        print(f"\n{threads} thread{'s' if threads > 1 else ''}; BLAS: {a['blas']}")
        print(f"  attn generate (attention kept)   {kept:7.1f} tokens/s")
        print(f"  attn, logits alone               {alone:7.1f} tokens/s   keeping attention costs {alone / kept - 1:+.1%}")
        print(f"  transformers generate (eager)    {peer:7.1f} tokens/s   attn / transformers: {kept / peer:5.2f}x")
        print(f"  the same {STEPS} tokens on both sides: {same}")
        print(f"  KV cache: {a['cache_bytes'] / 2**20:.2f} MiB at {a['cache_length']} positions; "
              f"{a['cache_1000'] / 2**20:.2f} MiB at {a['cache_1000_length']} positions")


if __name__ == "__main__":
    main()
