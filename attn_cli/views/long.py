"""A head over a long text in a terminal: its weights pooled into blocks of tokens, and the strongest keys of some rows.

Past LONG tokens a heatmap of one cell per token would be thousands of columns of nothing. The summary shows
each head shown in full as a heatmap of POOLED x POOLED blocks (a cell: over the block's queries, the mean of
their summed weight on the block's keys, as the model view pools), then, for ROWS queries spread over the
text, the TOP keys they weigh most; every row and weight is in the JSON and on the page (--page FILE).
"""

import numpy as np

LONG = 512  # tokens (inspect's default --max-tokens): past it a head is summarised, not drawn cell by cell
POOLED = 24  # blocks a side of the pooled heatmap
ROWS = 8  # queries whose strongest keys are listed
TOP = 3


def heads(result, options) -> list:
    """The heads shown in full: drawn cell by cell for a short text (views.heatmaps), summarised for a long one."""
    from attn_cli.views.heatmaps import heads as drawn

    if len(result.tokens) <= LONG or options.stage not in ("weights", None) or not result.heads:
        return drawn(result, options)
    return [part for head in result.heads for part in summary(head, result.tokens)]


def pooled(weights: np.ndarray, blocks: int) -> tuple[np.ndarray, list[str]]:  # [n, n] -> [p, p], p labels "a–b"
    from attn_cli.analysis.units import pool

    n = len(weights)
    edges = np.linspace(0, n, min(n, blocks) + 1).round().astype(int)
    return pool(weights[None], len(edges) - 1)[0], [f"{a}–{b - 1}" for a, b in zip(edges[:-1], edges[1:])]


def strongest(weights: np.ndarray, rows: np.ndarray, k: int) -> list[tuple[int, list[tuple[int, float]]]]:
    """The k keys each of `rows` weighs most, heaviest first: [(row, [(key, weight)])]."""
    picked = weights[rows]  # [r, n]
    top = np.argsort(-picked, axis=1, kind="stable")[:, :k]  # [r, k]
    return [(int(r), [(int(j), float(picked[i, j])) for j in top[i]]) for i, r in enumerate(rows)]


def summary(head, tokens: list[str]) -> list:
    from rich.table import Table
    from rich.text import Text

    from attn_cli.views.heatmap import Heatmap, abbreviate

    n = len(tokens)
    matrix, labels = pooled(np.asarray(head.weights, dtype=np.float64), POOLED)
    title = Text.assemble((f"head {head.name}", "bold"), f" over {n:,} tokens: too many to draw one by one, so the weights are pooled "
                          f"into {len(labels)} blocks of about {n / len(labels):.0f} tokens (a cell: a block's queries' mean weight "
                          "on a block's keys)")
    parts = [title, Heatmap(matrix, labels, labels, corner="queries ↓ keys →")]
    rows = np.unique(np.linspace(0, n - 1, ROWS).round().astype(int))
    table = Table(title=f"the {TOP} keys {len(rows)} queries weigh most", title_justify="left", box=None, pad_edge=False)
    for column in ("query", *(f"#{i + 1}" for i in range(TOP))):
        table.add_column(column)
    for row, keys in strongest(np.asarray(head.weights), rows, TOP):
        table.add_row(f"{row}:{abbreviate(tokens[row], 12)}", *(f"{j}:{abbreviate(tokens[j], 12)} {w:.2f}" for j, w in keys))
    parts += [table, Text(f"every query's weights: --json, or --page FILE to browse them ({n:,} x {n:,})", style="dim")]
    return parts
