"""`attn heads list`, `train` and `eval`."""

from dataclasses import asdict, dataclass


@dataclass
class HeadInfo:
    name: str
    source: str  # "built-in" or the shipped file
    d_k: int
    trained: bool  # learned from data (False for identity and random)
    description: str
    summary: str | None  # the recorded held-out metric, in words
    metrics: dict  # the recorded metrics, as measured when the head was built

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class HeadsList:
    dimension: int  # d of the vectors the heads were checked against
    default: list  # heads `inspect` uses without --head
    heads: list  # [HeadInfo]

    def to_dict(self) -> dict:
        return {"dimension": self.dimension, "default": self.default, "heads": [h.to_dict() for h in self.heads]}


@dataclass
class HeadTrained:
    path: str
    d_k: int
    steps: int
    seed: int
    mask: str
    links: int
    train_sentences: int
    heldout_sentences: int
    final_loss: float  # attention cross-entropy on the training sentences
    heldout: dict  # link metrics on the held-out sentences ({} when none were held out)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class HeadsEval:
    file: str
    format: str  # "links" | "senses"
    mask: str
    counts: dict  # links: sentences, queries, dropped; senses: cases, skipped, unplaced (skipped for want of a context column); both: unknown (words without a vector, under --oov skip|zero)
    patterns: list  # [{"name", "kind": "head" | "heads" | "baseline", "about", measures...}]
    sense_set: str | None = None  # senses: where the senses and probe words came from
    cases: list | None = None  # senses, when asked: the heads' result case by case (evaluation.case_rows)

    def to_dict(self) -> dict:
        out = {"file": self.file, "format": self.format, "mask": self.mask, **self.counts}
        if self.sense_set is not None:
            out["sense_set"] = self.sense_set
        out["rows"] = self.patterns
        if self.cases is not None:
            out["case_rows"] = self.cases
        return out

    def rows(self):
        """CSV/TSV: one row per case when they were asked for, else one per pattern (the heads and each
        baseline), every row with the same columns (empty where a pattern has no such measure)."""
        base = {"file": self.file, "mask": self.mask}
        if self.cases is not None:  # a case's pulls as one cell: "token +0.123; token -0.045"
            yield from (base | row | ({"pulls": "; ".join(f"{p['token']} {p['pull']:+.3f}" for p in row["pulls"])} if "pulls" in row else {})
                        for row in self.cases)
            return
        columns = list(dict.fromkeys(k for row in self.patterns for k in row))
        for row in self.patterns:
            yield base | {k: row.get(k) for k in columns}
