"""The view of `attn circuit L.H`: the QK circuit's top pairs and a small heatmap, the OV circuit's promotions, copying
and positivity beside random heads."""

from rich import box
from rich.text import Text

from attn_cli.views.base import FitTable, key_label

MAP_TOKENS = 12  # rows and columns of the heatmap at most


def circuit_view(result) -> list:
    m = result.model
    n = len(result.ids)
    where = "the text's tokens" if result.source == "text" else "the most frequent English words that are one token"
    group = f" (grouped-query: it reads the K and V of key/value head {result.kv_head})" if result.kv_head is not None else ""
    parts = [Text(f"{m['name']} · {m['type']} · head {result.layer}.{result.head}{group}", style="bold"),
             Text(f"{n} tokens: {where}, each embedding through the layer's input norm", style="dim"),
             Text(f"QK: what a query token looks for in a key token (W_Q W_K^T{qk_distance(result)}), the {min(result.top, n * n)} highest of {n * n} pairs",
                  style="bold"),
             pair_table(result), Text(scores_spread(result), style="dim"), qk_map(result)]
    if result.ov is None:
        return parts + [Text(result.no_ov, style="bold")]
    return parts + ov_parts(result)


def qk_distance(result) -> str:
    return f", RoPE with the query {result.distance} positions after the key" if result.distance else ", at relative distance 0"


def scores_spread(result) -> str:
    s = result.scores
    return f"all {s.size} pairs: mean {s.mean():.3g}, sd {s.std():.3g}, max {s.max():.3g}, min {s.min():.3g}"


def pair_table(result):
    table = FitTable(box=box.SIMPLE)
    for name, justify in (("rank", "right"), ("query", "left"), ("key", "left"), ("score", "right")):
        table.add_column(name, justify=justify)
    for rank, (s, t) in enumerate(result.ranked_pairs(result.top), 1):
        table.add_row(str(rank), key_label(result.labels[s]), key_label(result.labels[t]), f"{result.scores[s, t]:.3g}")
    return table


def map_tokens(result) -> tuple[list[int], list[int]]:
    """The heatmap's rows (queries) and columns (keys): every token of a small set, else those of the top pairs."""
    n = len(result.ids)
    if n <= MAP_TOKENS:
        return list(range(n)), list(range(n))
    rows, cols = [], []
    for s, t in result.ranked_pairs(n * n):
        if s not in rows and len(rows) < MAP_TOKENS:
            rows.append(s)
        if t not in cols and len(cols) < MAP_TOKENS:
            cols.append(t)
        if len(rows) == MAP_TOKENS and len(cols) == MAP_TOKENS:
            break
    return rows, cols


def qk_map(result):
    from attn_cli.views.heatmap import Heatmap

    rows, cols = map_tokens(result)
    return Heatmap(result.scores[rows][:, cols], [result.labels[i] for i in rows], [result.labels[j] for j in cols], kind="scores")


def ov_parts(result) -> list:
    ov = result.ov
    shown = min(result.top, len(result.ids))
    table = FitTable(box=box.SIMPLE)
    table.add_column("source", justify="left")
    table.add_column("promotes (logit)", justify="left")
    for i in range(shown):
        promoted = ", ".join(f"{key_label(t)} ({v:.3g})" for t, v in zip(result.promoted_labels[i], ov["logits"][i]))
        table.add_row(key_label(result.labels[i]), promoted, style="bold" if ov["promoted"][i][0] == result.ids[i] else None)
    mean, sd, draws = ov["random_copying"]
    pmean, psd, pdraws = ov["random_positivity"]
    random = lambda k: f"random W_V, W_O (iid Gaussian, {k} draws, seed {result.seed})"  # noqa: E731
    return [Text(f"OV: the tokens each source promotes when the head attends to it (W_V W_O, the final norm's weight, W_U); "
                 f"{shown} of {len(result.ids)} sources, a source that promotes itself first in bold", style="bold"),
            table,
            Text(f"copying: {ov['copying']:.0%} of the tokens promote themselves first; {random(draws)}: {mean:.0%} ± {sd:.0%}", style="bold"),
            Text(f"eigenvalue positivity sum(λ)/sum(|λ|) of the vocabulary's OV circuit: {ov['positivity']:.3f}; {random(pdraws)}: {pmean:.3f} ± {psd:.3f}",
                 style="bold")]
