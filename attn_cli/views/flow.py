"""inspect's views of where attention carries: what `--weigh norm` shows, and the attention rollout (`--rollout`)."""

from rich.text import Text

WEIGHING = "--weigh norm: cells are ‖α_ij f(x_j)‖ = α_ij × ‖key j's value through W_V, W_O‖"  # one line of 79 columns


def weighing(result, options) -> list:
    """The one line that says what the numbers are, and how much of the special tokens' weight survives."""
    parts = [Text(WEIGHING, style="yellow")]
    if result.special_shares is not None:
        before, after = result.special_shares
        parts.append(Text(f"special tokens: {before:.0%} of all weight (every head and query), {after:.0%} of all ‖α f(x)‖", style="dim"))
    return parts


def rollout(result, options) -> list:
    """The rollout after the last layer as a heatmap: how much of each input token (column) reaches each position (row)."""
    from rich.rule import Rule

    from attn_cli.views.heatmap import Heatmap

    layers = result.model["layers"]
    corner = "key ↓ query →" if options.transpose else "query ↓ key →"
    matrix = result.rollout.T if options.transpose else result.rollout
    return [Rule(style="dim"),
            Text(f"attention rollout through {layers} layers (Abnar & Zuidema 2020): each layer's weights averaged over its heads, "
                 "the residual added as 0.5 A + 0.5 I, multiplied up; row i: how much of each input token reaches position i", style="bold cyan"),
            Heatmap(matrix, result.tokens, result.tokens, kind="weights", corner=corner)]
