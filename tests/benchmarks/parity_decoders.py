"""The decoders' figures against transformers, printed: the worst difference over every layer and head of every oracle sentence.

Run by hand:  python tests/benchmarks/parity_decoders.py
(tests/test_decoders.py asserts the bars: attention 1e-4, hidden states 1e-4 of each layer's RMS, logits 1e-3, top-1 everywhere.)
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import tests.test_decoders as T  # noqa: E402
from tests import checkpoints  # noqa: E402


def tiny(name: str, kind: str) -> str:
    m = T.model(name, kind)
    worst, agree, positions, ids, cases = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}, 0, 0, 0, 0
    for case in T.oracle(name, kind):
        tokens = T.encode(m, str(case["text"]), bool(case["chat"]))
        cases += 1
        ids += tokens.ids == case["ids"].tolist()
        trace = m.forward(tokens)
        worst["attention"] = max(worst["attention"], float(np.abs(trace.stacked("attn.pattern") - case["attentions"]).max()))
        worst["hidden"] = max(worst["hidden"], T.layer_scale_error(np.concatenate([trace.streams()[:-1], trace.get("resid_final")[None]]), case["hidden"]))
        logits = m.readout(trace.streams()[-1])
        worst["logits"] = max(worst["logits"], float(np.abs(logits - case["logits"]).max()))
        agree += int((logits.argmax(-1) == case["logits"].argmax(-1)).sum())
        positions += len(logits)
    return f"attention {worst['attention']:.1e}  hidden/RMS {worst['hidden']:.1e}  logits {worst['logits']:.1e}  top-1 {agree}/{positions}  ids {ids}/{cases}"


def smollm2() -> str:
    m = T.smollm2()
    data = np.load(checkpoints.FIXTURES / "oracle-smollm2.npz", allow_pickle=False)
    projection, subset = data["projection"].astype(np.float64), data["logit_ids"]
    worst, agree, positions, ids, n = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}, 0, 0, 0, int(data["n_sentences"])
    for s in range(n):
        tokens = T.encode(m, str(data[f"s{s}_text"]), bool(data[f"s{s}_chat"]))
        ids += tokens.ids == data[f"s{s}_ids"].tolist()
        trace = m.forward(tokens)
        worst["attention"] = max(worst["attention"], float(np.abs(trace.stacked("attn.pattern") - data[f"s{s}_attentions"]).max()))
        hidden = np.concatenate([trace.streams()[:-1], trace.get("resid_final")[None]]).astype(np.float64)
        scale = np.sqrt(np.mean(data[f"s{s}_hidden_rms"].astype(np.float64) ** 2, axis=1))[:, None, None]
        worst["hidden"] = max(worst["hidden"], float(np.max(np.abs(hidden @ projection - data[f"s{s}_hidden_projected"]) / scale)))
        logits = m.readout(trace.streams()[-1]).astype(np.float64)
        worst["logits"] = max(worst["logits"], float(np.abs(logits[:, subset] - data[f"s{s}_subset_logits"]).max()))
        agree += int((logits.argmax(-1) == data[f"s{s}_top_ids"][:, 0]).sum())
        positions += len(logits)
    return f"attention {worst['attention']:.1e}  hidden/RMS {worst['hidden']:.1e}  logits {worst['logits']:.1e}  top-1 {agree}/{positions}  ids {ids}/{n}"


if __name__ == "__main__":
    for name in ("tiny-llama", "tiny-qwen2"):
        for kind in T.TYPES:
            print(f"{name:<11} {kind:<7} {tiny(name, kind)}")
    print(f"{'SmolLM2-135M-Instruct':<19} {smollm2()}")
