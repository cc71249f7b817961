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
    """The rollout after its last layer as a heatmap: how much of each input token (column) reaches each position (row);
    on a decoder, what its first column means."""
    from rich.rule import Rule

    from attn_cli.views.heatmap import Heatmap

    first, last = result.rollout_layers
    every = first == 0 and last == result.model["layers"] - 1
    span = f"{last + 1} layers" if every else f"layers {first} to {last} (of {result.model['layers']})"
    corner = "key ↓ query →" if options.transpose else "query ↓ key →"
    matrix = result.rollout.T if options.transpose else result.rollout
    parts = [Rule(style="dim"),
             Text(f"attention rollout through {span} (Abnar & Zuidema 2020): each layer's weights averaged over its heads, "
                  "the residual added as 0.5 A + 0.5 I, multiplied up; row i: how much of each input token reaches position i", style="bold cyan"),
             Heatmap(matrix, result.tokens, result.tokens, kind="weights", corner=corner)]
    if result.mask == "causal" and len(result.tokens) > 1:
        parts.append(Text(sink_caveat(result, every), style="yellow"))
    return parts


SINK_SHARE = 0.5  # a first column holding more than this of the later rows, on average, is a sink's product


def sink_caveat(result, every: bool) -> str:
    """On a decoder: how much of each later row the first token holds, and, when it holds most, why (an attention sink)."""
    import numpy as np

    from attn_cli.views.base import quoted

    share = float(np.mean(np.asarray(result.rollout)[1:, 0]))  # rows after the first: what reaches them from the first token
    line = f"the first token {quoted(result.tokens[0])} holds {share:.0%} of each later row on average"
    if share <= SINK_SHARE:
        return line + ": no attention sink dominates this rollout"
    return (line + ": an attention sink absorbs the product, which says where the heads parked their weight, not where the "
            "information came from. Under the causal mask the first token sees only itself, so weight that reaches it never "
            "leaves, and each layer whose heads park weight there adds more" + ("; --rollout-layers A:B rolls out a shorter range" if every else ""))
