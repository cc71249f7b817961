"""`--ablate L.H`: a head turned off, and the run that follows (predict, inspect, explain).

Zero-ablation replaces the head's z (its weighted values, before W_O) with zeros at every position, so it writes
nothing into the stream; mean-ablation (`--ablate-with mean`) replaces it with its mean over the text's positions in
the model's own run, which keeps the head's constant part and removes what depends on the position. Either is one
edit of the forward pass (models.points), made where attn.z is computed; everything after it follows.
"""

from attn_cli.errors import InputError
from attn_cli.records import Record

MODES = ("zero", "mean")


class Ablation(Record):
    __slots__ = ("heads", "mode")

    def __init__(self, heads: list[tuple[int, int]], mode: str = "zero"):
        self.heads = heads  # [(layer, head)], in the order given
        self.mode = mode  # "zero" | "mean"

    @property
    def names(self) -> list[str]:
        return [f"{l}.{h}" for l, h in self.heads]

    def __bool__(self) -> bool:
        return bool(self.heads)


def parse_ablation(specs: list[str] | None, mode: str, model) -> Ablation:
    """`--ablate` values ("3.1") checked against the model's layers and heads."""
    if mode not in MODES:
        raise InputError(f"--ablate-with {mode!r}: pick zero or mean")
    heads = []
    for spec in specs or []:
        try:
            l, h = (int(x) for x in spec.split("."))
        except ValueError:
            raise InputError(f"--ablate {spec!r}: give LAYER.HEAD, such as 3.1") from None
        if not (0 <= l < model.n_layers and 0 <= h < model.n_heads):
            raise InputError(f"--ablate {spec}: {model.name} has layers 0 to {model.n_layers - 1} and heads 0 to {model.n_heads - 1}")
        if (l, h) not in heads:
            heads.append((l, h))
    return Ablation(heads, mode)


def ablation_edits(model, ids: list[int], ablation: Ablation) -> list:
    """The forward pass's edits for `ablation` over these tokens (mean-ablation first runs the text to take the means)."""
    from attn_cli.models.points import Keep, Mean, Zero

    if not ablation:
        return []
    if ablation.mode == "zero":
        return [Zero("attn.z", l, head=h) for l, h in ablation.heads]
    layers = sorted({l for l, _ in ablation.heads})
    own = model.forward(ids, keep=Keep(points=("attn.z",), layers=layers))
    return [Mean("attn.z", l, head=h, mean=own.get("attn.z", l)[:, h].mean(axis=0)) for l, h in ablation.heads]  # [n, d_head] -> [d_head]
