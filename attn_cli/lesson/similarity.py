"""`attn similarity`: dot products and cosines of word pairs, read against random pairs of frequent words.

A cosine means little alone: in GloVe two random frequent words already have a cosine of about 0.2.
So each pair's cosine is placed among the cosines of BASELINE_PAIRS random pairs drawn (fixed seed)
from the BASELINE_KEYS most frequent keys of the same vectors: its percentile says how unusual it is.
A pair is read as aligned above the ALIGNED_PERCENTILE, opposed below the OPPOSED_PERCENTILE, and
unrelated in between (as aligned as two words picked at random). The dot product is written out as
the lesson does: the component products a_i b_i with the largest magnitude, and what the rest add.
"""

from itertools import combinations

import numpy as np

from attn_cli.records import ValueRecord
from attn_cli.vectors.store import DATA_DIR

BASELINE_KEYS = 10_000  # random pairs are drawn among this many most frequent keys
BASELINE_PAIRS = 20_000
BASELINE_SEED = 0
SAVED_PAIRS = DATA_DIR / "similarity_pairs.npy"  # the default draw, [BASELINE_PAIRS, 2] uint16
PAIR_BLOCK = 2048  # random pairs whose cosines are computed at a time
ALIGNED_PERCENTILE = 95.0  # a cosine above 95% of random pairs' reads as aligned
OPPOSED_PERCENTILE = 5.0  # below 95% of them: opposed
EXAMPLE_PERCENTILES = {"aligned": 99.5, "unrelated": 50.0, "opposed": 0.5}  # where the suggested pairs are taken from
TOP_TERMS = 5  # component products written out
READINGS = ("aligned", "unrelated", "opposed", "undefined")


# The result objects are plain classes, not dataclasses: each dataclass compiles its methods when
# its module is imported (~0.3 ms a class, on every start of the command).


class DotTerm(ValueRecord):
    __slots__ = ("component", "a", "b", "product")

    def __init__(self, component: int, a: float, b: float, product: float):
        self.component = component  # i, 0-based
        self.a = a  # a_i
        self.b = b  # b_i
        self.product = product  # a_i b_i

    def to_dict(self) -> dict:
        return {"component": self.component, "a": self.a, "b": self.b, "product": self.product}


class PairSimilarity(ValueRecord):
    __slots__ = ("a", "b", "dot", "cosine", "alignment", "percentile", "reading", "terms", "rest", "rest_count")

    def __init__(self, a: str, b: str, dot: float, cosine: float | None, alignment: str, percentile: float | None = None,
                 reading: str = "undefined", terms: list[DotTerm] | None = None, rest: float = 0.0, rest_count: int = 0):
        self.a = a
        self.b = b
        self.dot = dot
        self.cosine = cosine  # None: a zero vector, no direction
        self.alignment = alignment  # the sign of the cosine (neighbors.alignment): "aligned" | "unrelated" | "opposed" | "undefined"
        self.percentile = percentile  # % of the baseline's random pairs with a smaller cosine
        self.reading = reading  # against the baseline: "aligned" | "unrelated" | "opposed" | "undefined"
        self.terms = [] if terms is None else terms  # the largest |a_i b_i|, largest first
        self.rest = rest  # the sum of the other products: dot = sum(terms) + rest
        self.rest_count = rest_count

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "dot": self.dot, "cosine": self.cosine, "alignment": self.alignment,
                "percentile": self.percentile, "reading": self.reading, "terms": [t.to_dict() for t in self.terms],
                "rest": self.rest, "rest_count": self.rest_count}


class Baseline(ValueRecord):
    __slots__ = ("keys", "pairs", "seed", "percentiles", "examples")

    def __init__(self, keys: int, pairs: int, seed: int, percentiles: dict[str, float], examples: dict[str, list[str]]):
        self.keys = keys  # drawn among the `keys` most frequent keys
        self.pairs = pairs  # random pairs with a defined cosine
        self.seed = seed
        self.percentiles = percentiles  # "5", "50", "95" -> cosine
        self.examples = examples  # reading -> a sampled pair of words that reads so

    def to_dict(self) -> dict:
        return {"keys": self.keys, "pairs": self.pairs, "seed": self.seed, "percentiles": dict(self.percentiles),
                "examples": {reading: list(pair) for reading, pair in self.examples.items()}}


class SimilarityResult(ValueRecord):
    __slots__ = ("words", "norms", "pairs", "baseline")

    def __init__(self, words: list[str], norms: list[float], pairs: list[PairSimilarity], baseline: Baseline | None = None):
        self.words = words
        self.norms = norms
        self.pairs = pairs
        self.baseline = baseline

    def to_dict(self) -> dict:
        return {"words": list(self.words), "norms": list(self.norms), "pairs": [p.to_dict() for p in self.pairs],
                "baseline": None if self.baseline is None else self.baseline.to_dict()}

    def rows(self):
        """One row per pair, with both words' norms (the component products are in the JSON)."""
        norm = dict(zip(self.words, self.norms))
        for p in self.pairs:
            yield {"a": p.a, "b": p.b, "dot": p.dot, "cosine": p.cosine, "alignment": p.alignment, "percentile": p.percentile,
                   "reading": p.reading, "norm_a": norm[p.a], "norm_b": norm[p.b]}


def random_pairs(k: int, n_pairs: int, seed: int) -> np.ndarray:  # -> [n_pairs, 2] int64 row numbers below k
    """np.random.default_rng(seed).integers(0, k, size=(n_pairs, 2)). The default draw (BASELINE_KEYS,
    BASELINE_PAIRS, BASELINE_SEED) is read from SAVED_PAIRS, the same numbers (tests/test_similarity.py
    draws them again): importing numpy.random costs more than the rest of the baseline (~10 ms; it
    loads OpenSSL, through the secrets module)."""
    if (k, n_pairs, seed) == (BASELINE_KEYS, BASELINE_PAIRS, BASELINE_SEED):
        return np.load(SAVED_PAIRS, allow_pickle=False).astype(np.int64)
    return np.random.default_rng(seed).integers(0, k, size=(n_pairs, 2))


def random_pair_cosines(unit: np.ndarray, n_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:  # [k, d] -> [p] cosines, [p, 2] indices
    """Cosines of `n_pairs` random pairs of distinct rows of `unit` (rows of norm 1; NaN rows, zero vectors, dropped)."""
    pairs = random_pairs(len(unit), n_pairs, seed)  # [p, 2]
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    cosines = np.empty(len(pairs))  # [p]
    for start in range(0, len(pairs), PAIR_BLOCK):  # a block at a time: [p, d] temporaries would be 16 MB of fresh pages
        block = pairs[start : start + PAIR_BLOCK]
        np.einsum("pd,pd->p", unit[block[:, 0]], unit[block[:, 1]], out=cosines[start : start + PAIR_BLOCK])  # [b, d] . [b, d] -> [b]
    defined = np.isfinite(cosines)
    return np.clip(cosines[defined], -1.0, 1.0), pairs[defined]


def baseline(vectors, keys: int = BASELINE_KEYS, n_pairs: int = BASELINE_PAIRS, seed: int = BASELINE_SEED) -> tuple[Baseline, np.ndarray]:
    """The random-pair baseline of these vectors, and its cosines sorted (for percentiles)."""
    k = min(keys, len(vectors))
    m = np.array(vectors.vectors[:k], dtype=np.float64)  # [k, d], a copy: scaled in place below
    norms = np.sqrt(np.add.reduce(m * m, axis=1, keepdims=True))  # [k, 1]: np.linalg.norm's sum, to the bit, without its extra [k, d] copy (x.conj())
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.divide(m, norms, out=m, where=norms > 0)  # [k, d]
    unit[~(norms[:, 0] > 0)] = np.nan  # a zero (or NaN) vector has no direction
    cosines, pairs = random_pair_cosines(unit, n_pairs, seed)
    if cosines.size == 0:
        return Baseline(k, 0, seed, {}, {}), cosines
    order = np.argsort(cosines, kind="stable")
    sorted_cosines = cosines[order]
    examples = {}
    for reading_, pct in EXAMPLE_PERCENTILES.items():
        pair = example_pair(vectors.key_at, pairs[order], round(pct / 100 * (len(order) - 1)))
        if pair:
            examples[reading_] = pair
    percentiles = {f"{p:g}": sorted_percentile(sorted_cosines, p) for p in (OPPOSED_PERCENTILE, 50, ALIGNED_PERCENTILE)}
    return Baseline(k, int(cosines.size), seed, percentiles, examples), sorted_cosines


def sorted_percentile(sorted_values: np.ndarray, p: float) -> float:  # [n] ascending, n >= 1
    """np.percentile(values, p) (linear, to the bit) of values already sorted: no partition, and
    none of the set-up np.percentile's first call costs (~10 ms, in a command that is otherwise quick)."""
    at = (len(sorted_values) - 1) * (p / 100)  # where the percentile falls between two ranks
    lo = int(np.floor(at))
    a, b = float(sorted_values[lo]), float(sorted_values[min(lo + 1, len(sorted_values) - 1)])
    t = at - lo
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t  # NumPy's _lerp: exact at both ends


def example_pair(key_at, ranked_pairs: np.ndarray, at: int) -> list[str] | None:  # ranked_pairs: [p, 2], by cosine
    """The sampled pair nearest rank `at` whose two keys are plain words (easy to type in a shell).
    `key_at(row)` gives a key without building the list of every key (400,000 keys: ~40 ms)."""
    for step in range(min(len(ranked_pairs), 200)):
        for k in (at - step, at + step):
            if 0 <= k < len(ranked_pairs):
                a, b = (key_at(int(i)) for i in ranked_pairs[k])
                if a.isalpha() and b.isalpha():
                    return [a, b]
    return None


def percentile_of(cosine: float, sorted_cosines: np.ndarray) -> float:
    """% of the baseline cosines below `cosine` (ties count half)."""
    below = np.searchsorted(sorted_cosines, cosine, side="left")
    at_or_below = np.searchsorted(sorted_cosines, cosine, side="right")
    return float(100.0 * (below + at_or_below) / 2 / len(sorted_cosines))


def reading(percentile: float | None) -> str:
    if percentile is None:
        return "undefined"
    if percentile >= ALIGNED_PERCENTILE:
        return "aligned"
    if percentile <= OPPOSED_PERCENTILE:
        return "opposed"
    return "unrelated"


def dot_terms(a: np.ndarray, b: np.ndarray, top: int = TOP_TERMS) -> tuple[list[DotTerm], float, int]:  # [d], [d]
    """The products a_i b_i of largest magnitude, and the sum and count of the others."""
    products = a * b  # [d]
    order = np.argsort(-np.abs(products), kind="stable")
    shown, others = order[:top], order[top:]
    terms = [DotTerm(int(i), float(a[i]), float(b[i]), float(products[i])) for i in shown]
    return terms, float(products[others].sum()), int(others.size)


def compare(vectors, words: list[str]) -> SimilarityResult:
    """Every pair of `words`: dot, cosine, its place among random pairs, and the dot product written out."""
    from attn_cli.lesson import directions as nb
    from attn_cli.vectors.tokens import embed

    nb.require_vectors(vectors, words)
    m = embed(words, vectors).vectors  # [w, d]
    dots, cosines = nb.similarities(m)  # [w, w], [w, w] (NaN: undefined, a zero vector)
    base, sorted_cosines = baseline(vectors)
    pairs = []
    for i, j in combinations(range(len(words)), 2):
        cosine = None if np.isnan(cosines[i, j]) else float(cosines[i, j])
        pct = percentile_of(cosine, sorted_cosines) if cosine is not None and sorted_cosines.size else None
        terms, rest, rest_count = dot_terms(m[i], m[j])
        pairs.append(PairSimilarity(words[i], words[j], float(dots[i, j]), cosine, nb.alignment(cosine), pct, reading(pct), terms, rest, rest_count))
    return SimilarityResult(words=list(words), norms=np.linalg.norm(m, axis=1).tolist(), pairs=pairs, baseline=base if base.pairs else None)
