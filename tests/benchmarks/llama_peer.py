"""llama.cpp's side of bench_llama.py and of the steering fixture: llama-cpp-python (built from source) on a GGUF file.

Run by a Python that has llama_cpp (the peer venv, e.g. /work/venv-oracle), never attn's. One JSON job on argv, one
JSON answer on stdout (llama.cpp's own log goes to stderr):

    python llama_peer.py '{"model": PATH, "threads": 2, "n_ctx": 1024, "ops": [{"op": ...}, ...]}'

The model is loaded once (mmap, as llama.cpp runs it; its seconds in "load_seconds"); the ops run in order, each answered
in "results":
- tokenize {texts}: each text's ids as llama.cpp cuts it (BOS if the file says so, special tokens not parsed);
- generate {ids, steps, runs}: from an empty cache, the prompt and then greedy steps (the argmax of the last logits,
  as llama.cpp's greedy sampler takes it) until `steps` tokens or an end-of-generation token; one untimed run, then
  `runs` timed ones: tokens per second of each, and the ids;
- prompt {ids, logits}: one timed pass over the ids from an empty cache; the last position's logits saved to `logits`
  (.npy, float32) for the caller to compare;
- steps {ids, steps}: the prompt, then `steps` one-token greedy steps, each timed alone;
- steer {cvec, scale, ids, steps, layers}: the control vector applied as llama.cpp's common_control_vector_load and
  common_init_from_params apply it (each `direction.l` times `scale` into slot l - 1 of a buffer starting at layer 1;
  llama_set_adapter_cvec over layers 1 .. n_layer, or `layers` [start, end]), then a greedy run of `steps` tokens with
  every step's top-2 margin (logit of the best minus the second) and its TOP best (id, logit); cleared after; `cvec`
  null: the same run unsteered.
"""

import ctypes
import json
import sys
import time

import numpy as np


MARGIN = 0.5  # llama.cpp quantizes activations (its logits differ from attn's by up to about 0.5): below this top-2 margin
#              of attn's, the two may pick different tokens, and the continuations are compared no further


def agreed(ours: list[int], margins: list[float], theirs: list[int], bar: float = MARGIN) -> tuple[int, bool]:
    """(steps compared, whether they agree): two greedy continuations token for token, up to the first step where attn's
    top-2 margin is under `bar` (that step and those after it not compared)."""
    k = min(next((i for i, m in enumerate(margins) if m < bar), len(margins)), len(ours), len(theirs))
    return k, ours[:k] == theirs[:k]


def last_logits(llm) -> np.ndarray:  # -> [V] float32: the logits of the last token evaluated
    import llama_cpp

    pointer = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(pointer, shape=(llm.n_vocab(),)).copy()


TOP = 5  # the best tokens of a steered step recorded with their logits


def greedy(llm, ids: list[int], steps: int, stop: bool = True, top: list | None = None) -> tuple[list[int], list[float], list[float]]:
    """(new ids, seconds of each step, top-2 margin of each step) from an empty cache: the prompt is step 0's pass.
    `top`: a list to append each step's TOP best [(id, logit)] to."""
    import llama_cpp

    llm.reset()
    new, seconds, margins = [], [], []
    feed = list(ids)
    for _ in range(steps):
        start = time.perf_counter()
        llm.eval(feed)
        logits = last_logits(llm)
        chosen = int(np.argmax(logits))
        seconds.append(time.perf_counter() - start)
        best = np.argsort(-logits, kind="stable")[:TOP]
        margins.append(float(logits[best[0]] - logits[best[1]]))
        if top is not None:
            top.append([[int(j), float(logits[j])] for j in best])
        new.append(chosen)
        feed = [chosen]
        if stop and llama_cpp.llama_vocab_is_eog(llm._model.vocab, chosen):
            break
    return new, seconds, margins


def cvec_buffer(path: str, scale: float, n_embd: int) -> np.ndarray:
    """common_control_vector_load_one: direction.l (l >= 1, F32, 1-D) times the strength, summed into slot l - 1."""
    import gguf

    reader = gguf.GGUFReader(path)
    slots = {}
    for tensor in reader.tensors:
        head, _, index = tensor.name.partition(".")
        if head != "direction" or not index.isdigit() or int(index) == 0:
            raise SystemExit(f"{path}: {tensor.name} is not a direction.l tensor llama.cpp reads")
        values = np.asarray(tensor.data, dtype=np.float32).reshape(-1)
        if len(values) != n_embd:
            raise SystemExit(f"{path}: {tensor.name} has {len(values)} values, the model {n_embd}")
        slots[int(index)] = slots.get(int(index), 0) + values * np.float32(scale)
    data = np.zeros((max(slots), n_embd), dtype=np.float32)
    for l, v in slots.items():
        data[l - 1] += v
    return data.reshape(-1)


def steer(llm, op: dict) -> dict:
    import llama_cpp

    n_layer = llama_cpp.llama_model_n_layer(llm._model.model)
    if op.get("cvec"):
        data = cvec_buffer(op["cvec"], op["scale"], llm.n_embd())
        start, end = op.get("layers") or (1, n_layer)
        pointer = data.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        if llama_cpp.llama_set_adapter_cvec(llm._ctx.ctx, pointer, len(data), llm.n_embd(), start, end) != 0:
            raise SystemExit(f"llama_set_adapter_cvec refused {op['cvec']}")
    top = []
    try:
        ids, _, margins = greedy(llm, op["ids"], op["steps"], stop=False, top=top)
    finally:
        llama_cpp.llama_set_adapter_cvec(llm._ctx.ctx, None, 0, llm.n_embd(), -1, -1)
    return {"ids": ids, "margins": margins, "top": top, "n_layer": n_layer}


def run(llm, op: dict) -> dict:
    kind = op["op"]
    if kind == "tokenize":
        return {"ids": [llm.tokenize(t.encode("utf-8"), add_bos=True, special=False) for t in op["texts"]]}
    if kind == "generate":
        greedy(llm, op["ids"], op["steps"])  # warm: the pages of the file read, the graphs built
        rates, ids = [], []
        for _ in range(op["runs"]):
            start = time.perf_counter()
            ids, _, _ = greedy(llm, op["ids"], op["steps"])
            rates.append(len(ids) / (time.perf_counter() - start))
        return {"rates": rates, "ids": ids}
    if kind == "prompt":
        llm.reset()
        start = time.perf_counter()
        llm.eval(op["ids"])
        logits = last_logits(llm)
        seconds = time.perf_counter() - start
        np.save(op["logits"], logits)
        return {"seconds": seconds}
    if kind == "steps":
        ids, seconds, _ = greedy(llm, op["ids"], op["steps"] + 1, stop=False)
        return {"seconds": seconds[1:], "ids": ids}
    if kind == "steer":
        return steer(llm, op)
    raise SystemExit(f"unknown op {kind!r}")


def main() -> None:
    from llama_cpp import Llama, __version__

    job = json.loads(sys.argv[1])
    threads = job["threads"]
    start = time.perf_counter()
    llm = Llama(job["model"], n_ctx=job.get("n_ctx", 1024), n_batch=512, n_ubatch=512, n_threads=threads, n_threads_batch=threads,
                verbose=False)
    loaded = time.perf_counter() - start
    results = [run(llm, op) for op in job["ops"]]
    print(json.dumps({"results": results, "version": __version__, "threads": threads, "load_seconds": loaded}))


if __name__ == "__main__":
    main()
