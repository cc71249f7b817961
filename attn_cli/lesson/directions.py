"""Directions, dot products and nearest neighbours over word vectors, in plain NumPy.

Speaks gensim's vocabulary: `most_similar(positive, negative, topn)` is 3CosAdd and
`most_similar_cosmul` is 3CosMul (Levy and Goldberg 2014), with gensim's exact formulas,
so the answers match gensim's without importing it. Search is a matrix product over the
vectors scaled to norm 1, a block of rows at a time (`Vectors.blocks`, so no normalised copy of
the vocabulary is kept), and `np.argpartition` for the top k.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from attn_cli.core.neighbors import cosines, indices_of, key_scores, nearest, top_k, unit_vector  # noqa: F401 (analogy, similarity)
from attn_cli.errors import InputError, UnknownWordsError

if TYPE_CHECKING:  # `attn softmax` reads MAX_NEIGHBORS from here and never loads vectors
    from attn_cli.vectors.store import Vectors

COSMUL_EPSILON = 1e-6  # gensim's guard against dividing by a zero similarity
MAX_NEIGHBORS = 100  # the most nearest keys a command shows per query (analogy --top, inspect --neighbors)


class UnknownInputWordsError(UnknownWordsError):
    """Input words without a vector: here there is no --oov way around them."""

    def __str__(self) -> str:
        return super().__str__().split("; use --oov")[0]


def require_vectors(vectors: "Vectors", words: Iterable[str]) -> None:
    """Raise, naming every word that has no vector and a close known spelling where one exists."""
    unknown = [w for w in words if not vectors.has_vector(w)]
    if unknown:
        from attn_cli.vectors.tokens import suggest

        raise UnknownInputWordsError(*suggest(unknown, vectors))


def direction(vectors: "Vectors", a: str, b: str) -> np.ndarray:  # -> [d] float64
    """d = E(a) - E(b): e.g. E(cats) - E(cat), a "plural" direction."""
    return vectors.get_vector(a) - vectors.get_vector(b)


def _unit_inputs(vectors: "Vectors", words: list[str]) -> list[np.ndarray]:
    require_vectors(vectors, words)
    return [unit_vector(vectors.get_vector(w)) for w in words]


def most_similar(vectors: "Vectors", positive: list[str], negative: list[str], topn: int = 10) -> list[tuple[str, float]]:
    """3CosAdd: keys nearest (by cosine) to the mean of the unit positive vectors minus the unit negative ones.

    "cat is to cats as dog is to ?" is most_similar(positive=["cats", "dog"], negative=["cat"]).
    Input words are never answers. Same formula as gensim's KeyedVectors.most_similar.
    """
    if not positive:
        raise InputError("most_similar needs at least one positive word")
    terms = _unit_inputs(vectors, positive) + [-u for u in _unit_inputs(vectors, negative)]
    mean = np.sum(terms, axis=0) / len(terms)  # [d]; only its direction matters
    return nearest(vectors, mean, topn, exclude=positive + negative)


def cosmul_scores(vectors: "Vectors", positive: list[str], negative: list[str]) -> np.ndarray:  # -> [n_keys]
    """3CosMul: prod over positive of (1 + cos) / 2, divided by prod over negative of (1 + cos) / 2 (+ epsilon)."""
    terms = np.array(_unit_inputs(vectors, positive + negative), dtype=np.float32)  # [t, d]
    shifted = (1.0 + key_scores(vectors, terms)) / 2.0  # [t, n], cosines moved into [0, 1]
    pos = np.prod(shifted[: len(positive)], axis=0)  # [n]
    neg = np.prod(shifted[len(positive) :], axis=0) if negative else 1.0
    return pos / (neg + COSMUL_EPSILON)


def most_similar_cosmul(vectors: "Vectors", positive: list[str], negative: list[str], topn: int = 10) -> list[tuple[str, float]]:
    """3CosMul (Levy and Goldberg 2014, eq. 4, as gensim's most_similar_cosmul); input words excluded."""
    if not positive:
        raise InputError("most_similar_cosmul needs at least one positive word")
    scores = cosmul_scores(vectors, positive, negative)
    best = top_k(scores, topn, indices_of(vectors, positive + negative))
    return [(vectors.key_at(i), float(scores[i])) for i in best]


def similarities(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # [w, d] -> [w, w] dots, [w, w] cosines (NaN: undefined)
    """Dot products and cosines of every pair of rows at once; a zero row's cosines are NaN (undefined)."""
    dots = m @ m.T  # [w, d] x [d, w] -> [w, w]
    norms = np.linalg.norm(m, axis=1)  # [w]
    outer = norms[:, None] * norms[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        cosines = np.clip(np.where(outer > 0, dots / outer, np.nan), -1.0, 1.0)
    return dots, cosines


ALIGNMENT_THRESHOLD = 0.1  # |cosine| below this counts as near zero
UNDEFINED = "undefined"  # the alignment of a pair with a zero vector: no direction to compare


def alignment(cosine: float | None) -> str:
    """The lesson's reading of a dot product: same way, perpendicular, or opposite (judged by cosine)."""
    if cosine is None or cosine != cosine:
        return UNDEFINED
    if cosine >= ALIGNMENT_THRESHOLD:
        return "aligned"
    if cosine <= -ALIGNMENT_THRESHOLD:
        return "opposed"
    return "unrelated"


# Probes that show the lesson's "plural" direction: common singular/plural pairs, and number words.
PLURAL_PAIRS = [
    ("dog", "dogs"),
    ("house", "houses"),
    ("child", "children"),
    ("car", "cars"),
    ("tree", "trees"),
    ("idea", "ideas"),
    ("book", "books"),
    ("city", "cities"),
]
NUMBER_WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
DEFAULT_NUMBERS = NUMBER_WORDS[:4]
IRREGULAR_PLURALS = {
    "child": "children", "man": "men", "woman": "women", "person": "people", "mouse": "mice",
    "foot": "feet", "tooth": "teeth", "goose": "geese", "life": "lives", "wife": "wives",
}  # fmt: skip


def default_probes() -> list[str]:
    return [w for pair in PLURAL_PAIRS for w in pair] + DEFAULT_NUMBERS


def is_plural_of(plural: str, singular: str) -> bool:
    """English plural spellings, enough to recognise pairs among a user's probes."""
    if IRREGULAR_PLURALS.get(singular) == plural:
        return True
    if singular.endswith("y") and len(singular) > 1 and singular[-2] not in "aeiou":
        return plural == singular[:-1] + "ies"
    return plural in (singular + "s", singular + "es")


def plural_forms(singular: str) -> list[str]:
    """The spellings is_plural_of accepts for `singular`."""
    forms = [singular + "s", singular + "es"]
    if singular in IRREGULAR_PLURALS:
        forms.insert(0, IRREGULAR_PLURALS[singular])
    if singular.endswith("y") and len(singular) > 1 and singular[-2] not in "aeiou":
        forms = [singular[:-1] + "ies"]
    return forms


def plural_pairs(probes: list[str]) -> list[tuple[str, str]]:
    """(singular, plural) pairs found among the probes, in the order the singulars appear (then the
    plurals): a look-up per probe, so ten thousand probes cost no more than ten thousand look-ups."""
    order = {p: i for i, p in enumerate(dict.fromkeys(probes))}
    pairs = [(s, p) for s in order for p in plural_forms(s) if p in order and is_plural_of(p, s)]
    return sorted(pairs, key=lambda pair: (order[pair[0]], order[pair[1]]))


def number_words(probes: list[str]) -> list[str]:
    """The number words among the probes, in counting order."""
    return [w for w in NUMBER_WORDS if w in set(probes)]


def plural_verdict(pairs: list[tuple[str, str]], dot: dict[str, float]) -> tuple[bool | None, list[str]]:
    """Did every plural score above its singular? (None without pairs), and the pairs where it did not."""
    if not pairs:
        return None, []
    exceptions = [f"{s}/{p}" for s, p in pairs if not dot[p] > dot[s]]
    return not exceptions, exceptions


def increasing_verdict(words: list[str], dot: dict[str, float]) -> tuple[bool | None, list[str]]:
    """Did the scores strictly increase along `words`? (None with fewer than two), and the steps that broke."""
    if len(words) < 2:
        return None, []
    breaks = [f"{u}/{v}" for u, v in zip(words, words[1:]) if not dot[v] > dot[u]]
    return not breaks, breaks
