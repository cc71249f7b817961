"""The sense meter's rows: a token's score for each sense before and after the heads."""

from attn_cli.records import ValueRecord
from attn_cli.results.numbers import NUMBER_DIGITS, significant


class SenseRow(ValueRecord):
    """The sense meter for one token: its score for each sense before (E) and after (E') the heads."""

    __slots__ = ("index", "token", "names", "before", "after", "nearest_before", "nearest_after")

    def __init__(self, index: int, token: str, names: list, before: list, after: list, nearest_before: str, nearest_after: str):
        self.index = index
        self.token = token
        self.names = names  # sense names
        self.before = before  # mean cosine of E_i with each sense's probe words
        self.after = after  # the same for E'_i
        self.nearest_before = nearest_before  # the sense scoring highest before
        self.nearest_after = nearest_after  # and after

    @property
    def change(self) -> list:
        return [a - b for a, b in zip(self.after, self.before)]

    def to_dict(self) -> dict:
        import numpy as np

        before, after, change = (significant(np.array(x), NUMBER_DIGITS).tolist() for x in (self.before, self.after, self.change))
        return {
            "index": self.index,
            "token": self.token,
            "senses": [{"name": n, "before": b, "after": a, "change": c} for n, b, a, c in zip(self.names, before, after, change)],
            "nearest_before": self.nearest_before,
            "nearest_after": self.nearest_after,
        }
