"""`attn heads stats`'s result: each head's figures over a corpus, and even attention's beside them."""

from dataclasses import dataclass

from attn_cli.results.numbers import NUMBER_DIGITS, significant

FIGURES = ("entropy", "distance", "first", "special", "self", "previous",
           "detect_previous", "detect_duplicate", "detect_induction", "detect_first", "detect_special", "detect_self")


def rounded(row: dict) -> dict:
    return {k: None if v is None else float(significant(v, NUMBER_DIGITS)) if isinstance(v, float) else v for k, v in row.items()}


@dataclass
class HeadStats:
    model: str
    layers: int
    heads: int  # per layer
    error: str  # --error, the detector's measure: "mul" | "abs" (JSON: "measure")
    exclude_bos: bool
    exclude_current: bool
    sentences: int  # scored
    failed: int  # lines that failed (said on stderr as they did)
    blank: int
    queries: int  # tokens of the sentences scored: every one is a query of every head
    detect_sentences: dict  # pattern -> sentences that have it (duplicate, induction: those with a repeated token)
    per_head: list  # [{"layer", "head", FIGURES...}] in layer, head order (None: not defined)
    even: dict  # FIGURES of even attention over the keys each query sees
    sorted_by: str | None = None  # the figure per_head is ordered by, largest first (None: layer, head order)

    def grid(self, name: str):  # -> [L, H] float64, NaN where undefined
        import numpy as np

        out = np.full((self.layers, self.heads), np.nan)
        for r in self.per_head:
            if r[name] is not None:
                out[r["layer"], r["head"]] = r[name]
        return out

    def sorted(self, name: str) -> "HeadStats":
        """The same figures, the heads ordered by `name` largest first (ties: layer, then head; undefined last)."""
        from dataclasses import replace

        order = sorted(self.per_head, key=lambda r: (r[name] is None, -(r[name] or 0.0), r["layer"], r["head"]))
        return replace(self, per_head=order, sorted_by=name)

    def to_dict(self) -> dict:
        return {"model": self.model, "measure": self.error, "exclude_bos": self.exclude_bos, "exclude_current": self.exclude_current,
                "sentences": self.sentences, "failed": self.failed, "blank": self.blank, "queries": self.queries,
                "detect_sentences": self.detect_sentences, "sorted_by": self.sorted_by, "heads": [rounded(r) for r in self.per_head],
                "even": rounded(self.even)}

    def rows_for_files(self):
        """Every head's row, then even attention's (layer and head empty, baseline "even"): CSV, TSV and Parquet."""
        for row in self.per_head:
            yield {"layer": row["layer"], "head": row["head"], "baseline": None, **{k: row[k] for k in FIGURES}}
        yield {"layer": None, "head": None, "baseline": "even", **{k: self.even[k] for k in FIGURES}}

    def rows(self):
        yield from (rounded(r) for r in self.rows_for_files())
