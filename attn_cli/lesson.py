"""The lesson's first half as computations: softmax of a list of numbers, and directions and
analogies over word vectors. Each returns its result object (softmax's is here: `attn softmax`
reads this module and not attn_cli.results, for a quick start); the CLI (attn_cli.cli.lesson)
parses the input and writes the output. The similarity of pairs of words, read against random
pairs, is attn_cli.similarity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attn_cli.errors import InputError
from attn_cli.softmax import log_softmax, softmax_with_temperature
from attn_cli.softmax import softmax as softmax_of

if TYPE_CHECKING:  # read only by the analogy, not by `attn softmax`
    from attn_cli.results import AnalogyResult, ProbeScore
    from attn_cli.tokens import Oov

# --- softmax -------------------------------------------------------------------------------


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

    @property
    def probability_sum(self) -> float:
        return math.fsum(self.probabilities)

    def to_dict(self) -> dict:
        out = {"values": self.values, "temperature": self.temperature, "exps": self.exps, "sum_of_exps": self.total,
               "probabilities": self.probabilities, "probability_sum": self.probability_sum}
        if self.log_probabilities is not None:
            out["log_probabilities"] = self.log_probabilities
        return out

    def rows(self):
        """One row per value, in input order."""
        logs = self.log_probabilities
        for i, (value, e, p) in enumerate(zip(self.values, self.exps, self.probabilities)):
            row = {"index": i, "value": value, "temperature": self.temperature, "exp": e, "probability": p}
            yield row | {"log_probability": logs[i]} if logs is not None else row


def scaled_logits(x: np.ndarray, temperature: float) -> np.ndarray:  # [n] finite -> [n], max 0
    """(x - max) / T, exact to a rounding or two, and never a wrong overflow.

    Shifting first keeps the precision (x / T - max / T would lose the difference of two
    large, close values). x - max overflows only for values more than 1.8e308 below the max:
    with T <= 1 their true value is below -1.8e308 too and -inf (exp = 0) is right; with T > 1
    it may be small (1e308 - -1e308, over T = 1e308, is -2), so there each term is divided first.
    """
    top = x.max()
    with np.errstate(over="ignore"):
        shifted = x - top
        scaled = shifted / temperature
        wide = np.isinf(shifted)
        if temperature > 1 and wide.any():
            scaled[wide] = x[wide] / temperature - top / temperature
    return scaled


def softmax(values: list[float], temperature: float, log: bool) -> SoftmaxResult:
    """Probabilities of softmax(values / T), with the exponentials behind them.

    +inf values share all the mass equally whatever T is (x / T stays +inf); -inf values get 0;
    T = 0 is the limit, argmax (ties share).
    """
    x = np.array(values, dtype=np.float64)  # [n]
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        if temperature == 0 or np.isposinf(x).any():
            probabilities = np.isposinf(x) / np.isposinf(x).sum() if np.isposinf(x).any() else softmax_with_temperature(x, 0)
            exps = (probabilities > 0).astype(np.float64)  # the limit: 1 at the winners, 0 elsewhere
            log_probabilities = np.log(probabilities)
        else:
            finite = np.isfinite(x)
            scaled = np.full_like(x, -np.inf)  # [n]; -inf stays -inf
            scaled[finite] = scaled_logits(x[finite], temperature)
            probabilities = softmax_of(scaled)
            exps = np.exp(scaled)
            log_probabilities = log_softmax(scaled)
    return SoftmaxResult(
        values=values,
        temperature=temperature,
        exps=exps.tolist(),
        probabilities=probabilities.tolist(),
        log_probabilities=log_probabilities.tolist() if log else None,
    )


# --- analogy -------------------------------------------------------------------------------


def probe_scores(vectors, d: np.ndarray, probes: list[str], oov: Oov) -> list[ProbeScore]:
    from attn_cli.neighbors import dots
    from attn_cli.results import ProbeScore
    from attn_cli.tokens import embed

    kept = embed(probes, vectors, oov).tokens  # raises for unknown probes unless --oov skip|zero
    return [ProbeScore(w, float(s)) for w, s in zip(kept, dots(vectors, d, kept))]


def analogy(vectors, words: list[str], probes: list[str] | None, top: int, method: str, oov: Oov) -> AnalogyResult:
    """d = E(a) - E(b) scored against probe words and its nearest keys; with a third word c, the
    answers to "b is to a as c is to ?" by 3CosAdd (method "cosadd") or 3CosMul ("cosmul")."""
    from attn_cli import neighbors as nb
    from attn_cli.results import AnalogyResult, Answer, Neighbor

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
