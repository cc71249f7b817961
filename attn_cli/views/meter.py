"""The sense meter through a real model's layers (inspect --model --sense/--sense-set), and `attn senses eval`."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli.views.base import bar, quoted

MARGIN_BAR_FLOOR = 0.01  # a margin this large fills the bar, unless a larger one is shown


def nearest_label(reading) -> str:
    return reading.nearest if reading.nearest is not None else f"tie ({len(reading.tied)})"


def meter_table(meter) -> Table:
    """One row per layer: the cosine with each sense's prototype, the nearest sense and the margin, in context and alone."""
    table = Table(box=box.SIMPLE, title=f"sense meter: {quoted(meter.word)} against prototypes of the word itself, layer by layer",
                  title_justify="left", collapse_padding=True, pad_edge=False)
    table.add_column("layer", justify="right", no_wrap=True)
    for name in meter.senses:
        table.add_column(name, justify="right", no_wrap=True)
    for name in ("nearest", "margin", "", "alone (margin)"):
        table.add_column(name, justify="right" if name == "margin" else "left", no_wrap=True)
    scale = max([r.margin for r in meter.layers + meter.alone] + [MARGIN_BAR_FLOOR])
    for r, alone in zip(meter.layers, meter.alone):
        best = max(r.scores)
        cells = [Text(f"{s:.3f}", style="bold" if s == best and r.nearest is not None else "") for s in r.scores]
        table.add_row(r.label, *cells, nearest_label(r), f"{r.margin:.4f}", bar(r.margin / scale, 6),
                      Text(f"{nearest_label(alone)} ({alone.margin:.4f})", style="dim"))
    return table


def verdict(meter) -> Text:
    """What the last layer says, in context against alone (computed, never assumed)."""
    last, alone = meter.layers[-1], meter.alone[-1]
    where = "after the heads (E′)" if meter.index is not None else "at the last layer"
    if last.nearest is None:
        return Text(f"{where} the nearest senses tie: the meter cannot tell them apart here")
    if last.nearest != alone.nearest:
        said = f"{where}: {last.nearest} in context (margin {last.margin:.4f}), {nearest_label(alone)} alone ({alone.margin:.4f}): "
        if last.margin >= alone.margin:
            return Text(said + f"the context moved it to {last.nearest}")
        return Text(said + f"the context undid the word's own lean but chose {last.nearest} by less than the word leant by itself")
    gain = f"its margin is {last.margin / alone.margin:.1f}× the word's own" if alone.margin > 0 and last.margin > alone.margin else "it adds no margin"
    return Text(f"{where}: {last.nearest} in context (margin {last.margin:.4f}) and alone ({alone.margin:.4f}): the word leans "
                f"that way by itself; in context {gain}")


def meter_caption(meter) -> Text:
    lines = [f"score: {meter.method}; margin: the nearest sense's score less the next one's",
             "alone: the same reading of the word as the whole input, without context (what the word brings by itself)"]
    if meter.causal:
        lines.append(f"a decoder: {quoted(meter.word)} sees only the words before it, so only that context counts "
                     f"(its prototypes come from the {len(meter.templates)} templates whose probe comes first)")
    if any(r.nearest is None for r in meter.layers + meter.alone):
        lines.append("tie (t): the top t senses score the same (their prototypes are the same vector at that layer)")
    return Text("\n".join(lines), style="dim")


def alone_line(meter) -> Text:
    """Under the lesson's heads' own meter: the word alone, so a reader sees what is prior and what is context."""
    before, after = meter.alone
    line = Text(f"  {meter.index}:{meter.word}", style="bold")
    line.append(f"  alone, as the whole input: nearer to {nearest_label(before)} (E) / {nearest_label(after)} (E′)", style="dim")
    return line


def meter(result, options) -> list:
    sense_meter = result.sense_meter
    if result.senses is not None:  # the lesson's heads: their table shows E and E′ for every measured token
        return [alone_line(sense_meter)]
    from rich.rule import Rule

    return [Rule(style="dim"), meter_table(sense_meter), verdict(sense_meter), meter_caption(sense_meter)]


def share(block: dict) -> str:
    return f"{block['resolved']:.3f} ({block['low']:.2f}-{block['high']:.2f})"


def senses_eval(result):
    """`attn senses eval`: a row per layer, the share resolved in context and in both controls, with Wilson 95% intervals."""
    from rich.console import Group

    table = Table(box=box.SIMPLE, title=f"senses eval: {result.file} · {result.model}", title_justify="left", collapse_padding=True,
                  pad_edge=False)
    for name in ("layer", "in context", "word alone", "context masked", "median margin"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in result.layers:
        table.add_row(r["label"], Text(share(r["context"]), style="bold"), share(r["alone"]), share(r["masked"]), f"{r['median_margin']:+.4f}")
    where = f"sense set {result.sense_set}" if result.sense_set else "the cases' own probe words (intended / other)"
    lines = [f"{result.cases} cases over {result.words} words, {where}; chance {result.chance:.3f}"
             + (f"; {result.skipped} skipped (context not before the word: a decoder does not see it)" if result.skipped else ""),
             "share of cases whose word is nearest its intended sense (Wilson 95% interval); a tie among t senses earns 1/t",
             f"word alone: the word as the whole input; context masked: every other piece replaced by {result.filler}; "
             "median margin: the intended sense's score less the best other's, in context",
             result.method + (" (a decoder: the templates whose probe comes first)" if result.causal else "")]
    if result.misses:
        shown = ", ".join(f"{k} {v}" for k, v in list(result.misses.items())[:8]) + (" ..." if len(result.misses) > 8 else "")
        lines.append(f"missed at the last layer: {shown}")
    return Group(table, Text("\n".join(lines), style="dim"))
