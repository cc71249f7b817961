"""`attn compare`'s result: two runs' streams layer by layer, their next tokens, a head's maps, their continuations."""

import numpy as np

from attn_cli.records import Record
from attn_cli.results.direction import number


def masked(matrix: np.ndarray) -> list:  # [m, m] with NaN where a query cannot see -> rows with null there
    return [[None if x != x else x for x in row] for row in number(matrix)]


class CompareResult(Record):
    __slots__ = ("model", "texts", "tokens", "aligned", "labels", "first", "cosine", "baseline", "steered", "kl", "kl_scale", "top_a",
                 "top_b", "rose", "fell", "head", "maps", "continuations")

    def __init__(self, model: dict, texts: tuple, tokens: tuple, aligned: str, labels: tuple, first: int | None, cosine: np.ndarray,
                 baseline: np.ndarray | None, steered: list, kl: tuple, kl_scale: float | None, top_a: list, top_b: list, rose: list,
                 fell: list, head: tuple | None, maps: tuple | None, continuations: dict | None):
        self.model = model
        self.texts, self.tokens = texts, tokens  # (A, B): the texts, and each one's tokens as a reader sees them
        self.aligned = aligned  # "token" or "word": what a position of the comparison is
        self.labels = labels  # (A's, B's): the aligned positions' labels (a token, or a word)
        self.first = first  # the first aligned position whose inputs differ (0 when B is steered); None: identical runs
        self.cosine = cosine  # [L, m]: cos of A's and B's resid_post[l] at each aligned position
        self.baseline = baseline  # [L]: the mean cos of A's stream at p with A's at p + 1 (p >= 1); None: one position
        self.steered = steered  # [{"file", "scale", "layers"}]: what was added to run B
        self.kl = kl  # (KL(A‖B), KL(B‖A)) of the next-token distributions, nats
        self.kl_scale = kl_scale  # KL(A at its last position ‖ A one position before); None: one position
        self.top_a, self.top_b = top_a, top_b  # [{"id", "token", "text", "a", "b"}]: A's most probable, B's
        self.rose, self.fell = rose, fell  # the same rows: the largest p_B − p_A first, the largest p_A − p_B first
        self.head = head  # (layer, head) or None
        self.maps = maps  # (A's, B's) [m, m] attention of the head over the aligned positions; None: no head
        self.continuations = continuations  # {"a", "b": {"ids", "tokens", "texts"}, "part": step or None}; None: not asked

    def last(self) -> np.ndarray:  # [L]: the cosine at the last aligned position
        return self.cosine[:, -1]

    def mean_from(self) -> int | None:
        """The first position the mean is over: the first that differs, never position 0 when there are others (the first
        position's stream is the attention sink's, near the same in any two texts past the first layers: cosine 1 for free)."""
        return None if self.first is None else self.first if self.cosine.shape[1] == 1 else max(self.first, 1)

    def mean(self) -> np.ndarray | None:  # [L]: the mean cosine over the positions from mean_from()
        return None if self.first is None else self.cosine[:, self.mean_from() :].mean(axis=1)

    def ratio(self) -> np.ndarray | None:  # [L]: (1 - mean) / (1 - nb): 0 the same, 1 as far apart as A's neighbouring tokens
        mean = self.mean()
        if mean is None or self.baseline is None:
            return None
        return np.divide(1 - mean, 1 - self.baseline, out=np.full(len(mean), np.nan), where=self.baseline < 1)

    def apart(self) -> list[int]:
        """The layers where A and B are further apart (mean cosine lower) than A's neighbouring positions."""
        mean = self.mean()
        if mean is None or self.baseline is None:
            return []
        return [int(l) for l in np.flatnonzero(mean < self.baseline)]

    def layer_dict(self, l: int) -> dict:
        mean = self.mean()
        return {"layer": l, "cosine_last": number(self.last()[l]), "cosine_mean": None if mean is None else number(mean[l]),
                "neighbours_cosine": None if self.baseline is None else number(self.baseline[l]),
                "distance_ratio": None if self.ratio() is None else number(self.ratio()[l])}

    def to_dict(self) -> dict:
        out = {
            "model": self.model, "a": {"text": self.texts[0], "tokens": self.tokens[0]}, "b": {"text": self.texts[1], "tokens": self.tokens[1]},
            "steered": self.steered, "aligned": self.aligned, "positions": {"a": self.labels[0], "b": self.labels[1]}, "first_difference": self.first,
            "mean_from": self.mean_from(),
            "layers": [self.layer_dict(l) | {"cosine": number(self.cosine[l])} for l in range(len(self.cosine))],
            "apart_layers": self.apart(),
            "next_token": {"kl_a_b": number(self.kl[0]), "kl_b_a": number(self.kl[1]), "kl_a_previous": number(self.kl_scale),
                           "top_a": self.top_a, "top_b": self.top_b, "rose": self.rose, "fell": self.fell},
        }
        if self.maps is not None:
            a, b = self.maps
            out["head"] = {"layer": self.head[0], "head": self.head[1], "a": masked(a), "b": masked(b), "difference": masked(b - a)}
        if self.continuations is not None:
            out["continuations"] = self.continuations
        return out

    def rows(self):
        for l in range(len(self.cosine)):
            yield self.layer_dict(l)
