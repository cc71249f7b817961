"""The view of `attn direction`: per layer, the direction's norm, the pairs it orders right beside a random direction, the probe."""

from rich import box
from rich.text import Text

from attn_cli.views.base import FitTable, key_label


def direction_view(result) -> list:
    m = result.model
    heading = Text(f"{m['name']} · {m['type']} · {m['layers']} layers × {m['heads']} heads", style="bold")
    n, k = len(result.pairs), result.holdout
    how = "the mean difference" if result.method == "mean" else "the first principal component (unit norm)"
    built = Text(f"{how} of resid_post at the last token, from {n - k} pair{'s' * (n - k != 1)}"
                 + (f"; {k} held out" if k else "; none held out (--holdout K measures separation on unseen pairs)"))
    parts = [heading, built, Text("per layer: the pairs ordered right (positive . v > negative . v)", style="bold"), layer_table(result)]
    if result.separation is not None:
        parts.append(Text(f"random: 100 Gaussian directions of the same norm (seed {result.seed}), their mean and 95th percentile; "
                          "cos: v's cosine with the held-out pairs' mean difference, beside the random ones' 95th percentile of |cos|",
                          style="dim"))
    if result.probe is not None:
        parts += [probe_table(result), probe_text(result)]
    return parts


def layer_table(result):
    held = result.separation is not None
    table = FitTable(box=box.SIMPLE)
    columns = ["layer", "norm", "train"] + (["held out", "random", "p95", "cos", "random p95"] if held else [])
    for name in columns:
        table.add_column(name, justify="right")
    norms = result.norms()
    for l in range(len(result.directions)):
        row = [str(l), f"{norms[l]:.3g}", f"{result.train_separation[l]:.0%}"]
        if held:
            row += [f"{result.separation[l]:.0%}", f"{result.baseline[l]:.0%}", f"{result.baseline_high[l]:.0%}", f"{result.cosine[l]:.2f}",
                    f"{result.random_cosine[l]:.2f}"]
        table.add_row(*row)
    return table


def probe_table(result):
    table = FitTable(box=box.SIMPLE, title="the probe: each text's last-token stream . v", title_justify="left")
    for name in ["layer"] + [key_label(w) for w in result.probe_words] + ["rises"]:
        table.add_column(name, justify="right")
    for l in range(len(result.directions)):
        rising = bool(result.rises[l])
        table.add_row(str(l), *[f"{x:.4g}" for x in result.probe[:, l]], "yes" if rising else "", style="bold" if rising else None)
    return table


def probe_text(result) -> Text:
    words = " < ".join(key_label(w) for w in result.probe_words)
    layers = result.rising_layers()
    total = len(result.directions)
    if not layers:
        return Text(f"no rise: at no layer do the projections increase along {words} "
                    f"(a random order rises with probability {result.chance:.3g})", style="bold")
    return Text(f"a rise ({words}) at {len(layers)} of {total} layers: {', '.join(map(str, layers))} "
                f"(a random order rises with probability {result.chance:.3g} per layer)", style="bold")
