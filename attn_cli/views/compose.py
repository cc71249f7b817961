"""The view of `attn heads compose`: one later head's map of earlier heads (layer x head), and the top pairs of each mode."""

from rich import box
from rich.text import Text

from attn_cli.views.base import FitTable

NAMES = {"q": "Q-composition (W_OV then W_QK)", "k": "K-composition (W_OV then W_QK^T)", "v": "V-composition (W_OV then W_OV)"}


def compose_view(result) -> list:
    m = result.model
    l2, h2 = result.to
    parts = [Text(f"{m['name']} · {m['type']} · {m['layers']} layers × {m['heads']} heads", style="bold"),
             Text("||W_OV M||_F / (||W_OV||_F ||M||_F), as TransformerLens's composition_scores; folded: " + result.folded, style="dim"),
             baseline_text(result),
             Text(f"{NAMES[result.mode]} of every earlier head into head {l2}.{h2} (--to L.H, --mode q|k|v)", style="bold"),
             head_map(result)]
    parts += [Text("the top pairs of the model, by each mode (z: standard deviations above the random mean)", style="bold"), top_table(result)]
    return parts


def baseline_text(result) -> Text:
    random = ", ".join(f"{mode.upper()} {mean:.3f} ± {std:.3f}" for mode, (mean, std) in result.baseline.items())
    own = ", ".join(f"{mode.upper()} {result.median(mode):.3f}" for mode in result.baseline)
    return Text(f"random heads (iid Gaussian, the model's shapes; {result.draws} pairs, seed {result.seed}), mean ± sd: {random}; "
                f"the model's own pairs, median: {own}", style="dim")


def head_map(result):
    """The chosen mode's scores of every earlier head into the chosen one: a row per layer, a column per head."""
    from attn_cli.views.heatmap import Heatmap

    l2, h2 = result.to
    H = result.scores["k"].shape[1]
    matrix = result.scores[result.mode][:l2, :, l2, h2]  # [l2, H]
    class ScoreMap(Heatmap):
        def cell_text(self, x: float, digits: int = 3) -> str:  # scores in [0, 1], three decimals: ".042"
            return "·" if x != x else f"{x:.3f}".removeprefix("0")

    return ScoreMap(matrix, [f"L{l}" for l in range(l2)], [str(h) for h in range(H)], kind="norms", corner="layer", legend=False)


def top_table(result):
    table = FitTable(box=box.SIMPLE)
    for name in ("mode", "from", "to", "score", "z"):
        table.add_column(name, justify="right")
    for mode in ("q", "k", "v"):
        for i, (l1, h1, l2, h2) in enumerate(result.ranked(mode, result.top)):
            score = float(result.scores[mode][l1, h1, l2, h2])
            table.add_row(mode.upper() if i == 0 else "", f"{l1}.{h1}", f"{l2}.{h2}", f"{score:.3f}", f"{result.z(mode, score):.1f}",
                          end_section=i == result.top - 1)
    return table
