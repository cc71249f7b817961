"""`attn senses eval`: the sense meter over a file of cases, layer by layer, beside its two controls.

A case is an ambiguous word in a sentence and the sense its context selects. Two forms of file:

- sense cases, `sentence<TAB>word<TAB>sense[<TAB>before|after]` (as `heads eval` reads them), with a
  sense set (`--sense-set`) giving each word's senses and probe words;
- four columns, `sentence<TAB>word<TAB>intended sense's probe words<TAB>other sense's probe words`
  (probe words separated by spaces or commas; an optional header `sentence<TAB>word<TAB>intended<TAB>other`).

At each layer a case counts as resolved when its intended sense is the nearest; when t senses tie for
the nearest and the intended is among them, it earns 1/t (a guess among them). Each share has a Wilson
95% interval. The controls are read at every layer in the same way: the word alone (its prior, the same
for every case of the word) and the sentence with every other piece replaced by a filler token.
For a decoder only cases whose context comes before the word are scored (the others are counted as skipped).
"""

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attn_cli.errors import InputError

PROBE_HEADER = ["sentence", "word", "intended", "other"]
Z95 = 1.959964  # the normal quantile of a two-sided 95% interval


@dataclass
class MeterCase:
    sentence: str
    word: str
    senses: dict  # sense name -> probe words
    sense: str  # the intended sense's name
    context_before: bool | None  # the selecting context precedes the word; None: not known
    line: int = 0


def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a share k / n (k may be fractional: ties earn 1/t)."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def read_cases(path: str | Path, sense_set: dict | None, set_name: str = "the sense set") -> list[MeterCase]:
    """The cases of a file in either form (see the module's docstring); bad lines raise InputError naming them."""
    from attn_cli.heads import evaluation, senses
    from attn_cli.io.files import input_name, read_input, tsv_rows

    lines, source = read_input(path, "a TSV file of sense cases").splitlines(), input_name(path)
    if sense_set is not None:
        _, fields, _ = evaluation.file_format(lines, source, senses_expected=True)
        cases = senses.parse_sense_cases(lines, source, fields)
        senses.check_cases(cases, sense_set, set_name)
        return [MeterCase(c.sentence, c.word, sense_set[c.word], list(sense_set[c.word])[senses.sense_index(c.sense, list(sense_set[c.word]))],
                          c.context_before, c.line) for c in cases]
    cases = []
    for number, (sentence, word, intended, other) in tsv_rows(lines, PROBE_HEADER, "sentence, word, intended probe words, other probe words", source):
        if other.lower() in senses.CONTEXTS:
            raise InputError(f"{source} line {number}: a sense case (its last column is {other!r}): give the senses with --sense-set")
        probes = [[p for p in column.lower().replace(",", " ").split()] for column in (intended, other)]
        cases.append(MeterCase(sentence, word.lower(), {"intended": probes[0], "other": probes[1]}, "intended",
                               senses.context_from_position(sentence, word.lower()), number))
    if not cases:
        raise InputError(f"{source}: no sense cases")
    return cases


def credits(readings: list, sense: str) -> list[float]:
    """Per layer: 1 when the intended sense is the nearest, 1/t when it is among t tied senses, else 0."""
    return [1.0 / len(r.tied) if sense in r.tied else 0.0 for r in readings]


def intended_margins(readings: list, names: list, sense: str) -> list[float]:
    """Per layer: the intended sense's score less the best other's (above 0: resolved)."""
    k = names.index(sense)
    return [r.scores[k] - max(s for j, s in enumerate(r.scores) if j != k) for r in readings]


def share_block(hits: np.ndarray) -> dict:  # [c] credits of one layer
    low, high = wilson(float(hits.sum()), len(hits))
    return {"resolved": float(hits.mean()) if len(hits) else float("nan"), "low": low, "high": high}


def evaluate(model, cases: list[MeterCase], source: str, which: str = "full", sense_set: str | None = None, progress=None):
    """Every case read at every layer in context, alone and masked (results.meter.SensesEval).
    `progress(advance, total)` follows the forward passes (total given once, first)."""
    from attn_cli.analysis import meter
    from attn_cli.results.meter import CONTROLS, SensesEval

    used = [c for c in cases if not model.causal or c.context_before]
    templates = meter.templates_for(model.causal, which)
    fill, fill_name = meter.filler(model)
    kinds = {(c.word, tuple((n, tuple(p)) for n, p in c.senses.items())): c.senses for c in used}
    if progress is not None:
        progress(0, sum(meter.prototype_passes(s, templates) for s in kinds.values()) + 2 * len(used))
    labels, alone_of = meter.layer_labels(model.n_layers), {}
    hits = {c: [] for c in CONTROLS}
    margins, misses = [], {}
    for case in used:
        protos = meter.prototypes(model, case.word, case.senses, templates, None if progress is None else lambda k: progress(k, None))
        names = list(case.senses)
        try:
            trace = model.run(case.sentence)
            pieces = meter.span_pieces(trace.tokens, meter.word_span(case.sentence, case.word))
        except InputError as e:
            raise InputError(f"{source} line {case.line}: {e}" if case.line else str(e)) from None
        text = meter.alone_text(trace.tokens, pieces)
        if text not in alone_of:  # the same for every case of the word written alike
            alone = model.run(text)
            alone_of[text] = meter.word_vectors(alone, meter.own_pieces(alone.tokens))
        masked = meter.masked_trace(model, trace.tokens, pieces, fill)
        read = {c: meter.readings(meter.cosine_scores(x, protos), names, labels) for c, x in
                (("context", meter.word_vectors(trace, pieces)), ("alone", alone_of[text]), ("masked", meter.word_vectors(masked, pieces)))}
        for c in CONTROLS:
            hits[c].append(credits(read[c], case.sense))
        margins.append(intended_margins(read["context"], names, case.sense))
        if read["context"][-1].nearest != case.sense:
            key = f"{case.word}/{case.sense}"
            misses[key] = misses.get(key, 0) + 1
        if progress is not None:
            progress(2, None)
    if not used:
        raise InputError(f"{source}: no case to score" + (" (a decoder scores only cases whose context comes before the word)" if model.causal else ""))
    grids = {c: np.array(h) for c, h in hits.items()}  # [c, L + 1] each
    median = np.median(np.array(margins), axis=0)  # [L + 1]
    layers = [{"layer": l, "label": labels[l], **{c: share_block(grids[c][:, l]) for c in CONTROLS}, "median_margin": float(median[l])}
              for l in range(len(labels))]
    return SensesEval(source, model.name, meter.method(templates), list(templates), model.causal, len(used), len(cases) - len(used),
                      float(np.mean([1.0 / len(c.senses) for c in used])), len({c.word for c in used}), fill_name, layers,
                      dict(sorted(misses.items(), key=lambda kv: (-kv[1], kv[0]))), sense_set)
