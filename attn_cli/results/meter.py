"""The sense meter's results: one word read against its senses layer by layer (inspect), and a file of cases (senses eval)."""

from attn_cli.records import Record, ValueRecord
from attn_cli.results.numbers import NUMBER_DIGITS, significant


def rounded(x: float) -> float:
    return float(significant(x, NUMBER_DIGITS))


class MeterReading(ValueRecord):
    """One layer's reading of a word: its score for each sense, the nearest sense and by how much."""

    __slots__ = ("layer", "label", "scores", "nearest", "tied", "margin")

    def __init__(self, layer: int, label: str, scores: list, nearest: str | None, tied: list, margin: float):
        self.layer = layer  # 0: E (the input embeddings); l: the output of layer l (the view's l - 1)
        self.label = label  # as the view shows it: "E", "0", ... ("E′" after the lesson's heads)
        self.scores = scores  # per sense, in the order of the meter's senses
        self.nearest = nearest  # the sense scoring highest; None when several tie (see tied)
        self.tied = tied  # the senses within a tie of the highest score (one: no tie)
        self.margin = margin  # the highest score less the second highest

    def to_dict(self, names: list) -> dict:
        return {"layer": self.layer, "label": self.label, "scores": {n: rounded(s) for n, s in zip(names, self.scores)},
                "nearest": self.nearest, "tied": self.tied, "margin": rounded(self.margin)}


class SenseMeter(Record):
    """A word read against its senses at every layer, and the same reading of the word alone (no context)."""

    __slots__ = ("word", "senses", "method", "layers", "alone", "index", "pieces", "causal", "templates")

    def __init__(self, word: str, senses: list, method: str, layers: list, alone: list, *, index: int | None = None,
                 pieces: list | None = None, causal: bool = False, templates: list | None = None):
        self.word = word
        self.senses = senses  # sense names
        self.method = method  # how a score is computed, in words
        self.layers = layers  # [MeterReading] E first, then each layer (the lesson's heads: E and E′)
        self.alone = alone  # [MeterReading] the same for the word as the whole input
        self.index = index  # the lesson's heads: the token measured
        self.pieces = pieces  # a checkpoint: the pieces averaged over the word
        self.causal = causal  # the word sees only what comes before it
        self.templates = templates  # a checkpoint: the templates its prototypes come from

    def to_dict(self) -> dict:
        out = {"word": self.word, "senses": self.senses, "method": self.method,
               "layers": [r.to_dict(self.senses) for r in self.layers], "alone": [r.to_dict(self.senses) for r in self.alone]}
        for name in ("index", "pieces", "templates"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out["causal"] = self.causal
        return out


CONTROLS = ("context", "alone", "masked")  # the word in its sentence, the word alone, the sentence with the context masked


class SensesEval(Record):
    """`attn senses eval`: per layer, the share of cases whose word is nearest its intended sense, and the controls."""

    __slots__ = ("file", "model", "method", "templates", "causal", "cases", "skipped", "chance", "words", "filler", "layers", "misses", "sense_set")

    def __init__(self, file: str, model: str, method: str, templates: list, causal: bool, cases: int, skipped: int, chance: float,
                 words: int, filler: str, layers: list, misses: dict, sense_set: str | None):
        self.file, self.model, self.method, self.templates, self.causal = file, model, method, templates, causal
        self.cases = cases  # the cases scored
        self.skipped = skipped  # cases left out: a decoder's whose context is not before the word
        self.chance = chance  # the share a guess would get: the mean of 1 / (senses of the word)
        self.words = words  # distinct words (each with its prototypes)
        self.filler = filler  # the token the masked control puts in place of the context
        self.layers = layers  # per layer: {"layer", "label", control: {"resolved", "low", "high"} for each of CONTROLS, "median_margin"}
        self.misses = misses  # at the last layer, "word/sense" -> cases not resolved (in context)
        self.sense_set = sense_set  # where the senses came from (None: the cases' own probe columns)

    def to_dict(self) -> dict:
        def share(block):
            return {"resolved": rounded(block["resolved"]), "wilson95": [rounded(block["low"]), rounded(block["high"])]}

        layers = [{"layer": r["layer"], "label": r["label"], **{c: share(r[c]) for c in CONTROLS}, "median_margin": rounded(r["median_margin"])}
                  for r in self.layers]
        return {"file": self.file, "model": self.model, "method": self.method, "templates": self.templates, "causal": self.causal,
                "sense_set": self.sense_set, "cases": self.cases, "skipped": self.skipped, "chance": rounded(self.chance),
                "words": self.words, "filler": self.filler, "layers": layers, "misses": self.misses}

    def rows(self):
        """One row per layer: each control's share resolved and its Wilson 95% interval, and the median margin."""
        for r in self.layers:
            row = {"layer": r["layer"], "label": r["label"]}
            for c in CONTROLS:
                row.update({c: rounded(r[c]["resolved"]), f"{c}_low": rounded(r[c]["low"]), f"{c}_high": rounded(r[c]["high"])})
            row.update(median_margin=rounded(r["median_margin"]), cases=self.cases, chance=rounded(self.chance))
            yield row
