"""The lesson's first step as a computation: softmax of a list of numbers, with its result
object (here, not in attn_cli.results: `attn softmax` reads this module alone of attn's library);
the CLI (attn_cli.cli.softmax) parses the input and writes the output. Directions and analogies
over word vectors are attn_cli.analogy; the similarity of pairs of words, attn_cli.similarity.
"""

import math

import numpy as np

from attn_cli.records import Record
from attn_cli.core.softmax import log_softmax, softmax_with_temperature
from attn_cli.core.softmax import softmax as softmax_of


class SoftmaxResult(Record):
    """A plain class, not a dataclass: `attn softmax` starts without importing dataclasses or
    generating the methods of one."""

    __slots__ = ("values", "temperature", "exps", "probabilities", "log_probabilities")

    def __init__(self, values: list[float], temperature: float, exps: list[float], probabilities: list[float],
                 log_probabilities: list[float] | None = None):
        self.values = values  # as given; may hold +-inf (JSON: null)
        self.temperature = temperature  # 0 = argmax
        self.exps = exps  # exp((value - max) / T); 1 for a +inf value, and at T = 0 the limit (1 at the max, else 0)
        self.probabilities = probabilities
        self.log_probabilities = log_probabilities  # with --log; -inf where the probability is 0 (JSON: null)

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


def softmax_result(values: list[float], temperature: float, log: bool) -> SoftmaxResult:
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
