"""The context head's W_V trained on the dev set's sense margins, its ridge chosen by cross-validation on the dev words."""

import math

import numpy as np

from attn_cli.core.attention import Mask
from builder.measures import sense_cases
from builder.settings import MASKS, MIN_VALUE_COSINE, SEED, VALUE_FOLDS, VALUE_LEARNING_RATE, VALUE_RIDGES, VALUE_STEPS


def sense_margins(adjective, context, cases_file, words_file, vectors) -> dict:
    """What the context head's W_V is trained on: for each case of the set under each mask, the word's
    E plus the adjective head's update (a), its context as the head sees it (c = sum_j w_ij E_j, so the
    head's update is c W_V) and, for each other sense, the difference of the centroids (g = intended -
    other). E' = a + c W_V is nearer the intended sense than the other exactly when g . E' > 0.
    {"a", "c", "g": [r, d], "case": [r] (an index into "e" and "word"), "mask": [r], "e": [n, d], "word": [n]}"""
    from attn_cli.analysis.inspect import inspect_text
    from attn_cli.models.glove import Settings

    cases, senses = sense_cases(cases_file, words_file, vectors)
    rows = {"a": [], "c": [], "g": [], "case": [], "mask": [], "e": [], "word": []}
    for mask in MASKS:
        for case in cases:
            if mask == Mask.causal and not case.context_before:
                continue
            result = inspect_text(case.sentence, vectors, [adjective, context], Settings(mask=Mask(mask)))
            i = result.tokens.index(case.word)
            names, centroids = senses[case.word]
            t = names.index(case.sense)
            for other in range(len(names)):
                if other != t:
                    rows["a"].append(result.e[i] + result.heads[0].delta[i])  # [d]
                    rows["c"].append(result.heads[1].weights[i] @ result.e)  # [n] x [n, d] -> [d]
                    rows["g"].append(centroids[t] - centroids[other])  # [d]
                    rows["case"].append(len(rows["e"]))
                    rows["mask"].append(mask)
            rows["e"].append(result.e[i])
            rows["word"].append(case.word)
    return {k: np.array(v) for k, v in rows.items()}


def fit_sense_value_map(rows, prior: np.ndarray, ridge: float, steps: int = VALUE_STEPS) -> np.ndarray:  # -> [d, d]
    """W_V that minimises the mean logistic loss of the sense margins g . (a + c W_V), measured in units
    of their spread under the prior, plus ridge * |W_V - prior|^2: the update moves each word toward the
    sense its context selects, and stays near the prior where the cases say nothing. Adam, full batch,
    from the prior: deterministic."""
    a, c, g = rows["a"], rows["c"], rows["g"]  # [r, d] each
    base = np.einsum("rd,rd->r", g, a + c @ prior)  # [r] margins under the prior
    unit = 1.0 / np.std(base)
    change = np.zeros_like(prior)  # [d, d]: W_V - prior
    m1, m2 = np.zeros_like(change), np.zeros_like(change)
    for t in range(1, steps + 1):
        margin = base + np.einsum("rd,rd->r", c @ change, g)  # [r]
        slope = -unit / (1.0 + np.exp(unit * margin))  # [r] d loss / d margin
        grad = (c * slope[:, None]).T @ g / len(g) + 2 * ridge * change  # [d, r] x [r, d] -> [d, d]
        m1 = 0.9 * m1 + 0.1 * grad
        m2 = 0.999 * m2 + 0.001 * grad**2
        change -= VALUE_LEARNING_RATE * (m1 / (1 - 0.9**t)) / (np.sqrt(m2 / (1 - 0.999**t)) + 1e-8)
    return prior + change


def value_map_figures(rows, w_v: np.ndarray, cases: np.ndarray) -> dict:
    """{mask: {"after": share of the cases resolved, "mean_cos": mean cos(E, E')}} for the given case indices."""
    out = {}
    for mask in MASKS:
        picked = np.isin(rows["case"], cases) & (rows["mask"] == mask)
        if not picked.any():
            continue
        case = rows["case"][picked]
        after = rows["a"][picked] + rows["c"][picked] @ w_v  # [r, d]: E' of each row's case
        ok = np.einsum("rd,rd->r", rows["g"][picked], after) > 0  # [r]
        seen, first = np.unique(case, return_index=True)  # the cases, and one row (one E') of each
        failed = np.unique(case[~ok])  # a case is resolved when every other sense's margin is positive
        e, e_after = rows["e"][seen], after[first]
        cos = np.einsum("rd,rd->r", e, e_after) / (np.linalg.norm(e, axis=1) * np.linalg.norm(e_after, axis=1))
        out[mask] = {"after": float(np.mean(~np.isin(seen, failed))), "mean_cos": float(np.mean(cos)), "cases": len(seen)}
    return out


def train_value_map(rows, prior: np.ndarray, ridges=VALUE_RIDGES, steps: int = VALUE_STEPS) -> tuple[np.ndarray, dict]:
    """Choose the ridge by cross-validation over the dev *words* (each group of words is predicted by a
    map trained on the other words' cases, so the figure is for words the map has not seen), then
    train on every dev case. The choice: the most cases resolved (mean of both masks) among the ridges
    whose mean cos(E, E') stays >= MIN_VALUE_COSINE; ties: the larger ridge. A ridge of None leaves the
    prior as it is (no training): chosen when training does not help the words it has not seen."""
    def fit(train, ridge):
        return prior if ridge is None else fit_sense_value_map(train, prior, ridge, steps)

    def pull(ridge):  # None pulls hardest
        return math.inf if ridge is None else ridge

    words = sorted(set(rows["word"].tolist()))
    np.random.default_rng(SEED + 4).shuffle(words)
    folds = [words[k::VALUE_FOLDS] for k in range(VALUE_FOLDS)]
    tried = []
    for ridge in ridges:
        pooled = {mask: {"after": 0.0, "mean_cos": 0.0, "cases": 0} for mask in MASKS}
        for fold in folds:
            held = np.flatnonzero(np.isin(rows["word"], fold))  # case indices of this group's words
            train = {k: v[~np.isin(rows["case"], held)] for k, v in rows.items() if k not in ("e", "word")}
            for mask, f in value_map_figures(rows, fit(train, ridge), held).items():
                for k in ("after", "mean_cos"):
                    pooled[mask][k] += f[k] * f["cases"]
                pooled[mask]["cases"] += f["cases"]
        tried.append({"ridge": ridge, **{mask: {k: p[k] / p["cases"] for k in ("after", "mean_cos")} for mask, p in pooled.items()}})
    allowed = [t for t in tried if min(t[m]["mean_cos"] for m in MASKS) >= MIN_VALUE_COSINE] or [max(tried, key=lambda t: pull(t["ridge"]))]
    best = max(allowed, key=lambda t: (round(float(np.mean([t[m]["after"] for m in MASKS])), 6), pull(t["ridge"])))
    every_case = np.arange(len(rows["e"]))
    w_v = fit(rows, best["ridge"])
    return w_v, {"ridge": best["ridge"], "folds": VALUE_FOLDS, "steps": steps, "min_cosine": MIN_VALUE_COSINE, "tried": tried,
                 "dev_untrained": value_map_figures(rows, prior, every_case), "dev_trained": value_map_figures(rows, w_v, every_case)}
