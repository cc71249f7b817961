"""attn's side of bench_llama.py and bench_direction.py: the same jobs as llama_peer.py, run by attn's own Python.

One JSON job on argv, one JSON answer on stdout:

    python attn_worker.py '{"model": PATH, "threads": 2, "ops": [{"op": ...}, ...]}'

The BLAS threads are set as `--threads N` sets them (io.blas.choose) and by the environment the caller gives. The model is
loaded once (its seconds in "load_seconds"); the ops run in order, each answered in "results":
- info: the BLAS kernel threadpoolctl reports (or what NumPy was built with), whether the C decoder is built;
- tokenize {texts}: each text's ids (model.tokenize: the special tokens the file says to add);
- generate {text, steps, runs}: attn generate's loop (analysis.generate.Generation, greedy, every step's attention
  kept as the views need it), one untimed run, then `runs` timed ones, each followed by the same loop keeping no
  attention (only the last stream: a KV-cached pass and the readout, the argmax): tokens per second of both, the ids
  and every step's top-2 margin;
- prompt {ids, logits}: predict's pass (analysis.predict.predict_keep: the last stream only, then the readout), timed
  from before the pass to the logits; the logits saved to `logits` (.npy);
- steps {text, steps}: generate's loop for `steps` + 1 tokens, each step after the first (the prompt's) timed alone, and
  the largest private memory (RssAnon) seen after a step;
- steer {cvec, scale, text, steps}: generate's greedy loop with `--steer cvec:scale` (`steps` tokens, or fewer at an EOS),
  the ids and every step's top-2 margin (the logit of the best token minus the second's); cvec null: unsteered;
- forced {cvec, scale, prompt_ids, ids, top}: teacher forcing along another run's continuation (llama.cpp's): one pass
  over the prompt and those ids, and at each step attn's argmax, top-2 margin and logits of the ids `top` lists for it;
- steer_cost {cvec, scale, text, steps, runs} (bench_direction.py): generate's loop with and without the steering,
  alternating, `runs` of each: seconds per step;
- direction {pairs, holdout, runs} (bench_direction.py): analysis.direction.direction over the pairs, timed, against the floor
  (one pass per distinct text keeping every layer's last-token stream, nothing else), alternating, `runs` of each.
"""

import json
import math
import sys
import time

import numpy as np


def kernel() -> dict:
    try:
        from threadpoolctl import threadpool_info

        blas = [f"{i.get('internal_api')} {i.get('version')}, kernel {i.get('architecture')}, {i.get('num_threads')} threads"
                for i in threadpool_info()]
    except ImportError:
        built = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = [f"{built.get('name')} {built.get('version')} (pip install threadpoolctl to see the kernel)"]
    from attn_cli.models.sources import quants

    return {"blas": blas, "numpy": np.__version__, "c_decoder": getattr(quants, "COMPILED", None) is not None}


def settings(steps: int, steer: list | None = None, steered: list | None = None):
    from attn_cli.analysis.generate import GenerateSettings

    return GenerateSettings(steps=steps, steer=steer, steered=steered)


def with_attention(model, text: str, steps: int, steer: list | None = None, margins: list | None = None) -> tuple[list[int], float]:
    """generate's loop: (the new ids, seconds); `margins`: a list to put every step's top-2 margin in."""
    from attn_cli.analysis.generate import Generation

    run = Generation(model, text, settings(steps, steer))
    start = time.perf_counter()
    for _ in run:
        pass
    seconds = time.perf_counter() - start
    if margins is not None:
        margins[:] = [margin(s) for s in run.steps]
    return [s.id for s in run.steps], seconds


def logits_alone(model, text: str, steps: int, stops: set) -> tuple[list[int], float]:
    """The same greedy loop keeping only the last stream: what generating costs without the views' attention."""
    from attn_cli.analysis.generate import HOLD_BYTES
    from attn_cli.models.cache import KVCache
    from attn_cli.models.points import Keep

    ids = model.tokenize(text).ids
    cache, keep = KVCache(model), Keep(points=("resid_post",), layers=[model.n_layers - 1], rows=[-1])
    if hasattr(model.weights, "hold"):  # as generate does: passes of one row (Weights may come to need no such call)
        hold = model.weights.hold
        hold(HOLD_BYTES, **({"rows": 1} if "rows" in hold.__code__.co_varnames else {}))
    start = time.perf_counter()
    new, out = list(ids), []
    for _ in range(steps):
        trace = model.forward(new, keep=keep, cache=cache)
        new = [int(np.argmax(model.readout(trace.get("resid_post", model.n_layers - 1)[-1:])[0]))]
        out.append(new[0])
        if new[0] in stops:
            break
    return out, time.perf_counter() - start


def generate(model, op: dict) -> dict:
    from attn_cli.analysis.generate import stop_ids

    with_attention(model, op["text"], op["steps"])  # warm: layers dequantized and held, code paths run once
    kept, alone, ids, ids_alone, margins = [], [], [], [], []
    for _ in range(op["runs"]):
        ids, seconds = with_attention(model, op["text"], op["steps"], margins=margins)
        kept.append(len(ids) / seconds)
        ids_alone, seconds = logits_alone(model, op["text"], op["steps"], stop_ids(model))
        alone.append(len(ids_alone) / seconds)
    return {"rates": kept, "alone": alone, "ids": ids, "margins": margins, "same_alone": ids == ids_alone}


def steer_cost(model, op: dict) -> dict:
    """generate's loop with and without --steer cvec:scale, alternating: seconds per step of each (the prompt's step included)."""
    from attn_cli.io.control_vector import steer_edits

    edits = steer_edits(model, [f"{op['cvec']}:{op['scale']}"])[0]
    with_attention(model, op["text"], op["steps"], edits)  # warm
    timed = {"plain": [], "steered": []}
    for _ in range(op["runs"]):
        for name, steer in (("plain", None), ("steered", edits)):
            ids, seconds = with_attention(model, op["text"], op["steps"], steer)
            timed[name].append(seconds / len(ids))
    return timed


def prompt(model, op: dict) -> dict:
    from attn_cli.analysis.predict import predict_keep

    ids = op["ids"]
    start = time.perf_counter()
    if hasattr(model.weights, "prefetch_vocabulary"):  # as predict does: the output head read while the layers run
        model.weights.prefetch_vocabulary()
    trace = model.forward(ids, keep=predict_keep(model, len(ids) - 1, False))
    logits = model.readout(trace.get("resid_post", model.n_layers - 1))[-1]
    seconds = time.perf_counter() - start
    np.save(op["logits"], np.asarray(logits, dtype=np.float32))
    return {"seconds": seconds}


def private_mib() -> float:
    """This process's private memory now (RssAnon, Linux), in MiB; 0 where /proc does not say."""
    try:
        with open("/proc/self/status") as f:
            return next((int(line.split()[1]) / 1024 for line in f if line.startswith("RssAnon:")), 0.0)
    except OSError:
        return 0.0


def steps(model, op: dict) -> dict:
    from attn_cli.analysis.generate import Generation

    run = Generation(model, op["text"], settings(op["steps"] + 1))
    seconds, ids, peak, start = [], [], private_mib(), time.perf_counter()
    for step in run:
        seconds.append(time.perf_counter() - start)
        ids.append(step.id)
        peak = max(peak, private_mib())  # after each step: what the run holds between steps (layers kept, the cache)
        start = time.perf_counter()
    return {"seconds": seconds[1:], "ids": ids, "private_mib": peak}


def margin(step) -> float:
    """The best token's logit less the second's: log(p1 / p2), the step's probabilities being softmax of the raw logits."""
    p1, p2 = step.top[0][2], step.top[1][2]
    return math.inf if p2 == 0 else math.log(p1) - math.log(p2)


def steer(model, op: dict) -> dict:
    from attn_cli.analysis.generate import generate as run_generate
    from attn_cli.io.control_vector import steer_edits

    edits, steered = steer_edits(model, [f"{op['cvec']}:{op['scale']}"]) if op.get("cvec") else ([], [])
    loop = run_generate(model, op["text"], settings(op["steps"], edits, steered))
    tokens = next(loop)
    found = list(loop)  # every step: an EOS ends the loop early (the caller compares the ids made)
    return {"prompt_ids": list(tokens.ids), "ids": [s.id for s in found], "margins": [margin(s) for s in found]}


def floor(model, texts: list[str]) -> None:
    """One pass per text keeping every layer's stream at the last token, nothing else (written here, not direction.py's)."""
    from attn_cli.models.points import Keep

    keep = Keep(("resid_post",), rows=[-1])
    for text in texts:
        model.forward(model.tokenize(text).ids, keep=keep)


def forced(model, op: dict) -> dict:
    """Teacher forcing along another run's continuation: one (steered) pass over prompt_ids + ids, every step's logits read
    where that step was chosen: attn's argmax and top-2 margin there, and its logits of the ids in `top` (per step)."""
    from attn_cli.io.control_vector import steer_edits
    from attn_cli.models.points import Keep

    prompt_ids, ids = op["prompt_ids"], op["ids"]
    edits = steer_edits(model, [f"{op['cvec']}:{op['scale']}"])[0] if op.get("cvec") else []
    rows = list(range(len(prompt_ids) - 1, len(prompt_ids) + len(ids) - 1))  # the position each step's token was chosen at
    trace = model.forward(list(prompt_ids) + list(ids[:-1]), keep=Keep(("resid_post",), layers=[model.n_layers - 1], rows=rows), edits=edits)
    logits = model.readout(trace.get("resid_post", model.n_layers - 1)).astype(np.float64)  # [S, V]
    best = np.argsort(-logits, axis=1, kind="stable")[:, :2]
    return {"argmax": best[:, 0].tolist(), "margins": (logits[np.arange(len(rows)), best[:, 0]] - logits[np.arange(len(rows)), best[:, 1]]).tolist(),
            "logits_at": [[float(logits[s, j]) for j in top] for s, top in enumerate(op.get("top", []))]}


def direction(model, op: dict) -> dict:
    from attn_cli.analysis.direction import DirectionSettings, direction as find

    pairs = [tuple(p) for p in op["pairs"]]
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    chosen = DirectionSettings(holdout=op.get("holdout", 0))
    find(model, pairs[:2], DirectionSettings())  # warm: the layers read once, code paths run
    timed = {"direction": [], "floor": []}
    for _ in range(op["runs"]):
        start = time.perf_counter()
        find(model, pairs, chosen)
        timed["direction"].append(time.perf_counter() - start)
        start = time.perf_counter()
        floor(model, texts)
        timed["floor"].append(time.perf_counter() - start)
    return timed | {"texts": len(texts)}


OPS = {"info": lambda model, op: kernel(), "tokenize": lambda model, op: {"ids": [list(model.tokenize(t).ids) for t in op["texts"]]},
       "generate": generate, "prompt": prompt, "steps": steps, "steer": steer, "forced": forced, "steer_cost": steer_cost,
       "direction": direction}


def main() -> None:
    from attn_cli.io import blas
    from attn_cli.models.loading import load

    job = json.loads(sys.argv[1])
    blas.choose(job["threads"])
    start = time.perf_counter()
    model = load(job["model"])
    loaded = time.perf_counter() - start
    results = [OPS[op["op"]](model, op) for op in job["ops"]]
    print(json.dumps({"results": results, "threads": job["threads"], "layers": model.n_layers, "load_seconds": loaded}))


if __name__ == "__main__":
    main()
