"""`attn patch` on SmolLM2-135M-Instruct against the same patching with transformers' forward hooks, in one run.

Run by hand (not a test), with a Python that has torch, transformers and accelerate (the fixtures' venv,
tests/fixtures/models/README.md) as the peer:

    python tests/benchmarks/bench_patch.py --peer-python /path/to/venv/bin/python [--rounds 2] [--threads 1 2]

It clears OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for itself and prints the BLAS kernel. The work, on both sides: the
IOI pair ("When Mary and John went to the store, John gave a drink to" / "... Mary gave a drink to"), metric " Mary" −
" John" at the last position, both maps: (a) the stream entering each of the 30 layers at each of the 14 positions,
(b) each of the 270 heads' output at every position. attn runs the clean and corrupt texts once and reruns only the
layers from l on (for (a) only the positions from p on, after the corrupt run's KV cache), patches batched
(analysis/patch.py); the peer runs one full forward per patch with
forward hooks, as a TransformerLens-style loop does (the script that records tests/fixtures/models/why-smollm2.npz).
Each side in its own process with the model loaded; the processes alternate. Goal: attn <= 0.3x the peer's time.
"""

import argparse
import os
import statistics
import sys
from pathlib import Path

if any(os.environ.get(v) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")):  # as a user's machine runs: re-exec without them
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    os.execve(sys.executable, [sys.executable, *sys.argv], env)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
from tests import checkpoints  # noqa: E402

sys.path.insert(0, str(HERE))
from runs import answer  # noqa: E402

CLEAN = "When Mary and John went to the store, John gave a drink to"
CORRUPT = "When Mary and John went to the store, Mary gave a drink to"

ATTN = """
import json, sys, time
from attn_cli.models.loading import load
from attn_cli.analysis.patch import PatchSettings, patch
m = load(sys.argv[1]); m.weights.hold(3 << 30)
patch(m, sys.argv[2], sys.argv[3], PatchSettings(" Mary", " John"))  # warm
t = time.perf_counter(); r = patch(m, sys.argv[2], sys.argv[3], PatchSettings(" Mary", " John")); dt = time.perf_counter() - t
try:
    from threadpoolctl import threadpool_info
    blas = [f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}, {i.get('num_threads')} threads" for i in threadpool_info()]
except ImportError:
    blas = ["pip install threadpoolctl to see the kernel"]
print(json.dumps({"seconds": dt, "resid": r.resid_pre.tolist(), "heads": r.heads.tolist(), "blas": blas}))
"""

PEER = """
import json, sys, time, torch, transformers
transformers.utils.logging.set_verbosity_error(); transformers.utils.logging.disable_progress_bar()
from transformers import AutoModelForCausalLM, AutoTokenizer
path = sys.argv[1]; folder, name = path.rsplit("/", 1); clean, corrupt = sys.argv[2], sys.argv[3]
torch.set_num_threads(int(sys.argv[4]))
tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32, attn_implementation="eager").eval()
layers = model.model.layers; L, H = len(layers), model.config.num_attention_heads; dh = model.config.hidden_size // H
mary, john = tok(" Mary", add_special_tokens=False)["input_ids"][0], tok(" John", add_special_tokens=False)["input_ids"][0]
edit = {}; seen = {}
def pre_layer(l):
    def hook(module, args, kwargs):
        h = args[0] if args else kwargs["hidden_states"]
        if ("resid", l) in edit:
            p, v = edit[("resid", l)]; h = h.clone(); h[0, p] = v
        seen[("resid", l)] = h[0].detach().clone()
        if args: return (h, *args[1:]), kwargs
        kwargs["hidden_states"] = h; return args, kwargs
    return hook
def pre_o(l):
    def hook(module, args):
        z = args[0]
        if ("z", l) in edit:
            h, v = edit[("z", l)]; z = z.clone(); z[0, :, h * dh:(h + 1) * dh] = v
        seen[("z", l)] = z[0].detach().clone()
        return (z,)
    return hook
for l, layer in enumerate(layers):
    layer.register_forward_pre_hook(pre_layer(l), with_kwargs=True); layer.self_attn.o_proj.register_forward_pre_hook(pre_o(l))
def diff(ids):
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, -1]
    return float(logits[mary] - logits[john])
def run():
    a, b = tok(clean)["input_ids"], tok(corrupt)["input_ids"]
    diff(a); good = dict(seen); diff(b)
    resid = [[0.0] * len(a) for _ in range(L)]; heads = [[0.0] * H for _ in range(L)]
    for l in range(L):
        for p in range(len(a)):
            edit.clear(); edit[("resid", l)] = (p, good[("resid", l)][p]); resid[l][p] = diff(b)
        for h in range(H):
            edit.clear(); edit[("z", l)] = (h, good[("z", l)][:, h * dh:(h + 1) * dh]); heads[l][h] = diff(b)
    edit.clear()
    return resid, heads
diff(tok(clean)["input_ids"])  # warm
t = time.perf_counter(); resid, heads = run(); dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "resid": resid, "heads": heads}))
"""


def main() -> None:
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-python", required=True, help="a Python with torch, transformers and accelerate")
    parser.add_argument("--rounds", type=int, default=2, help="processes a side, alternating")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    gguf = str(checkpoints.smollm2_gguf())
    print(f"SmolLM2-135M-Instruct Q4_1 ({gguf}); the IOI pair, both patching maps (30 x 14 streams, 270 heads)")
    for threads in args.threads:
        ours, theirs = [], []
        for _ in range(args.rounds):
            a = answer(sys.executable, ATTN, [gguf, CLEAN, CORRUPT], threads, str(ROOT))
            t = answer(args.peer_python, PEER, [gguf, CLEAN, CORRUPT, threads], threads, None)
            ours.append(a["seconds"])
            theirs.append(t["seconds"])
        gap = max(float(np.abs(np.array(a["resid"]) - np.array(t["resid"])).max()), float(np.abs(np.array(a["heads"]) - np.array(t["heads"])).max()))
        mine, peer = statistics.median(ours), statistics.median(theirs)
        print(f"\n{threads} thread{'s' if threads > 1 else ''}; BLAS: {a['blas']}")
        print(f"  attn patch (clean and corrupt once, reruns from layer l, batched)  {mine:7.2f} s")
        print(f"  transformers, one forward per patch with hooks (690 forwards)       {peer:7.2f} s   attn / torch: {mine / peer:5.2f}x")
        print(f"  the two maps differ by at most {gap:.1e} (raw logit differences)")


if __name__ == "__main__":
    main()
