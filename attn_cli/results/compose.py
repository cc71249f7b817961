"""`attn heads compose`'s result: Q-, K- and V-composition scores of every (earlier head, later head) pair, and the baseline."""

import numpy as np

from attn_cli.records import Record
from attn_cli.results.numbers import NUMBER_DIGITS, significant

MODES = ("q", "k", "v")


def number(x: float) -> float:
    return float(significant(np.float64(x), NUMBER_DIGITS))


class CompositionResult(Record):
    __slots__ = ("model", "scores", "baseline", "draws", "seed", "to", "mode", "top", "folded")

    def __init__(self, model: dict, scores: dict, baseline: dict, draws: int, seed: int, to: tuple[int, int], mode: str, top: int, folded: str):
        self.model = model
        self.scores = scores  # mode ("q", "k", "v") -> [L, H, L, H]: [l1, h1, l2, h2], NaN unless l1 < l2
        self.baseline = baseline  # mode -> (mean, standard deviation) over random heads' pairs
        self.draws, self.seed = draws, seed  # random pairs of the baseline, their generator's seed
        self.to = to  # (layer, head): the later head the view maps
        self.mode = mode  # the mode the view maps ("q", "k" or "v")
        self.top = top  # pairs listed per mode in the view
        self.folded = folded  # what was folded into the matrices (analysis.compose.folded_note)

    def pairs(self) -> list[tuple[int, int, int, int]]:
        """Every (l1, h1, l2, h2) with l1 < l2, in order."""
        L, H = self.scores["k"].shape[:2]
        return [(l1, h1, l2, h2) for l2 in range(L) for h2 in range(H) for l1 in range(l2) for h1 in range(H)]

    def ranked(self, mode: str, count: int) -> list[tuple[int, int, int, int]]:
        """The `count` pairs of highest `mode` score."""
        s = self.scores[mode]
        flat = np.where(np.isnan(s), -np.inf, s).ravel()
        order = np.argsort(-flat, kind="stable")[: min(count, int(np.sum(np.isfinite(flat))))]
        return [tuple(int(i) for i in np.unravel_index(j, s.shape)) for j in order]

    def median(self, mode: str) -> float:
        """The median score of the model's own pairs."""
        return float(np.nanmedian(self.scores[mode]))

    def z(self, mode: str, score: float) -> float:
        """How many of the baseline's standard deviations a score is above its mean."""
        mean, std = self.baseline[mode]
        return (score - mean) / std if std > 0 else float("nan")

    def pair_dicts(self) -> list[dict]:
        """Every pair as --json writes it, its figures rounded once for all (significant() on whole arrays)."""
        pairs = self.pairs()
        index = tuple(np.array(pairs).T) if pairs else ()
        columns = {m: significant(self.scores[m][index], NUMBER_DIGITS).tolist() if pairs else [] for m in MODES}
        return [{"from": f"{l1}.{h1}", "to": f"{l2}.{h2}", "q": q, "k": k, "v": v}
                for (l1, h1, l2, h2), q, k, v in zip(pairs, columns["q"], columns["k"], columns["v"])]

    def to_dict(self) -> dict:
        return {"model": self.model, "folded": self.folded,
                "baseline": {"draws": self.draws, "seed": self.seed, **{m: {"mean": number(mean), "std": number(std)} for m, (mean, std) in self.baseline.items()}},
                "median": {m: number(self.median(m)) for m in MODES},
                "pairs": self.pair_dicts()}

    def rows(self):
        yield from self.pair_dicts()
