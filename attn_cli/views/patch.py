"""The view of `attn patch`: what putting back each activation from the clean run does to the corrupt run, as two maps."""

import numpy as np
from rich.text import Text

from attn_cli.views.base import Unwidowed, key_label
from attn_cli.views.heatmap import Heatmap


def patch_view(result) -> list:
    m = result.model
    heading = Text(f"{m['name']} · {m['type']} · {m['layers']} layers × {m['heads']} heads", style="bold")
    differ = [i for i, (a, b) in enumerate(zip(result.clean_tokens, result.corrupt_tokens)) if a != b]
    tokens = Text("clean   ", style="bold")
    for i, token in enumerate(result.clean_tokens):
        tokens.append(f"{i}:", style="dim")
        tokens.append(key_label(token) + " ", style="bold cyan" if i in differ else "")
    corrupt = Text("corrupt ", style="bold")
    for i, token in enumerate(result.corrupt_tokens):
        corrupt.append(f"{i}:", style="dim")
        corrupt.append(key_label(token) + " ", style="bold magenta" if i in differ else "")
    t, v = key_label(result.target["token"]), key_label(result.versus["token"])
    metric = Text(f"metric: the logit difference {t!r} − {v!r} at {key_label(result.clean_tokens[result.position])!r} "
                  f"(#{result.position}): {result.clean_logit_diff:.3f} clean, {result.corrupt_logit_diff:.3f} corrupt", style="bold")
    if result.clean_logit_diff == result.corrupt_logit_diff:
        return unwidowed([heading, tokens, corrupt, metric, Text("the two texts give the same difference: nothing to patch back", style="bold red")])
    labels = [f"{p}:{key_label(tok)}" for p, tok in enumerate(result.clean_tokens)]
    resid = Heatmap(result.normalised(result.resid_pre), [str(l) for l in range(len(result.resid_pre))], labels, kind="scores",
                    corner="layer↓ pos→", legend=False, columns="columns: positions, numbered as in the clean line above",
                    numbers=[str(p) for p in range(len(labels))])
    heads = Heatmap(result.normalised(result.heads), [str(l) for l in range(len(result.heads))], [str(h) for h in range(result.heads.shape[1])],
                    kind="scores", corner="layer↓ head→")
    best_resid = np.unravel_index(np.nanargmax(result.normalised(result.resid_pre)), result.resid_pre.shape)
    best_head = np.unravel_index(np.nanargmax(result.normalised(result.heads)), result.heads.shape)
    return unwidowed([
        heading, tokens, corrupt, metric,
        Text("(a) the stream entering layer l at position p put back from the clean run; 1 = the clean difference, 0 = the corrupt", style="bold"),
        resid,
        Text("(b) one head's output at every position put back", style="bold"),
        heads,
        Text(f"largest: the stream at {labels[best_resid[1]]} entering layer {best_resid[0]} "
             f"({result.normalised(result.resid_pre)[best_resid]:.2f}); head {best_head[0]}.{best_head[1]} "
             f"({result.normalised(result.heads)[best_head]:.2f}). Raw differences in --json", style="dim"),
    ])


def unwidowed(parts: list) -> list:
    """Notes and token lists wrapped with no word alone on a line."""
    return [Unwidowed(p) if isinstance(p, Text) else p for p in parts]
