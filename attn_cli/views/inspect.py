"""What `attn inspect` shows, as a registry of views: each names what it needs from the result and draws its part.

A sentence's screen is the registered views in order, each shown when the result holds what it
needs and the options ask for it. Adding a view is its module (a function `(result, options) ->
[renderables]`) and one line in VIEWS.
"""

import importlib

from attn_cli.records import Record


class ViewOptions(Record):
    """What the options ask the views for (a plain class: see attention.Head)."""

    __slots__ = ("stage", "transpose", "per_head", "picture", "overview", "weigh", "neighbors", "lead")

    def __init__(self, stage: str = "weights", transpose: bool = False, per_head: bool = False, picture: bool = False, overview: bool = False,
                 weigh: str = "weight", neighbors: int | None = None, lead: bool = True):
        self.stage = stage  # the matrix the heatmaps show: "scores", "masked" or "weights"
        self.transpose = transpose  # queries as columns
        self.per_head = per_head  # each head's own shift under its heatmap
        self.picture = picture  # E -> E' (or a token's path) as arrows in 2-D
        self.overview = overview  # every head as a thumbnail, not the chosen heads in full
        self.weigh = weigh  # "norm": the heatmaps show ||alpha_ij f(x_j)|| in place of the weights
        self.neighbors = neighbors  # --neighbors K: the shift table's columns of nearest keys (None: not asked, a hint says how)
        self.lead = lead  # open with what the screen is about (one sentence; not repeated for each line of -)


class View(Record):
    __slots__ = ("name", "needs", "where", "wanted")

    def __init__(self, name: str, needs: tuple, where: str, wanted=lambda options: True):
        self.name = name
        self.needs = needs  # result sections that must be there (not None)
        self.where = where  # "module:function" under attn_cli.views
        self.wanted = wanted  # whether the options ask for it

    def parts(self, result, options) -> list:
        module, _, function = self.where.partition(":")
        return getattr(importlib.import_module(f"attn_cli.views.{module}"), function)(result, options)


VIEWS = [  # in the order they are shown: what a sentence became, the map of every head, the numbers, then what was asked for,
    # so that it ends the screen (a --focus token's path, the heads in full, the rollout, the picture)
    View("heading", (), "captions:heading"),
    View("weighing", (), "flow:weighing", lambda o: o.weigh == "norm"),
    View("shift", ("e",), "shift:shift"),
    View("overview", ("weights",), "overview:overview", lambda o: o.overview),
    View("layers", ("attn_norms",), "residual:layers"),
    View("next", ("weights",), "overview:next_step", lambda o: o.overview),
    View("residual", ("residual",), "residual:path"),
    View("senses", ("senses",), "senses:meter"),
    View("meter", ("sense_meter",), "meter:meter"),
    View("heatmap", (), "long:heads", lambda o: not o.overview),  # a long text's heads summarised (views.long)
    View("rollout", ("rollout",), "flow:rollout"),
    View("picture", (), "picture:picture", lambda o: o.picture),
]
EXPORTS = tuple(v.name for v in VIEWS if v.name not in ("heading", "weighing", "next"))  # what --export-view can save alone (not a caption)


def chosen(result, options: ViewOptions) -> list[View]:
    return [v for v in VIEWS if v.wanted(options) and all(getattr(result, need) is not None for need in v.needs)]


def named(name: str) -> View:
    return next(v for v in VIEWS if v.name == name)


def inspect_view(result, options: ViewOptions) -> list:
    """Everything `attn inspect` shows for one sentence, in order."""
    parts = [part for view in chosen(result, options) for part in view.parts(result, options)]
    if getattr(result, "ablation", None):
        from rich.text import Text

        what = "zeros" if result.ablation.mode == "zero" else "its mean over the positions"
        parts.insert(0, Text(f"head{'s' if len(result.ablation.heads) > 1 else ''} {', '.join(result.ablation.names)} ablated ({what} in "
                             "place of its output): the attention below is the run that follows", style="bold magenta"))
    if getattr(result, "steered", None):
        from attn_cli.views.base import steered_line

        parts.insert(0, steered_line(result.steered))
    return parts
