"""`attn heads stats`: per head, figures over a corpus (Clark et al. 2019), as a partial aggregate that merges.

Per head, over every query of every sentence: the entropy of its weights (nats), its mean
distance to the keys (sum_j alpha_ij |i - j|), and its weight on the first token (queries after
it), on the special tokens, on itself and on the token before (queries after the first); and
per sentence the head detector's scores (analysis.detect), averaged over the sentences that have
the pattern. Beside the heads, the same figures of even attention over the keys each query sees.

A `Partial` holds sums and counts, never means, so partials from any split of a corpus (processes,
a Dask bag's partitions, Spark's or Ray's) merge into the figures of the whole. Each sentence's
sums are rounded to a multiple of 2^-40 and added as integers: merging is exact, so the figures
are the same whatever the split and the order.
"""

from dataclasses import dataclass, field

import numpy as np

from attn_cli.analysis.detect import PATTERNS
from attn_cli.errors import InputError

from attn_cli.analysis.blockwise import MEASURES  # means over queries: ("entropy", "distance", "first", "special", "self", "previous")
AFTER_FIRST = ("first", "previous")  # over the queries after the first token
UNIT = 2**40  # the sums' fixed point: each sentence's sum is rounded to a multiple of 1 / UNIT
MAX_ERRORS = 20  # failed lines a partial remembers with their message (all are counted)


def fixed(x: np.ndarray) -> np.ndarray:  # float [...] -> object [...] of Python ints
    return np.rint(np.asarray(x, dtype=np.float64) * UNIT).astype(np.int64).astype(object)


@dataclass
class Partial:
    """Sums and counts of `heads stats` over some sentences (see the module's docstring). Merge with `merge`."""

    model: dict  # {"name", "layers", "heads", "causal"}
    options: dict  # {"error", "exclude_bos", "exclude_current"}
    sentences: int = 0  # scored
    failed: int = 0
    blank: int = 0
    queries: int = 0  # every token of every sentence scored
    later: int = 0  # the queries after each sentence's first token
    sums: dict = field(default_factory=dict)  # measure -> [L, H] (heads) / [1, 1] (even) Python ints, in units of 1 / UNIT
    even: dict = field(default_factory=dict)
    detect: dict = field(default_factory=dict)  # pattern -> [L, H] Python ints
    detect_counts: dict = field(default_factory=dict)  # pattern -> [L, H] sentences scored
    detect_even: dict = field(default_factory=dict)  # pattern -> [1, 1]
    detect_sentences: dict = field(default_factory=dict)  # pattern -> sentences with the pattern
    errors: list = field(default_factory=list)  # [(line, message)], the first MAX_ERRORS

    def add_sentence(self, weights: np.ndarray, ids: list[int], special: list[bool]) -> None:
        """One sentence's every head, weights [L, H, n, n]."""
        heads = self.sums_for(weights.shape[0], weights.shape[1], ids, special)
        for l in range(weights.shape[0]):
            heads.add(l, 0, 0, weights[l])
        self.add_sums(heads, ids, special)

    def sums_for(self, n_layers: int, n_heads: int, ids: list[int], special: list[bool]):
        """An empty analysis.blockwise.PatternSums for one sentence (its `watch` reads a pass's patterns a block at a time)."""
        from attn_cli.analysis.blockwise import PatternSums

        return PatternSums(n_layers, n_heads, ids, special, PATTERNS, self.options["exclude_bos"], self.options["exclude_current"], measures=True)

    def add_sums(self, heads, ids: list[int], special: list[bool]) -> None:
        """One sentence's sums (a PatternSums filled by a pass), beside even attention's over the same keys."""
        from attn_cli.analysis.blockwise import baseline_blocks

        n = len(ids)
        even = self.sums_for(1, 1, ids, special)
        for r0, block in baseline_blocks(n, self.model["causal"], None):  # [1, b, n]
            even.add(0, r0, 0, block)
        self.sentences += 1
        self.queries += n
        self.later += n - 1
        for into, sums in ((self.sums, heads), (self.even, even)):
            for name in MEASURES:
                into[name] = into.get(name, 0) + fixed(sums.sums[name])
        error = self.options["error"]
        for name in PATTERNS:
            if not heads.scorable(name):
                continue
            scores, base = heads.scores(name, error), even.scores(name, error)
            self.detect[name] = self.detect.get(name, 0) + fixed(np.nan_to_num(scores))
            self.detect_counts[name] = self.detect_counts.get(name, 0) + np.isfinite(scores).astype(np.int64)
            self.detect_even[name] = self.detect_even.get(name, 0) + fixed(np.nan_to_num(base))
            self.detect_sentences[name] = self.detect_sentences.get(name, 0) + 1

    def add_failure(self, line: int, message: str) -> None:
        self.failed += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append((line, message))


def merge(partials) -> Partial:
    """One partial of all of them (sums added; the same model and options required)."""
    partials = list(partials)
    if not partials:
        raise InputError("nothing to merge: no partial aggregate given")
    first = partials[0]
    out = Partial(first.model, first.options)
    for p in partials:
        if p.model != first.model or p.options != first.options:
            raise InputError(f"cannot merge the figures of {p.model['name']} ({p.options}) with those of {first.model['name']} ({first.options})")
        out.sentences += p.sentences
        out.failed += p.failed
        out.blank += p.blank
        out.queries += p.queries
        out.later += p.later
        for mine, theirs in ((out.sums, p.sums), (out.even, p.even), (out.detect, p.detect), (out.detect_counts, p.detect_counts),
                             (out.detect_even, p.detect_even), (out.detect_sentences, p.detect_sentences)):
            for name, value in theirs.items():
                mine[name] = mine.get(name, 0) + value
        out.errors += p.errors[: MAX_ERRORS - len(out.errors)]
    return out


def mean(total, count) -> float | None:
    """total (in units of 1 / UNIT) / count, correctly rounded (Python's int / int); None for no count."""
    return int(total) / (int(count) * UNIT) if count else None


def figure_rows(partial: Partial, sums: dict, detect: dict, counts) -> list[dict]:
    """[{measure: mean, "detect_PATTERN": mean}] per cell of the sums' grid, in layer, head order."""
    rows = []
    for cell in np.ndindex(*sums["entropy"].shape) if sums else []:
        row = {name: mean(sums[name][cell], partial.later if name in AFTER_FIRST else partial.queries) for name in MEASURES}
        for name in PATTERNS:
            row[f"detect_{name}"] = mean(detect[name][cell], counts(name)[cell]) if name in detect else None
        rows.append(row)
    return rows


def figures(partial: Partial):
    """The figures `heads stats` prints (results.stats.HeadStats), from the sums of a (merged) partial."""
    from attn_cli.results.stats import HeadStats

    if not partial.sentences:
        raise InputError("no sentence was scored" + (f" ({partial.failed} failed)" if partial.failed else ""))
    heads = figure_rows(partial, partial.sums, partial.detect, lambda name: partial.detect_counts[name])
    even = figure_rows(partial, partial.even, partial.detect_even, lambda name: np.full((1, 1), partial.detect_sentences[name]))[0]
    layers, per_layer = partial.model["layers"], partial.model["heads"]
    rows = [{"layer": i // per_layer, "head": i % per_layer, **row} for i, row in enumerate(heads)]
    return HeadStats(model=partial.model["name"], layers=layers, heads=per_layer, **partial.options, sentences=partial.sentences,
                     failed=partial.failed, blank=partial.blank, queries=partial.queries, detect_sentences={name: partial.detect_sentences.get(name, 0) for name in PATTERNS},
                     per_head=rows, even=even)
