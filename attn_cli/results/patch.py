"""`attn patch`'s result: the clean and corrupt logit differences, and what putting back each activation gives."""

import numpy as np

from attn_cli.records import Record
from attn_cli.results.numbers import NUMBER_DIGITS, significant


class PatchResult(Record):
    __slots__ = ("model", "clean_tokens", "corrupt_tokens", "target", "versus", "clean_logit_diff", "corrupt_logit_diff", "resid_pre",
                 "heads", "position")

    def __init__(self, model: dict, clean_tokens: list, corrupt_tokens: list, target: dict, versus: dict, clean_logit_diff: float,
                 corrupt_logit_diff: float, resid_pre: np.ndarray, heads: np.ndarray, position: int):
        self.model = model
        self.clean_tokens, self.corrupt_tokens = clean_tokens, corrupt_tokens
        self.target, self.versus = target, versus  # {"id", "token", "piece"}
        self.clean_logit_diff, self.corrupt_logit_diff = clean_logit_diff, corrupt_logit_diff  # target − versus, unpatched
        self.resid_pre = resid_pre  # [L, n]: the corrupt run with the stream entering layer l at position p put back
        self.heads = heads  # [L, H]: the corrupt run with one head's output at every position put back
        self.position = position  # where the logits are read

    def normalised(self, raw: np.ndarray) -> np.ndarray:
        """(patched − corrupt) / (clean − corrupt): 1 gives back the clean run's difference, 0 changes nothing; NaN when the
        two runs do not differ."""
        gap = self.clean_logit_diff - self.corrupt_logit_diff
        return (raw - self.corrupt_logit_diff) / gap if gap != 0 else np.full_like(raw, np.nan)

    def to_dict(self) -> dict:
        number = lambda a: significant(np.asarray(a, dtype=np.float64), NUMBER_DIGITS).tolist()  # noqa: E731
        return {"model": self.model, "clean_tokens": self.clean_tokens, "corrupt_tokens": self.corrupt_tokens, "position": self.position,
                "target": self.target, "versus": self.versus,
                "clean_logit_diff": number(self.clean_logit_diff), "corrupt_logit_diff": number(self.corrupt_logit_diff),
                "resid_pre": number(self.resid_pre), "heads": number(self.heads),
                "normalised": {"resid_pre": number(self.normalised(self.resid_pre)), "heads": number(self.normalised(self.heads))}}

    def rows(self):
        for l, row in enumerate(self.resid_pre):
            for p, x in enumerate(row):
                yield {"patched": "resid_pre", "layer": l, "position": p, "head": "", "token": self.clean_tokens[p],
                       "logit_diff": float(significant(x, NUMBER_DIGITS)), "normalised": float(significant(self.normalised(np.float64(x)), NUMBER_DIGITS))}
        for l, row in enumerate(self.heads):
            for h, x in enumerate(row):
                yield {"patched": "head", "layer": l, "position": "", "head": h, "token": "",
                       "logit_diff": float(significant(x, NUMBER_DIGITS)), "normalised": float(significant(self.normalised(np.float64(x)), NUMBER_DIGITS))}
