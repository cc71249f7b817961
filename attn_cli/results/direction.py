"""`attn direction`'s result: a direction per layer, its norm, how well it orders held-out pairs beside a random one, the probe."""

import numpy as np

from attn_cli.records import Record
from attn_cli.results.numbers import NUMBER_DIGITS, significant


def number(a):
    return None if a is None else significant(np.asarray(a, dtype=np.float64), NUMBER_DIGITS).tolist()


class DirectionResult(Record):
    __slots__ = ("model", "architecture", "pairs", "method", "holdout", "seed", "directions", "train_separation", "separation", "baseline",
                 "baseline_high", "cosine", "random_cosine", "probe_words", "probe", "rises", "chance")

    def __init__(self, model: dict, architecture: str, pairs: list, method: str, holdout: int, seed: int, directions: np.ndarray,
                 train_separation: np.ndarray, separation: np.ndarray | None, baseline: np.ndarray | None, baseline_high: np.ndarray | None,
                 cosine: np.ndarray | None, random_cosine: np.ndarray | None, probe_words: list,
                 probe: np.ndarray | None, rises: np.ndarray | None, chance: float | None):
        self.model, self.architecture = model, architecture  # architecture: the control vector's model_hint
        self.pairs = pairs  # [(positive, negative)]; the last `holdout` are held out
        self.method, self.holdout, self.seed = method, holdout, seed
        self.directions = directions  # [L, d] float64: the direction at resid_post[l]
        self.train_separation = train_separation  # [L]: the fraction of the training pairs it orders right
        self.separation = separation  # [L]: the same over the held-out pairs (None: none held out)
        self.baseline = baseline  # [L]: random directions of the same norm over the held-out pairs, the mean
        self.baseline_high = baseline_high  # [L]: and their 95th percentile
        self.cosine = cosine  # [L]: cosine of v with the held-out pairs' mean difference
        self.random_cosine = random_cosine  # [L]: the 95th percentile of |that cosine| for the random directions
        self.probe_words = probe_words
        self.probe = probe  # [W, L]: each probe word's last-token stream . direction
        self.rises = rises  # [L] bool: the probe's projections increase strictly along the words
        self.chance = chance  # 1 / W!: how often W values in a random order rise

    def norms(self) -> np.ndarray:  # [L]
        return np.linalg.norm(self.directions, axis=1)

    def rising_layers(self) -> list[int]:
        return [] if self.rises is None else [int(l) for l in np.flatnonzero(self.rises)]

    def to_dict(self) -> dict:
        return {
            "model": self.model, "architecture": self.architecture, "method": self.method, "seed": self.seed,
            "pairs": [{"positive": p, "negative": n, "held_out": i >= len(self.pairs) - self.holdout} for i, (p, n) in enumerate(self.pairs)],
            "layers": [self.layer_dict(l) for l in range(len(self.directions))],
            "probe": None if self.probe is None else {"words": self.probe_words, "rising_layers": self.rising_layers(), "chance": self.chance},
        }

    def layer_dict(self, l: int) -> dict:
        row = {"layer": l, "norm": number(self.norms()[l]), "train_separation": number(self.train_separation[l]),
               "separation": None if self.separation is None else number(self.separation[l]),
               "random_separation": None if self.baseline is None else number(self.baseline[l]),
               "random_separation_p95": None if self.baseline_high is None else number(self.baseline_high[l]),
               "cosine": None if self.cosine is None else number(self.cosine[l]),
               "random_abs_cosine_p95": None if self.random_cosine is None else number(self.random_cosine[l])}
        if self.probe is not None:
            row["probe"] = number(self.probe[:, l])
            row["rises"] = bool(self.rises[l])
        return row

    def rows(self):
        for l in range(len(self.directions)):
            row = self.layer_dict(l)
            if self.probe is not None:
                row.update({f"probe:{w}": x for w, x in zip(self.probe_words, row.pop("probe"))})
            yield row
