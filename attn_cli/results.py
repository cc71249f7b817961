"""One result object per command: it feeds both the JSON output (`to_dict`) and the Rich view.

Each section belongs to one command family; add new results to the section they belong to.
"""

from dataclasses import asdict, dataclass


# --- vectors -------------------------------------------------------------------------------


@dataclass
class VectorsInfo:
    path: str
    format: str
    keys: int
    dimension: int
    dtype: str
    file_bytes: int
    load_seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class VectorsConverted:
    source: str
    source_format: str
    destination: str
    keys: int
    dimension: int
    dtype: str
    file_bytes: int
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)


# --- softmax / analogy / similarity --------------------------------------------------------


@dataclass
class SoftmaxResult:
    values: list[float]  # as given; may hold +-inf (JSON: null)
    temperature: float  # 0 = argmax
    exps: list[float]  # exp((value - max) / T); 1 for a +inf value, and at T = 0 the limit (1 at the max, else 0)
    probabilities: list[float]
    log_probabilities: list[float] | None = None  # with --log; -inf where the probability is 0 (JSON: null)

    @property
    def total(self) -> float:
        return float(sum(self.exps))

    def to_dict(self) -> dict:
        out = {"values": self.values, "temperature": self.temperature, "probabilities": self.probabilities}
        if self.log_probabilities is not None:
            out["log_probabilities"] = self.log_probabilities
        return out


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


@dataclass
class PairSimilarity:
    a: str
    b: str
    dot: float
    cosine: float
    alignment: str  # "aligned" | "unrelated" | "opposed" (neighbors.alignment)


@dataclass
class SimilarityResult:
    words: list[str]
    norms: list[float]
    pairs: list[PairSimilarity]

    def to_dict(self) -> dict:
        return {"words": self.words, "norms": self.norms, "pairs": [asdict(p) for p in self.pairs]}


# --- inspect -------------------------------------------------------------------------------

WEIGHT_DIGITS = 7  # 7 significant digits keep every row's sum within 5e-7 of 1
NUMBER_DIGITS = 6  # scores, norms, embeddings


_TENS: list = []  # [10^0 .. 10^22] as one array, built on first use


def _powers_of_ten():
    if not _TENS:
        import numpy as np

        _TENS.append(np.array([float(10**i) for i in range(23)]))  # exact: every 10^i up to 10^22 is a double
    return _TENS[0]


def significant(a, digits):
    """`a` rounded to `digits` significant digits (an int, or one per element); floats that print
    short (0.42, not 0.41999...). Zero, inf and NaN pass through unchanged.
    """
    import numpy as np

    a = np.asarray(a, dtype=np.float64)
    size = np.abs(a)
    exponent = np.log10(size, out=np.full_like(size, -np.inf), where=size > 0)  # 0 and NaN -> -inf: 22 decimals
    decimals = np.fmin(np.fmax(digits - 1 - np.floor(exponent), 0), 22)  # inf -> 0 decimals
    scale = _powers_of_ten()[decimals.astype(np.intp)]
    return np.rint(a * scale) / scale


def _with_nulls(a, hidden) -> list:
    """Rows of numbers with None where `hidden` is True (masked entries)."""
    rows = a.tolist()
    if hidden is None:
        return rows
    return [[None if h else v for v, h in zip(row, hrow)] for row, hrow in zip(rows, hidden.tolist())]


@dataclass
class HeadView:
    """One head over one sentence: its matrices at every step (queries are rows)."""

    name: str
    d_k: int
    noise: bool  # untrained random weights: the pattern means nothing
    description: str
    scores: object  # [n, n] Q K^T before scaling
    scaled: object  # [n, n] Q K^T / sqrt(d_k), -inf where masked
    weights: object  # [n, n] softmax over keys; rows sum to 1
    allowed: object  # [n, n] bool, True where the query may see the key; None = every key

    def stage_matrix(self, stage: str):
        """The matrix at `stage` with NaN where masked (for the raw scores: where the mask will hide them)."""
        import numpy as np

        m = {"weights": self.weights, "scores": self.scores}.get(stage, self.scaled)
        return m if self.allowed is None else np.where(self.allowed, m, np.nan)


@dataclass
class InspectResult:
    tokens: list
    unknown: list  # words without a vector (skipped or zeroed under --oov)
    mask: str  # "causal" | "none"
    position: bool
    heads: list  # [HeadView]
    e: object  # [n, d] input embeddings (word vector + position)
    delta: object  # [n, d] summed Delta E of every head
    e_prime: object  # [n, d] E + Delta E
    stage: str | None = None  # with --stage: report each head's matrix at that step
    with_embeddings: bool = False
    near_input: list | None = None  # keys nearest to each E (the token itself left out)
    near_output: list | None = None  # keys nearest to each E'

    @property
    def input_norms(self):
        import numpy as np

        return np.linalg.norm(self.e, axis=1)

    @property
    def delta_norms(self):
        import numpy as np

        return np.linalg.norm(self.delta, axis=1)

    @property
    def cosines(self):  # cos(E_i, E'_i)
        import numpy as np

        dots = np.sum(self.e * self.e_prime, axis=1)
        norms = np.linalg.norm(self.e, axis=1) * np.linalg.norm(self.e_prime, axis=1)
        return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)

    def rounded_numbers(self) -> tuple[list, list]:
        """Every head's weights and the delta norms, rounded in one pass (it runs once per streamed line)."""
        import numpy as np

        n, n_heads = len(self.tokens), len(self.heads)
        flat = np.concatenate([h.weights.ravel() for h in self.heads] + [self.delta_norms])
        digits = np.repeat([WEIGHT_DIGITS, NUMBER_DIGITS], [n * n * n_heads, n])
        flat = significant(flat, digits)
        return flat[: n * n * n_heads].reshape(n_heads, n, n).tolist(), flat[n * n * n_heads :].tolist()

    def head_dict(self, head: HeadView, weights: list) -> dict:
        out = {"name": head.name, "d_k": head.d_k, "weights": weights}
        if self.stage:
            matrix = head.stage_matrix("scores" if self.stage == "scores" else "masked")
            hidden = None if head.allowed is None else ~head.allowed
            out["scores"] = _with_nulls(significant(matrix, NUMBER_DIGITS), hidden)
        return out

    def to_dict(self) -> dict:
        weights, delta_norms = self.rounded_numbers()
        out = {
            "tokens": self.tokens,
            "mask": self.mask,
            "position": self.position,
            "heads": [self.head_dict(h, w) for h, w in zip(self.heads, weights)],
            "delta_norms": delta_norms,
        }
        if self.with_embeddings:
            out["embeddings"] = {
                "input": significant(self.e, NUMBER_DIGITS).tolist(),
                "output": significant(self.e_prime, NUMBER_DIGITS).tolist(),
            }
        return out



# --- heads ---------------------------------------------------------------------------------


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
