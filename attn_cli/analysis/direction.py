"""`attn direction`: a direction in a real model's residual stream from contrast pairs, the lesson's E(cats) - E(cat) one level up.

Each text runs once, keeping only every layer's stream at its last token (resid_post[l], [L, d]). For the pairs
(positive_i, negative_i) the differences D_i[l] = h(positive_i)[l] - h(negative_i)[l] give, per layer:

    mean: v[l] = mean_i D_i[l], the mean difference (its norm is the size of a typical step from negative to positive);
    pca:  v[l] = the first principal component of the D_i[l], centred first (as sklearn's PCA in repeng's pca_diff),
          found with np.linalg.svd; a unit vector, its sign chosen so that most training pairs project
          positive above negative (repeng's convention; a tie keeps the sign of the mean difference).

Separation: the K held-out pairs (the last K, never used to build v) are ordered right at layer l when
D_i[l] . v[l] > 0; the fraction of them, beside the same fraction for RANDOM Gaussian directions of the same norm
(numpy's default_rng(seed)): their mean (50% but for ties) and their 95th percentile, the bar a direction must clear. One
random direction alone is a poor bar: pairs that share a direction are ordered all right or all wrong by it, so its
fraction lands near 0% or 100% by luck. A sharper figure beside it: the cosine of v[l] with the held-out pairs' mean
difference, against the 95th percentile of |cosine| of the random directions (about 2 / sqrt(d) in d dimensions).
"""

import math

import numpy as np

from attn_cli.errors import InputError
from attn_cli.records import Record

METHODS = ("mean", "pca")
RANDOM = 100  # random directions of the baseline
HELD_OUT = ("separation", "baseline", "baseline_high", "cosine", "random_cosine")


class DirectionSettings(Record):
    __slots__ = ("method", "holdout", "seed", "probe")

    def __init__(self, method: str = "mean", holdout: int = 0, seed: int = 0, probe: list[str] | None = None):
        self.method = method  # "mean" or "pca"
        self.holdout = holdout  # the last K pairs are kept out of the direction and measure its separation
        self.seed = seed  # the random baseline's generator
        self.probe = probe or []  # words whose projection is read, in the order a rise is looked for


def parse_pairs(text: str, where: str = "--pairs") -> list[tuple[str, str]]:
    """One pair a line, POSITIVE<tab>NEGATIVE; blank lines and lines starting with # are skipped."""
    pairs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "\t" not in line:
            raise InputError(f"{where} line {number}: no tab between the two texts (POSITIVE<tab>NEGATIVE)")
        positive, negative = line.split("\t", 1)
        if "\t" in negative:
            raise InputError(f"{where} line {number}: more than one tab; give two texts, POSITIVE<tab>NEGATIVE")
        if not positive.strip() or not negative.strip():
            raise InputError(f"{where} line {number}: an empty text; give two texts, POSITIVE<tab>NEGATIVE")
        pairs.append((positive, negative))
    if not pairs:
        raise InputError(f"{where}: no pairs in it (one a line, POSITIVE<tab>NEGATIVE)")
    return pairs


def last_streams(model, text: str) -> np.ndarray:  # -> [L, d] float64
    """One pass over `text`, keeping every layer's stream at the last token only."""
    from attn_cli.models.points import Keep

    trace = model.forward(model.tokenize(text), keep=Keep(("resid_post",), rows=[-1]))
    return np.stack([trace.get("resid_post", l)[-1] for l in range(model.n_layers)]).astype(np.float64)


def mean_direction(diffs: np.ndarray) -> np.ndarray:  # [P, L, d] -> [L, d]
    return diffs.mean(axis=0)


def pca_direction(diffs: np.ndarray) -> np.ndarray:  # [P, L, d] -> [L, d], unit rows
    """Per layer, the first right singular vector of the centred differences, signed so that most pairs project > 0."""
    out = np.zeros(diffs.shape[1:])
    for l in range(diffs.shape[1]):
        d = diffs[:, l]
        centred = d - d.mean(axis=0)
        if not np.any(centred):  # every difference the same (or one pair): the mean difference is the only direction
            norm = np.linalg.norm(d[0])
            out[l] = d[0] / norm if norm > 0 else 0
            continue
        v = np.linalg.svd(centred, full_matrices=False)[2][0]
        projected = d @ v
        right, wrong = int(np.sum(projected > 0)), int(np.sum(projected < 0))
        if wrong > right or (wrong == right and d.mean(axis=0) @ v < 0):
            v = -v
        out[l] = v
    return out


def separation(diffs: np.ndarray, directions: np.ndarray) -> np.ndarray:  # [K, L, d], [L, d] -> [L]
    """The fraction of pairs whose positive projects above its negative, per layer."""
    return np.mean(np.einsum("kld,ld->kl", diffs, directions) > 0, axis=0)


def random_like(directions: np.ndarray, seed: int, count: int = RANDOM) -> np.ndarray:  # [L, d] -> [R, L, d]
    """`count` Gaussian directions per layer, each scaled to that layer's norm."""
    g = np.random.default_rng(seed).standard_normal((count, *directions.shape))
    return g / np.linalg.norm(g, axis=2, keepdims=True) * np.linalg.norm(directions, axis=1, keepdims=True)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # [L, d], [L, d] -> [L] (0 where either is 0)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.divide(np.einsum("ld,ld->l", a, b), norms, out=np.zeros(len(a)), where=norms > 0)


def held_out_figures(held: np.ndarray, directions: np.ndarray, seed: int) -> dict:
    """Separation of the held-out pairs and cosine with their mean difference, for v and for random directions of its norm."""
    randoms = random_like(directions, seed)  # [R, L, d]
    fractions = np.stack([separation(held, r) for r in randoms])  # [R, L]
    mean = held.mean(axis=0)  # [L, d]
    random_cos = np.stack([np.abs(cosines(mean, r)) for r in randoms])  # [R, L]
    return {"separation": separation(held, directions), "baseline": fractions.mean(axis=0), "baseline_high": np.quantile(fractions, 0.95, axis=0),
            "cosine": cosines(mean, directions), "random_cosine": np.quantile(random_cos, 0.95, axis=0)}


def rises(values: np.ndarray) -> np.ndarray:  # [W, L] -> [L] bool
    """Whether the values increase strictly along the W probe words, per layer."""
    return np.all(np.diff(values, axis=0) > 0, axis=0)


def check_settings(settings: DirectionSettings, n_pairs: int) -> None:
    if settings.method not in METHODS:
        raise InputError(f"--method {settings.method!r}: pick one of {', '.join(METHODS)}")
    if settings.holdout < 0:
        raise InputError(f"--holdout must be >= 0, not {settings.holdout}")
    least = 2 if settings.method == "pca" else 1
    if n_pairs - settings.holdout < least:
        needs = "two pairs to find a principal component" if least == 2 else "a pair"
        raise InputError(f"--holdout {settings.holdout} of {n_pairs} pair{'s' * (n_pairs != 1)} leaves {max(n_pairs - settings.holdout, 0)} "
                         f"to build the direction; it needs {needs}")
    if len(settings.probe) == 1:
        raise InputError("--probe needs at least two words to look for a rise along them")


def direction(model, pairs: list[tuple[str, str]], settings: DirectionSettings):
    """The direction of the pairs at every layer, its held-out separation beside a random one's, and the probe's projections."""
    from attn_cli.results.direction import DirectionResult

    if model.predicts != "next":
        raise InputError(f"{model.name} is not a decoder: a direction here is read at a decoder's last token")
    check_settings(settings, len(pairs))
    streams = {text: None for pair in pairs for text in pair} | {word: None for word in settings.probe}
    for text in streams:  # one pass per distinct text
        streams[text] = last_streams(model, text)
    diffs = np.stack([streams[p] - streams[n] for p, n in pairs])  # [P, L, d]
    train = diffs[: len(pairs) - settings.holdout]
    held = diffs[len(pairs) - settings.holdout :]
    if not np.any(train):
        raise InputError("each positive text gives the same stream as its negative at every layer: no direction to find (zero norm)")
    directions = mean_direction(train) if settings.method == "mean" else pca_direction(train)
    held_out = held_out_figures(held, directions, settings.seed) if len(held) else dict.fromkeys(HELD_OUT)
    probe = np.stack([np.einsum("ld,ld->l", streams[w], directions) for w in settings.probe]) if settings.probe else None  # [W, L]
    return DirectionResult(model=model.summary(), architecture=model.spec.family, pairs=pairs, method=settings.method, holdout=settings.holdout,
                           seed=settings.seed, directions=directions, train_separation=separation(train, directions), **held_out, probe_words=list(settings.probe), probe=probe,
                           rises=None if probe is None else rises(probe), chance=None if probe is None else 1 / math.factorial(len(settings.probe)))
