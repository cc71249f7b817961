"""The words around the pictures: the token list, what a stage's matrix is, each head's heading, a checkpoint's heading."""

from rich.text import Text

from attn_cli import results

def stage_caption(stage: str, *, masked: bool, transposed: bool = False, scaled: bool = True) -> str:
    """What the heatmaps show at this stage; the masked cells (·) are explained only when there are any."""
    if stage == "scores":
        return "Q·Kᵀ before scaling" + (" (· = hidden by the mask in the next step)" if masked else "")
    if stage == "masked":
        matrix = "Q·Kᵀ / √d_k" if scaled else "Q·Kᵀ not divided by √d_k (--no-scale),"
        return matrix + (" with the mask applied (· = −∞, gets weight exactly 0)" if masked else " (no mask)")
    line = "column" if transposed else "row"
    return f"softmax over each query's {line}: each {line} sums to 1" + (" (· = masked, weight exactly 0)" if masked else "")


RELATIVE_NOTE = "softmax depends only on differences between scores in a row: adding a constant to a row changes nothing"
PARTS_CAPTION = (  # a phrase a line, so that 80 columns never cut one
    "ΔE = ΔE_ctx + ΔE_self\n"
    "  context: Σ_{j≠i} w_ij v_j, what the other tokens wrote\n"
    "  self: w_ii v_i, a copy of the token's own value (through W_O, if any)\n"
    "  cos ctx = cos(E, E + ΔE_ctx): how far the context part alone turns E"
)


def token_list(result: results.InspectResult) -> Text:
    from attn_cli.views.base import token_line

    return token_line(result.tokens)


def head_heading(head: results.HeadView, result: results.InspectResult, stage: str, transpose: bool = False) -> Text:
    mask = "causal mask" if result.mask == "causal" else "no mask"
    text = Text(f"head {head.name}", style="bold cyan")
    text.append(f"  d_k={head.d_k} · {mask} · {stage}{'' if result.scale else ' · not divided by √d_k'}", style="dim")
    if head.distance is not None:
        text.append(f"\n{distance_note(head.distance)}", style="dim")
    if head.sink is not None:
        text.append(f"\n{sink_note(head.sink, 'column' if transpose else 'row')}", style="dim")
    if head.description:
        text.append(f"\n{head.description}", style="yellow" if head.noise else "dim")
    if head.top_weight_scaled is not None:
        text.append(
            f"\nwithout /√d_k: mean top weight {head.top_weight:.2f} (with: {head.top_weight_scaled:.2f})",
            style="bold yellow",
        )
    return text


def distance_note(distance: list) -> str:
    """What a key loses for where it stands, in words: "a key k tokens before the query loses 1.33·k, ..."."""
    before, after, itself = distance
    parts = [f"a key k tokens before the query loses {before:.3g}·k from its score" if before else "",
             f"k tokens after it {after:.3g}·k" if after else "", f"the query itself {itself:.3g}" if itself else ""]
    return "distance (ALiBi): " + (", ".join(p for p in parts if p) or "no cost")


def sink_note(score: float, line: str = "row") -> str:
    return (f"{results.SINK_TOKEN}: a key every query sees that writes nothing (score {score:.3g}); "
            f"weight on it is an update not made, and each {line} sums to 1 with it")


def model_heading(result: "results.InspectResult") -> list:
    m = result.model
    parts = [Text(f"{m['name']} · {m['type']} · {m['layers']} layers × {m['heads']} heads · d_model {m['d_model']} · d_k {m['d_k']} · "
                  + ("causal mask" if result.mask == "causal" else "no mask"), style="bold")]
    from attn_cli.views.base import Unwidowed, token_line

    parts.append(Unwidowed(token_line(result.tokens, special=result.special)))
    notes = []
    if result.words:
        notes.append("word pieces merged into words (--words): a word's row is the mean over its pieces, its column the sum")
    if result.hide_special:
        import numpy as np

        held = np.asarray(result.special_weight)  # [L, H, g]
        notes.append(f"special tokens hidden (--hide-special): they held {held.mean():.0%} of the weight on average "
                     f"(up to {held.max():.0%} of a row), so the rows shown sum to less than 1")
    for note in notes:
        parts.append(Text(note, style="yellow"))
    return parts


LEAD = ("Attention: each token's row in the heatmaps below weighs the tokens it may see (softmax: the weights "
        "sum to 1), and the weighted sum of their values moves the token, E′ = E + ΔE.")


def lesson_heading(result: "results.InspectResult", options) -> list:
    """The lesson's heads: what the screen is about, the tokens, what E is."""
    parts: list = [Text(LEAD, style="bold")] if options.lead else []
    from attn_cli.views.base import Unwidowed

    parts.append(Unwidowed(token_list(result)))
    if result.unknown:
        parts.append(Text(f"without a vector: {', '.join(dict.fromkeys(result.unknown))}", style="yellow"))
    position = "word vector + sinusoidal position" if result.position else "word vector only (--no-position)"
    parts.append(Text(f"E = {position}", style="dim"))
    if not result.scale:
        parts.append(Text("--no-scale: the scores go into softmax without the division by √d_k", style="yellow"))
    return parts


def heatmap_captions(result: "results.InspectResult", options) -> list:
    """What the heatmaps show at this stage (a checkpoint's weights need no caption: each heading says so)."""
    if result.model is not None and options.stage == "weights":
        return []
    parts = [Text(stage_caption(options.stage, masked=result.mask == "causal", transposed=options.transpose, scaled=result.scale is not False), style="dim")]
    if options.stage in ("scores", "masked") or (result.focus is not None and result.model is None):
        parts.append(Text(RELATIVE_NOTE, style="dim"))
    return parts


def heading(result: "results.InspectResult", options) -> list:
    """What the sentence became and what the pictures below show: a checkpoint's model line, or the lesson's captions."""
    return model_heading(result) if result.model is not None else lesson_heading(result, options)
