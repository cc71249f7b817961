"""The lesson's word-vector views: analogy and similarity (softmax's is attn_cli.views.softmax)."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli import results
from attn_cli.views.base import MAX_ROWS, Bar, FitTable, SignedBar, key_label, more_rows


def analogy_verdicts(result: results.AnalogyResult) -> list[str]:
    """The pattern, in words, exactly as the numbers came out."""
    dot = {p.key: p.dot for p in result.probes}
    lines = []
    if result.plural_above_singular is not None:
        n = len(result.pairs)
        if result.plural_above_singular:
            lines.append(f"Every plural scored above its singular ({n} of {n} pairs).")
        else:
            misses = [pair.split("/") for pair in result.plural_exceptions]
            detail = ", ".join(f"{p} {dot[p]:.2f} <= {s} {dot[s]:.2f}" for s, p in misses)
            lines.append(f"Not every plural scored above its singular: {len(misses)} of {n} pairs did not ({detail}).")
    if result.numbers_increasing is not None:
        chain = " < ".join(result.numbers)
        if result.numbers_increasing:
            values = " < ".join(f"{dot[w]:.2f}" for w in result.numbers)
            lines.append(f"{chain} held: {values}.")
        else:
            steps = [step.split("/") for step in result.numbers_breaks]
            detail = ", ".join(f"{u} {dot[u]:.2f} >= {v} {dot[v]:.2f}" for u, v in steps)
            lines.append(f"{chain} did not hold: it broke at {detail}.")
    return lines


def probe_tables(result: results.AnalogyResult) -> list:
    dot = {p.key: p.dot for p in result.probes}
    scale = max((abs(v) for v in dot.values()), default=0.0)
    tables = []
    if result.pairs:
        tables.append(Text("d · E(word), singular and plural side by side:"))
        pairs = FitTable(box=box.SIMPLE)
        for name in ("singular", "d · E", "", "plural", "d · E", ""):
            pairs.add_column(name, justify="right" if name == "d · E" else "left")
        for s, p in result.pairs[:MAX_ROWS]:
            pairs.add_row(s, f"{dot[s]:.2f}", SignedBar(dot[s], scale, 7), p, f"{dot[p]:.2f}", SignedBar(dot[p], scale, 7))
        tables.append(pairs)
        if len(result.pairs) > MAX_ROWS:
            tables.append(more_rows(MAX_ROWS, len(result.pairs), "pairs"))
    in_pairs = {w for pair in result.pairs for w in pair}
    rest = [p for p in result.probes if p.key not in in_pairs]
    if rest:
        tables.append(Text("d · E(word):" if not result.pairs else "d · E(word), the other probes:"))
        others = FitTable(box=box.SIMPLE)
        others.add_column("word")
        others.add_column("d · E", justify="right")
        others.add_column("")
        for p in rest[:MAX_ROWS]:
            others.add_row(p.key, f"{p.dot:.2f}", SignedBar(p.dot, scale, 7))
        tables.append(others)
        if len(rest) > MAX_ROWS:
            tables.append(more_rows(MAX_ROWS, len(rest), "probes"))
    return tables


def ranked_table(title: str, rows: list[tuple[str, float]], score: str):
    from rich.console import Group

    table = FitTable(box=box.SIMPLE)
    table.add_column("#", justify="right", style="dim")
    table.add_column("key")
    table.add_column(score, justify="right")
    for i, (key, value) in enumerate(rows, 1):
        table.add_row(str(i), key_label(key), f"{value:.4f}")
    return Group(*([Text(title)] if title else []), table)


def analogy_view(result: results.AnalogyResult):
    from rich.console import Group

    parts = [Text(f"d = E({result.a}) - E({result.b}), |d| = {result.norm:.4f}", style="bold")]
    parts += probe_tables(result)
    parts += [Text(line) for line in analogy_verdicts(result)]
    if result.neighbors:
        title = f"Nearest keys to d by cosine ({result.a} and {result.b} left out):"
        parts.append(ranked_table(title, [(n.key, n.cosine) for n in result.neighbors], "cosine"))
    if result.c is not None:
        a, b, c = result.a, result.b, result.c
        how = "3CosMul" if result.method == "cosmul" else "3CosAdd"
        title = f"{b} is to {a} as {c} is to ?"
        parts.append(Text(title, style="bold"))
        parts.append(Text(f"{how}: +{a} +{c} -{b}; the input words left out", style="dim"))
        rows = [(x.key, x.similarity) for x in result.answers or []]
        if rows:
            parts.append(ranked_table("", rows, "similarity"))
    return Group(*parts)


READINGS = {"aligned": "aligned", "unrelated": "unrelated", "opposed": "opposed", "undefined": "undefined"}


def fmt_percentile(pct: float | None) -> str:
    """Where a cosine falls among random pairs, without claiming 0% or 100% for a tail the sample did not reach."""
    if pct is None:
        return "-"
    return f"{pct:.1f}%" if 0.05 <= pct <= 99.95 else ("< 0.1%" if pct < 0.05 else "> 99.9%")


def dot_written_out(p: "PairSimilarity"):
    """The lesson's a · b = Σ a_i b_i: the largest products, and what the other components add."""
    from rich.console import Group

    table = FitTable(box=box.SIMPLE)
    for name in ("i", f"{p.a}_i", f"{p.b}_i", "product", ""):
        table.add_column(name, justify="right" if name else "left")
    scale = max((abs(t.product) for t in p.terms), default=0.0)
    for t in p.terms:
        table.add_row(str(t.component), f"{t.a:+.3f}", f"{t.b:+.3f}", f"{t.product:+.3f}", SignedBar(t.product, scale, 6))
    shown = sum(t.product for t in p.terms)
    total = Text(f"  {len(p.terms)} largest: {shown:+.4f}   the other {p.rest_count}: {p.rest:+.4f}   sum: {p.dot:.4f}")
    return Group(Text(f"{p.a} · {p.b} = Σ {p.a}_i × {p.b}_i over the {len(p.terms) + p.rest_count} components; the largest products:"), table, total)


def baseline_lines(base) -> list:
    """How the percentiles were computed, and a real pair that reads each way."""
    if base is None:
        return [Text("no baseline: the vectors have no two frequent keys with a direction", style="dim")]
    q = base.percentiles
    lines = [Text(f"percentile: the share of {base.pairs:,} random pairs of the {base.keys:,} most frequent keys\n"
                  f"(seed {base.seed}) with a smaller cosine; theirs: 5% {q['5']:.2f}, median {q['50']:.2f}, 95% {q['95']:.2f}.\n"
                  "Above the 95th percentile reads as aligned, below the 5th as opposed.", style="dim")]
    if base.examples:
        tries = Text("pairs from the sample to try:\n  ", style="dim")
        for k, (reading, (a, b)) in enumerate(base.examples.items()):
            tries.append(f"{a} {b}", style="bold")
            tries.append(f" ({reading})" + (", " if k < len(base.examples) - 1 else ""), style="dim")
        lines.append(tries)
    return lines


def similarity_view(result: "SimilarityResult"):
    from rich.console import Group

    norms = Text("norms: " + ", ".join(f"|{w}| = {n:.3f}" for w, n in zip(result.words, result.norms)), style="dim")
    undefined = [Text(ZERO_VECTOR_NOTE, style="yellow")] if any(p.cosine is None for p in result.pairs) else []
    if len(result.pairs) == 1:
        p = result.pairs[0]
        line = Text(f"{p.a} · {p.b} = {p.dot:.4f}   cosine = {fmt_cosine(p.cosine)}   ")
        line.append(READINGS[p.reading], style="bold")
        parts = [line]
        if p.percentile is not None:
            share = fmt_percentile(p.percentile).replace("> ", "").replace("< ", "")
            than = "at least " if p.percentile > 99.95 else "at most " if p.percentile < 0.05 else ""
            parts.append(Text(f"a cosine higher than {than}{share} of random pairs of frequent words", style="dim"))
        parts += [dot_written_out(p), norms, *undefined, *baseline_lines(result.baseline)]
        return Group(*parts)
    table = FitTable(box=box.SIMPLE)
    for name in ("a", "b", "dot", "cosine", "", "percentile", "reading"):
        table.add_column(name, justify="right" if name in ("dot", "cosine", "percentile") else "left", no_wrap=True)
    for p in result.pairs[:MAX_ROWS]:
        table.add_row(p.a, p.b, f"{p.dot:.4f}", fmt_cosine(p.cosine), SignedBar(p.cosine or 0.0, 1.0, width=6),
                      fmt_percentile(p.percentile), READINGS[p.reading])
    more = [more_rows(MAX_ROWS, len(result.pairs), "pairs")] if len(result.pairs) > MAX_ROWS else []
    return Group(table, *more, norms, *undefined, *baseline_lines(result.baseline))


ZERO_VECTOR_NOTE = "cosine undefined: a zero vector has no direction, so it is neither aligned with nor opposed to anything"


def fmt_cosine(cosine: float | None) -> str:
    return "undefined" if cosine is None else f"{cosine:.4f}"
