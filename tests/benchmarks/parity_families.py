"""The newer families' figures against transformers, printed: the worst difference over every layer and head of every
oracle sentence, per family and source (Qwen3, Phi-3, Gemma 2, Gemma 3 as folders and GGUF files; Gemma 3 270M).

Run by hand:  python tests/benchmarks/parity_families.py [--no-gemma3]
(tests/test_families.py asserts the bars: attention 1e-4, hidden states 1e-4 of each layer's RMS, logits 1e-3, top-1 everywhere.)
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import tests.test_families as T  # noqa: E402
from tests import checkpoints  # noqa: E402
from tests.test_decoders import layer_scale_error  # noqa: E402


def tiny(name: str, kind: str) -> str:
    m = T.model(name, kind)
    worst, agree, positions = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}, 0, 0
    for case in T.oracle(name, kind):
        trace = m.forward(T.encode(m, str(case["text"]), bool(case["chat"])))
        worst["attention"] = max(worst["attention"], float(np.abs(trace.stacked("attn.pattern") - case["attentions"]).max()))
        worst["hidden"] = max(worst["hidden"], layer_scale_error(np.concatenate([trace.streams()[:-1], trace.get("resid_final")[None]]), case["hidden"]))
        logits = m.readout(trace.streams()[-1])
        worst["logits"] = max(worst["logits"], float(np.abs(logits - case["logits"]).max()))
        agree += int((logits.argmax(-1) == case["logits"].argmax(-1)).sum())
        positions += len(logits)
    return f"attention {worst['attention']:.1e}  hidden/RMS {worst['hidden']:.1e}  logits {worst['logits']:.1e}  top-1 {agree}/{positions}"


def main() -> None:
    for name in T.NAMES:
        for kind in T.KINDS:
            print(f"{name:12} {kind:6} {tiny(name, kind)}", flush=True)
    if "--no-gemma3" in sys.argv:
        return
    n = int(np.load(checkpoints.FIXTURES / "oracle-gemma3.npz")["n_sentences"])
    for s in range(n):
        e, last = T.gemma3_errors(s)
        logits = T.gemma3_logit_error([s], last)  # asserts the same top-1 token at every position
        print(f"gemma-3-270m s{s} ({e['tokens']} tokens): attention {e['attention']:.1e}  hidden/RMS {e['hidden']:.1e}  "
              f"logits {logits:.1e}  top-1 {e['tokens']}/{e['tokens']}", flush=True)


if __name__ == "__main__":
    main()
