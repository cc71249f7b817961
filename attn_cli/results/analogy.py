"""`attn analogy` (softmax's result: attn_cli.lesson; similarity's: attn_cli.similarity)."""

from dataclasses import asdict, dataclass


@dataclass
class ProbeScore:
    key: str
    dot: float  # d . E(key)


@dataclass
class Neighbor:
    key: str
    cosine: float


@dataclass
class Answer:
    key: str
    similarity: float  # 3CosAdd: cosine; 3CosMul: the product ratio


@dataclass
class AnalogyResult:
    a: str
    b: str
    norm: float  # |E(a) - E(b)|
    probes: list[ProbeScore]
    neighbors: list[Neighbor]
    pairs: list[tuple[str, str]]  # (singular, plural) probe pairs shown side by side
    numbers: list[str]  # number-word probes present, in order
    plural_above_singular: bool | None  # None when the probes hold no pair
    plural_exceptions: list[str]  # "singular/plural" pairs where the plural did not score higher
    numbers_increasing: bool | None  # None when fewer than two number words
    numbers_breaks: list[str]  # "two >= three" where the order broke
    c: str | None = None
    method: str | None = None  # "cosadd" | "cosmul" with three words
    answers: list[Answer] | None = None

    def to_dict(self) -> dict:
        out = {
            "a": self.a,
            "b": self.b,
            "norm": self.norm,
            "probes": [asdict(p) for p in self.probes],
            "neighbors": [asdict(n) for n in self.neighbors],
            "plural_above_singular": self.plural_above_singular,
            "plural_exceptions": self.plural_exceptions,
            "numbers_increasing": self.numbers_increasing,
            "numbers_breaks": self.numbers_breaks,
        }
        if self.c is not None:
            out |= {"c": self.c, "method": self.method, "answers": [asdict(x) for x in self.answers or []]}
        return out

    def rows(self):
        """One row per number shown: each probe's dot with d, each nearest key's cosine, each answer's score."""
        base = {"a": self.a, "b": self.b, "c": self.c}
        for rank, p in enumerate(self.probes, 1):
            yield base | {"kind": "probe", "rank": rank, "key": p.key, "measure": "dot", "value": p.dot}
        for rank, n in enumerate(self.neighbors, 1):
            yield base | {"kind": "neighbor", "rank": rank, "key": n.key, "measure": "cosine", "value": n.cosine}
        for rank, x in enumerate(self.answers or [], 1):
            yield base | {"kind": "answer", "rank": rank, "key": x.key, "measure": self.method, "value": x.similarity}
