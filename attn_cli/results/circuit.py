"""`attn circuit L.H`'s result: one head's QK scores over a token set, and what its OV circuit promotes, with baselines."""

import numpy as np

from attn_cli.records import Record
from attn_cli.results.numbers import NUMBER_DIGITS, significant


def number(x) -> float:
    return float(significant(np.float64(x), NUMBER_DIGITS))


class CircuitResult(Record):
    __slots__ = ("model", "layer", "head", "kv_head", "ids", "labels", "source", "distance", "scores", "ov", "promoted_labels", "no_ov", "top",
                 "seed")

    def __init__(self, model: dict, layer: int, head: int, kv_head: int | None, ids: list[int], labels: list[str], source: str, distance: int,
                 scores: np.ndarray, ov: dict | None, promoted_labels: list | None, no_ov: str | None, top: int, seed: int):
        self.model, self.layer, self.head = model, layer, head
        self.kv_head = kv_head  # the key/value head the query head reads (GQA), None without grouped-query attention
        self.ids, self.labels = ids, labels  # the token set
        self.source = source  # "text" (--text's tokens) or "frequent" (the most frequent words that are one token)
        self.distance = distance  # the query this many positions after the key (RoPE)
        self.scores = scores  # [n, n]: query token s (row), key token t (column)
        self.ov = ov  # analysis.circuit.ov_circuit's figures, or None (no output head)
        self.promoted_labels = promoted_labels  # [n, k]: each source's promoted tokens as text
        self.no_ov = no_ov  # why there is no OV circuit into the vocabulary
        self.top = top  # pairs and sources the view lists
        self.seed = seed  # the random baselines' generator

    def ranked_pairs(self, count: int) -> list[tuple[int, int]]:
        """The (query, key) positions in the token set of the `count` highest scores, highest first (ties: in order)."""
        order = np.argsort(-self.scores, axis=None, kind="stable")[:count]
        return [tuple(int(i) for i in np.unravel_index(j, self.scores.shape)) for j in order]

    def qk_dict(self) -> dict:
        return {"distance": self.distance, "pairs": [{"query": self.labels[s], "query_id": self.ids[s], "key": self.labels[t], "key_id": self.ids[t],
                                                       "score": number(self.scores[s, t])} for s, t in self.ranked_pairs(self.scores.size)]}

    def ov_dict(self) -> dict | None:
        if self.ov is None:
            return None
        ov = self.ov
        sources = [{"token": self.labels[i], "id": self.ids[i],
                    "promotes": [{"token": t, "id": int(j), "logit": number(v)} for t, j, v in zip(self.promoted_labels[i], ov["promoted"][i], ov["logits"][i])]}
                   for i in range(len(self.ids))]
        baseline = lambda mean, std, draws: {"mean": number(mean), "std": number(std), "draws": draws, "seed": self.seed}  # noqa: E731
        return {"copying": number(ov["copying"]), "random_copying": baseline(*ov["random_copying"]),
                "positivity": number(ov["positivity"]), "random_positivity": baseline(*ov["random_positivity"]),
                "sources": sources}

    def to_dict(self) -> dict:
        return {"model": self.model, "head": f"{self.layer}.{self.head}", "kv_head": self.kv_head, "tokens": self.source,
                "qk": self.qk_dict(), "ov": self.ov_dict(), "ov_missing": self.no_ov}

    def rows(self):
        """One row per (query, key) pair of the token set, ranked: the QK circuit (the OV circuit is in the JSON)."""
        for rank, pair in enumerate(self.qk_dict()["pairs"], 1):
            yield {"rank": rank, **pair}
