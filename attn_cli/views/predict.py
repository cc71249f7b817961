"""The view of `attn predict`: the model's top tokens as a softmax over its vocabulary, and the logit lens."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli.views.base import Bar, FitTable, Footnote, OneLine, Unwidowed, key_label, quoted, steered_line, token_line
from attn_cli.views.softmax import fmt_probability


def predict_view(result) -> list:
    m = result.model
    what = "the next token after" if result.predicts == "next" else "the masked word at"
    heading = Text(f"{m['name']} · {m['type']} · {m['layers']} layers × {m['heads']} heads", style="bold")
    tokens = token_line(result.tokens, mark=result.position)
    t = result.temperature
    scale = "softmax of the logits" if t == 1 else "argmax (T = 0)" if t == 0 else f"softmax of logits / {t:g}"
    title = f"{what} {quoted(result.tokens[result.position])} (#{result.position}): {scale} over the whole vocabulary"
    if result.ablation:
        table = ablated_table(result, title)
    else:
        table = FitTable(box=box.SIMPLE, title=title, title_justify="left")
        for name, justify in (("", "right"), ("token", "left"), ("logit", "right"), ("probability", "right"), ("", "left")):
            table.add_column(name, justify=justify)
        for rank, p in enumerate(result.predictions, 1):
            table.add_row(str(rank), key_label(p.token), f"{p.logit:.2f}", fmt_probability(p.probability), Bar(p.probability))
    shown = sum(p.probability for p in result.predictions)
    parts = [heading, tokens, *filter(None, [steered_line(result.steered)]), table]
    if result.ablation:
        parts.append(Footnote("own: the model's own probability of that token, with every head on"))
    parts.append(Text(f"the {len(result.predictions)} shown hold {shown:.1%} of the probability", style="dim"))
    if result.asked:
        parts.append(asked_table(result))
    if result.lens is not None:
        winner = result.predictions[0].token
        parts += [lens_table(result), Footnote(f"p, rank: of the model's final prediction {quoted(winner)}, had it stopped at that layer"),
                  Footnote(LENS_NOTE)]
    return [Unwidowed(p) if isinstance(p, Text) else p for p in parts]  # notes and token lists: no word alone on a line


LENS_NOTE = ("odd tokens in the middle layers (bytes, markup, other scripts) are expected there: those layers' streams are "
             "not yet in the output embedding's basis, and the lens reads them through the final norm and W_U all the same")


def lens_table(result) -> Table:
    """Each layer's residual at the position through the model's output head."""
    table = FitTable(box=box.SIMPLE, title=f"logit lens: each layer's residual at #{result.position} through the output head",
                     title_justify="left")
    for name, justify in (("layer", "right"), ("top tokens", "left"), ("p", "right"), ("rank", "right"), ("", "left")):
        table.add_column(name, justify=justify)
    for row in result.lens:
        top = OneLine([f"{key_label(p.token)} {p.probability:.2f}" for p in row["top"]])  # one line a layer, a token never cut from its p
        layer = "E" if row["layer"] == 0 else str(row["layer"] - 1)
        table.add_row(layer, top, fmt_probability(row["final_probability"]), f"{row['final_rank']:,}", Bar(row["final_probability"], 16))
    return table


def asked_table(result) -> Table:
    """The tokens asked for with --token: where each stands in the whole vocabulary, however far down; each as the text
    it adds, in quotes, so that " Paris" and "Paris" (two tokens) read apart."""
    from attn_cli.io.files import printable

    table = FitTable(box=box.SIMPLE, title="--token: where each stands in the vocabulary", title_justify="left")
    for name, justify in (("rank", "right"), ("token", "left"), ("id", "right"), ("logit", "right"), ("probability", "right"), ("", "left")):
        table.add_column(name, justify=justify)
    for p, rank in result.asked:
        table.add_row(f"{rank:,}", quoted(printable(p.text)) if p.text.strip() else key_label(p.token), str(p.id), f"{p.logit:.2f}", fmt_probability(p.probability), Bar(p.probability))
    return table


def ablated_table(result, title: str):
    """The ablated run's top tokens, each beside its probability in the model's own run and the change."""
    what = "zeros" if result.ablation.mode == "zero" else "its mean over the positions"
    heads = ", ".join(result.ablation.names)
    table = FitTable(box=box.SIMPLE, title=f"{title}, with head{'s' if len(result.ablation.heads) > 1 else ''} {heads} ablated ({what})",
                     title_justify="left")
    for name, justify in (("", "right"), ("token", "left"), ("ablated", "right"), ("own", "right"), ("change", "right"), ("", "left")):
        table.add_column(name, justify=justify)
    for rank, p in enumerate(result.predictions, 1):
        before = result.before["probabilities"][p.id]
        table.add_row(str(rank), key_label(p.token), fmt_probability(p.probability), fmt_probability(before), f"{p.probability - before:+.4f}",
                      Bar(p.probability))
    return table
