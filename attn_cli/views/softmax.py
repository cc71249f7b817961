"""The view of `attn softmax`: a module of its own, so that the command reads neither the analogy
and similarity views (attn_cli.views.lesson) nor their result classes."""

from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli.views.base import MAX_ROWS, Bar, FitTable, more_rows

if TYPE_CHECKING:
    from attn_cli.lesson.softmax import SoftmaxResult


def fmt_probability(p: float) -> str:
    """Four decimals; a tiny but nonzero value in scientific notation, never a misleading 0.0000."""
    if p == 0:
        return "0"
    return f"{p:.4f}" if p >= 5e-5 else f"{p:.2e}"


def fmt_log(x: float) -> str:
    return f"{x:.4f}" if abs(x) < 1e6 else f"{x:.4g}"


def softmax_view(result: "SoftmaxResult"):
    import math
    from math import fsum

    from rich.console import Group

    t = result.temperature
    exp_header = "exp(x - max)" if t == 1 else "argmax (T = 0)" if t == 0 else f"exp((x - max) / {t:g})"
    table = FitTable(box=box.SIMPLE)
    table.add_column("value", justify="right")
    table.add_column(exp_header, justify="right")
    table.add_column("probability", justify="right")
    table.add_column("")
    if result.log_probabilities is not None:
        table.add_column("log p", justify="right")
    logs = result.log_probabilities or [None] * len(result.values)
    for value, e, p, lp in list(zip(result.values, result.exps, result.probabilities, logs))[:MAX_ROWS]:
        row = [f"{value:.6g}", fmt_probability(e), fmt_probability(p), Bar(p)]
        table.add_row(*row, *([fmt_log(lp)] if lp is not None else []))
    total = f"probabilities sum to {fsum(result.probabilities):.6f}"
    winners = sum(e > 0 for e in result.exps)
    if t == 0 or any(v == math.inf for v in result.values):
        why = "T = 0: argmax" if t == 0 else "+inf takes all"
        share = "1 value takes all the mass" if winners == 1 else f"{winners} values share the mass equally"
        summary = Text(f"{why}, {share}; {total}")
    else:
        summary = Text(f"sum of exp = {result.total:.6g}{f' (T = {t:g})' if t != 1 else ''}; {total}")
    if len(result.values) > MAX_ROWS:
        return Group(table, more_rows(MAX_ROWS, len(result.values), "values"), summary)
    return Group(table, summary)
