"""The detectors and the circuits side by side (docs/circuits.md): the figures that page reports, computed again.

    python tests/benchmarks/study_circuits.py [--model smollm2|gemma3] [--heads 5] [--tokens 50]

1. K-composition: the `--heads` heads `heads detect` scores highest for induction, and for previous (each its own
   random-sequence or sentence score, as the command prints them). For every induction head I and previous-token head P
   in an earlier layer: P's K-composition into I, its percentile among every earlier head's K-composition into I (chance:
   about 50%), beside the random heads' baseline and the median of the model's pairs (`heads compose`).
2. Copying: every head's copying score on the `--tokens` most frequent one-token words (the OV circuit of `attn circuit`,
   all heads in one pass over the vocabulary), and how each head behaves on text: a random sequence of those words given
   twice after BOS (as `heads detect` scores induction), at each position of the second copy the key the head attends to
   most (BOS left out), and whether that key's token is among the 10 tokens the head's own output promotes most
   (z W_O', the final norm's weight, W_U). Baseline: the same for a token of the sequence drawn at random.
"""

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import checkpoints  # noqa: E402

TOP = 10  # a text copy: the attended token among the head's 10 most promoted


def detected(model, heads: int) -> dict:
    from attn_cli.analysis.detect import detect_heads
    from attn_cli.heads.links import link_set, read_links

    sentences = list(enumerate(dict.fromkeys(link.sentence for link in read_links(link_set("previous"))), 1))
    found = detect_heads(model, sentences, "data/links/previous.tsv", ["previous", "induction"]).to_dict()
    return {p: [(r["layer"], r["head"], r["score"]) for r in found["patterns"][p][:heads]] for p in ("previous", "induction")} | {
        "baselines": found["baselines"]}


def k_composition(model, found: dict) -> None:
    from attn_cli.analysis.compose import composition

    result = composition(model)
    k = result.scores["k"]
    mean, sd = result.baseline["k"]
    print(f"K-composition: random heads {mean:.3f} ± {sd:.3f}; the model's pairs, median {result.median('k'):.3f}")
    percentiles = []
    for l2, h2, induction in found["induction"]:
        earlier = k[:l2, :, l2, h2].ravel()
        for l1, h1, previous in found["previous"]:
            if l1 >= l2:
                continue
            score = k[l1, h1, l2, h2]
            pct = float(np.mean(earlier < score))
            percentiles.append(pct)
            print(f"  previous {l1}.{h1} ({previous:.2f}) -> induction {l2}.{h2} ({induction:.2f}): K {score:.3f}, "
                  f"{pct:.0%} of the {earlier.size} earlier heads below it; best earlier head {earlier.max():.3f}")
    if percentiles:
        print(f"  mean percentile of the previous-token heads: {np.mean(percentiles):.0%} over {len(percentiles)} pairs (chance about 50%)")


def head_writes(model, l: int) -> np.ndarray:  # -> [H, dh, d] float64: W_O' F of each head of layer l
    from attn_cli.analysis.circuit import writes

    o = model.weights.tensor(f"layers.{l}.attn.o.w").astype(np.float64).reshape(model.spec.n_heads, model.spec.d_head, -1)
    return writes(model, l, o)


def copying_scores(model, ids: list[int]) -> np.ndarray:  # -> [L, H]
    from attn_cli.analysis.circuit import head_matrices, input_rows, vocabulary_pass

    spec = model.spec
    outs = []
    for l in range(spec.n_layers):
        x, out = input_rows(model, l, ids), head_writes(model, l)
        outs += [x @ head_matrices(model, l, h)["v"] @ out[h] for h in range(spec.n_heads)]
    _, top, _ = vocabulary_pass(model, 0, np.concatenate(outs), 1)
    return (top[:, 0].reshape(spec.n_layers, spec.n_heads, len(ids)) == np.asarray(ids)).mean(axis=2)


def text_copying(model, ids: list[int], seed: int) -> tuple[np.ndarray, np.ndarray]:  # -> attended, random [L, H]
    from attn_cli import api
    from attn_cli.analysis.circuit import vocabulary_pass

    spec = model.spec
    rng = np.random.default_rng(seed)
    sequence = [int(i) for i in rng.choice(ids, size=len(ids), replace=False)]
    start = model.tokenize("the")
    bos = [i for i, special in zip(start.ids, start.special) if special][:1]  # the BOS the tokenizer puts first, if any
    tokens = bos + sequence + sequence
    trace = model.forward(tokens, keep=api.Keep(("attn.pattern", "attn.z")))
    second = np.arange(len(bos) + len(sequence), len(tokens))
    attended, random = np.zeros((spec.n_layers, spec.n_heads)), np.zeros((spec.n_layers, spec.n_heads))
    for l in range(spec.n_layers):
        pattern, z = trace.get("attn.pattern", l), trace.get("attn.z", l)  # [H, n, n], [n, H, dh]
        out = head_writes(model, l)
        rows = np.concatenate([z[second, h].astype(np.float64) @ out[h] for h in range(spec.n_heads)])  # [H m, d]
        _, top, _ = vocabulary_pass(model, 0, rows, TOP)
        top = top.reshape(spec.n_heads, len(second), TOP)
        for h in range(spec.n_heads):
            keys = np.argmax(pattern[h][second][:, len(bos):], axis=1) + len(bos)  # BOS left out
            attended[l, h] = np.mean([tokens[j] in top[h, i] for i, j in enumerate(keys)])
            random[l, h] = np.mean([tokens[j] in top[h, i] for i, j in enumerate(rng.integers(len(bos), len(tokens), len(second)))])
    return attended, random


def ranks(x: np.ndarray) -> np.ndarray:  # ties share their mean rank (many heads score 0 on both)
    values = x.ravel()
    order = np.argsort(values, kind="stable")
    ranked = np.empty(len(values))
    ranked[order] = np.arange(len(values), dtype=float)
    for v in np.unique(values):
        tied = values == v
        ranked[tied] = ranked[tied].mean()
    return ranked


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def copying(model, count: int, heads: int) -> None:
    from attn_cli.analysis.circuit import frequent_ids

    ids = frequent_ids(model, count)
    scores = copying_scores(model, ids)
    attended, random = text_copying(model, ids, seed=0)
    order = np.argsort(-scores, axis=None, kind="stable")[:heads]
    print(f"copying (OV circuit, {len(ids)} frequent one-token words): median head {np.median(scores):.0%}, max {scores.max():.0%}")
    print(f"on text (the attended token among the head's {TOP} most promoted, second copy of a repeated sequence): "
          f"median head {np.median(attended):.0%}; a random token of the sequence instead: median {np.median(random):.0%}, max {random.max():.0%}")
    for j in order:
        l, h = np.unravel_index(j, scores.shape)
        print(f"  head {l}.{h}: copying {scores[l, h]:.0%}, on text {attended[l, h]:.0%} (random token {random[l, h]:.0%})")
    best = np.unravel_index(np.argmax(attended), attended.shape)
    print(f"  the head that copies most on text: {best[0]}.{best[1]}, {attended[best]:.0%}, its copying score {scores[best]:.0%}")
    print(f"  Spearman correlation over the {scores.size} heads, copying score vs on text: {spearman(scores, attended):.2f} "
          f"(ties ranked by their mean); heads at 0% on both: {int(np.sum((scores == 0) & (attended == 0)))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("smollm2", "gemma3"), default="smollm2")
    parser.add_argument("--heads", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--skip-k", action="store_true", help="only the copying part")
    args = parser.parse_args()
    from attn_cli.models.loading import load

    model = load(str(checkpoints.smollm2_gguf() if args.model == "smollm2" else checkpoints.gemma3_gguf()))
    if args.skip_k:
        copying(model, args.tokens, args.heads)
        return
    found = detected(model, args.heads)
    print(f"{model.name}: heads detect's top {args.heads}: previous {found['previous']}; induction {found['induction']}; "
          f"baselines {found['baselines']['previous']} (previous), {found['baselines']['induction']} (induction)")
    k_composition(model, found)
    copying(model, args.tokens, args.heads)


if __name__ == "__main__":
    main()
