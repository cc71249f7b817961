"""`attn heads compose`: Q-, K- and V-composition of every earlier head's W_OV with every later head, from the weights.

The scores are TransformerLens's (HookedTransformer.all_composition_scores, utils.composition_scores), computed on
factored matrices (analysis/matrices.py) with the norms folded in as fold_ln folds them; a pair whose later head is in
the same layer as the earlier one, or before it, has no score (TransformerLens writes 0 there). RoPE is left out, as
there: W_QK is the bilinear form at relative distance 0.

Baseline: the same scores for `draws` pairs of heads of iid Gaussian entries of the model's shapes (numpy's
default_rng(seed)), their mean and standard deviation, per mode.
"""

import numpy as np

from attn_cli.analysis.matrices import MODES, folded_heads, lefts, pair_scores, random_composition, rights
from attn_cli.errors import InputError

DRAWS = 100  # random pairs of the baseline


def parse_head(text: str, spec, option: str) -> tuple[int, int]:
    """"L.H" -> (L, H), checked against the model's layers and heads."""
    layer, dot, head = text.partition(".")
    try:
        l, h = int(layer), int(head)
    except ValueError:
        raise InputError(f"{option} {text!r}: give LAYER.HEAD, such as 3.1") from None
    if not dot:
        raise InputError(f"{option} {text!r}: give LAYER.HEAD, such as 3.1")
    if not 0 <= l < spec.n_layers:
        raise InputError(f"{option} {text}: layer {l} does not exist; the model has layers 0 to {spec.n_layers - 1}")
    if not 0 <= h < spec.n_heads:
        raise InputError(f"{option} {text}: head {h} does not exist; each layer has heads 0 to {spec.n_heads - 1}")
    return l, h


def factors(model) -> tuple[np.ndarray, dict]:  # -> left [L H, dh, d], mode -> right [L H, d, dh], float32
    """Every head's small factors (analysis/matrices.py), a layer at a time: no layer's [d, d] matrix is formed."""
    spec = model.spec
    L, H, d, dh = spec.n_layers, spec.n_heads, spec.d_model, spec.d_head
    left, right = np.empty((L * H, dh, d), np.float32), {m: np.empty((L * H, d, dh), np.float32) for m in MODES}
    for l in range(L):
        q, k, v, o = folded_heads(model, l)
        left[l * H : (l + 1) * H] = lefts(v, o)
        for mode, r in rights(q, k, v, o).items():
            right[mode][l * H : (l + 1) * H] = r
    return left, right


def composition_scores(model) -> dict:  # -> mode -> [L, H, L, H] float64, NaN where the later head is not in a later layer
    spec = model.spec
    L, H = spec.n_layers, spec.n_heads
    left, right = factors(model)
    scores = {m: np.full((L, H, L, H), np.nan) for m in MODES}
    for l2 in range(1, L):
        later = np.concatenate([right[m][l2 * H : (l2 + 1) * H] for m in MODES])  # [3 H, d, dh]
        block = pair_scores(left[: l2 * H], later).reshape(l2, H, len(MODES), H)  # [l2 H, 3 H]
        for i, m in enumerate(MODES):
            scores[m][:l2, :, l2, :] = block[:, :, i, :]
    return scores


def composition(model, to: str | None = None, mode: str = "k", seed: int = 0, draws: int = DRAWS, top: int = 10):
    """Every pair's scores, the random baseline, the map of one later head (`to`, "L.H"; default: the later head of the
    pair with the highest score of `mode`) and the top pairs."""
    from attn_cli.results.compose import CompositionResult

    spec = model.spec
    if mode not in MODES:
        raise InputError(f"--mode {mode!r}: pick one of {', '.join(MODES)}")
    if spec.n_layers < 2:
        raise InputError(f"{model.name} has one layer: composition needs a head in a later layer")
    target = parse_head(to, spec, "--to") if to is not None else None
    if target is not None and target[0] == 0:
        raise InputError(f"--to {to}: a head of layer 0 reads no earlier head; pick a head of layer 1 to {spec.n_layers - 1}")
    from attn_cli.io.blas import threads_for

    threads_for(1 << 20)  # large products: the threads --threads asks for, else the idle cores (io/blas.py)
    scores = composition_scores(model)
    if target is None:
        best = np.unravel_index(np.nanargmax(scores[mode]), scores[mode].shape)
        target = (int(best[2]), int(best[3]))
    random = random_composition(spec.d_model, spec.d_head, draws, seed)
    baseline = {m: (float(np.mean(random[m])), float(np.std(random[m]))) for m in MODES}
    return CompositionResult(model=model.summary(), scores=scores, baseline=baseline, draws=draws, seed=seed, to=target, mode=mode, top=top,
                             folded=folded_note(spec))


def folded_note(spec) -> str:
    """What was folded into the matrices, for the view and the JSON."""
    parts = ["the input norm's weight" + (" and centring (LayerNorm)" if spec.norm == "layer" else "") if spec.pre_norm else "no input norm (post-norm)"]
    if spec.qk_norm:
        parts.append("the q/k norms' weights")
    if spec.sandwich_norm:
        parts.append("the post-attention norm's weight")
    return ", ".join(parts) + "; each norm's division by its scale left out"
