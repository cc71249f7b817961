"""`attn heads detect`'s result: every head's score on each pattern, best first, with the baselines beside them."""

from dataclasses import dataclass

from attn_cli.results.numbers import NUMBER_DIGITS, significant


def score(x) -> float | None:
    """A score as JSON and CSV write it: 6 significant digits; None where it is undefined."""
    return None if x != x else float(significant(x, NUMBER_DIGITS))


@dataclass
class HeadsDetected:
    model: str
    mask: str  # "none" (an encoder) | "causal"
    layers: int
    heads: int  # per layer
    error: str  # --error, the score's measure: "mul" (share of weight on the pattern) | "abs" (1 - sum|A - P| / n); JSON and CSV: "measure"
    exclude_bos: bool
    exclude_current: bool
    text: dict | None  # {"source", "sentences"}: where the text patterns were scored (None: none asked for)
    repeated: dict | None  # {"length", "seed"}: the random sequence, repeated once (None: neither duplicate nor induction asked for)
    found: dict  # pattern -> {"heads": [L, H] mean scores (NaN: never scored), "even", "random", "sequences"}

    def ranked(self, name: str) -> list[dict]:
        """The heads on one pattern, best first (ties: by layer, then head); unscored heads last."""
        grid = self.found[name]["heads"]
        rows = [{"layer": l, "head": h, "score": score(grid[l, h])} for l in range(self.layers) for h in range(self.heads)]
        return sorted(rows, key=lambda r: (r["score"] is None, -(r["score"] or 0.0), r["layer"], r["head"]))

    def baselines(self, name: str) -> dict:
        found = self.found[name]
        return {"even": score(found["even"]), "random": score(found["random"])}

    def to_dict(self) -> dict:
        out = {"model": self.model, "mask": self.mask, "measure": self.error, "exclude_bos": self.exclude_bos,
               "exclude_current": self.exclude_current, "text": self.text, "repeated": self.repeated,
               "sequences": {name: found["sequences"] for name, found in self.found.items()}}
        out["patterns"] = {name: self.ranked(name) for name in self.found}
        out["baselines"] = {name: self.baselines(name) for name in self.found}
        return out

    def rows(self):
        """CSV/TSV: one row per (pattern, head), best first within a pattern, its baselines on every row."""
        for name in self.found:
            base = self.baselines(name)
            for rank, row in enumerate(self.ranked(name), 1):
                yield {"pattern": name, "rank": rank, **row, "even": base["even"], "random": base["random"], "measure": self.error,
                       "sequences": self.found[name]["sequences"]}
