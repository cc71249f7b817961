"""Directions and analogies over word vectors: d = E(a) - E(b) scored against probe words, its
nearest keys, and "b is to a as c is to ?" (the CLI: attn_cli.cli.analogy; results:
attn_cli.results.analogy).
"""

import numpy as np

from attn_cli.errors import InputError
from attn_cli.results.analogy import AnalogyResult, Answer, Neighbor, ProbeScore
from attn_cli.vectors.tokens import Oov


def probe_scores(vectors, d: np.ndarray, probes: list[str], oov: Oov) -> list[ProbeScore]:
    from attn_cli.vectors.tokens import embed

    embedded = embed(probes, vectors, oov)  # raises for unknown probes unless --oov skip|zero (a zero vector)
    return [ProbeScore(w, float(s)) for w, s in zip(embedded.tokens, embedded.vectors @ d)]  # [k, d] x [d] -> [k]


def analogy(vectors, words: list[str], probes: list[str] | None, top: int, method: str, oov: Oov) -> AnalogyResult:
    """d = E(a) - E(b) scored against probe words and its nearest keys; with a third word c, the
    answers to "b is to a as c is to ?" by 3CosAdd (method "cosadd") or 3CosMul ("cosmul")."""
    from attn_cli.lesson import directions as nb

    if len(words) not in (2, 3):
        raise InputError(f"analogy takes two words (a direction, e.g. cats cat) or three (cats cat dog), not {len(words)}")
    nb.require_vectors(vectors, words)
    a, b, *rest = words
    d = nb.direction(vectors, a, b)  # [d]
    if not np.any(d):
        raise InputError(f"{a!r} and {b!r} have the same vector: d = 0 has no direction")
    c = rest[0] if rest else None
    if probes is None and c is None:
        probes = nb.default_probes()
    scores = probe_scores(vectors, d, probes, oov) if probes else []
    dot = {p.key: p.dot for p in scores}
    pairs = nb.plural_pairs(list(dot))
    numbers = nb.number_words(list(dot))
    plural_ok, exceptions = nb.plural_verdict(pairs, dot)
    numbers_ok, breaks = nb.increasing_verdict(numbers, dot)
    result = AnalogyResult(
        a=a, b=b, norm=float(np.linalg.norm(d)), probes=scores, neighbors=[], pairs=pairs, numbers=numbers,
        plural_above_singular=plural_ok, plural_exceptions=exceptions, numbers_increasing=numbers_ok, numbers_breaks=breaks,
    )  # fmt: skip
    if c is None:
        result.neighbors = [Neighbor(k, s) for k, s in nb.nearest(vectors, d, top, exclude=[a, b])]
    else:
        # "b is to a as c is to ?": c + (a - b), so a and c are positive, b negative.
        search = nb.most_similar_cosmul if method == "cosmul" else nb.most_similar
        result.c, result.method = c, method
        result.answers = [Answer(k, s) for k, s in search(vectors, positive=[a, c], negative=[b], topn=top)]
    return result
