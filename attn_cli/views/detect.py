"""`attn heads detect`: per pattern, the best heads beside the baselines, and every head as a layers x heads grid."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli.views.base import bar

FORMS = {"mul": "share of the head's weight on the pattern's keys (mul)", "abs": "1 - Σ|A - P| / n: 1 = the pattern exactly, -1 = its opposite (abs)"}


def fmt(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def where_scored(result, name: str) -> str:
    from attn_cli.analysis.detect import REPEATED

    if name in REPEATED:
        r = result.repeated
        return f"a random sequence of {r['length']} tokens (seed {r['seed']}), then the same again"
    n, source = result.text["sentences"], result.text["source"]
    return "the sentence given" if source == "TEXT" else f"{n} sentence{'' if n == 1 else 's'} of {source}"


def no_score(result, name: str) -> str:
    """Why a pattern has no score: no sequence holds one of its keys once the exclusions are made."""
    if name == "first" and result.exclude_bos:
        return "--exclude-bos leaves out the first token, this pattern's only key: no score"
    if name == "self" and result.exclude_current:
        return "--exclude-current leaves out each query's weight on itself, this pattern's only key: no score"
    if name == "special":
        where = "the sentence" if result.text["source"] == "TEXT" else "these sentences"
        if not left_out(result):
            return f"{result.model}'s tokenizer adds no special token ([CLS], [SEP], BOS...) to {where}, so no key fits the pattern: no score"
        return f"no special token ([CLS], [SEP], BOS...) of {where} is left{exclusions(result)}: no score"
    return f"no sequence has a key of this pattern{exclusions(result)}: no score"


def pattern_table(result, name: str, top: int) -> list:
    from attn_cli.analysis.detect import ABOUT

    ranked = result.ranked(name)
    base = result.baselines(name)
    title = Text(f"{name}", style="bold cyan")
    title.append(f": weight on {ABOUT[name]} · on {where_scored(result, name)}", style="dim")
    if result.found[name]["sequences"] == 0:
        return [title, Text(no_score(result, name), style="yellow")]
    table = Table(box=box.SIMPLE)
    for column, justify in (("head", "left"), ("score", "right"), ("", "left")):
        table.add_column(column, justify=justify)
    span = (0.0, 1.0) if result.error == "mul" else (-1.0, 1.0)
    for row in ranked[:top]:
        shown = 0.0 if row["score"] is None else (row["score"] - span[0]) / (span[1] - span[0])
        table.add_row(f"{row['layer']}.{row['head']}", fmt(row["score"]), bar(shown, 16))
    table.add_section()
    table.add_row(Text("even (baseline)", style="dim"), fmt(base["even"]), "")
    table.add_row(Text("random (baseline)", style="dim"), fmt(base["random"]), "")
    parts = [title, table]
    best = ranked[0]["score"]
    floor = max(b for b in base.values() if b is not None)
    if best is None or best <= floor:
        parts.append(Text(f"no head scores above the baselines ({floor:.3f}): no {name} head found", style="yellow"))
    return parts


def left_out(result) -> list[str]:
    return [what for what, on in (("the weight on the first token", result.exclude_bos), ("each query's weight on itself", result.exclude_current)) if on]


def exclusions(result) -> str:
    return f" once {' and '.join(left_out(result))} {'is' if len(left_out(result)) == 1 else 'are'} left out" if left_out(result) else ""


def grid(result, name: str):
    """Every head's score on the pattern as a heatmap: layers down, heads across (· = not scored)."""
    from attn_cli.views.heatmap import Heatmap

    kind = "weights" if result.error == "mul" else "scores"
    return Heatmap(result.found[name]["heads"], [f"L{l}" for l in range(result.layers)], [f"h{h}" for h in range(result.heads)],
                   kind=kind, corner="layer↓ head→")


def heads_detected(result, top: int = 5) -> list:
    from rich.rule import Rule

    heading = Text(f"{result.model}: {result.layers} layers × {result.heads} heads · score = {FORMS[result.error]}", style="bold")
    if result.exclude_bos or result.exclude_current:
        heading.append(f"\nleft out of every score: {' and '.join(left_out(result))}", style="dim")
    parts: list = [heading]
    for name in result.found:
        parts += [Rule(style="dim"), *pattern_table(result, name, top)]
        if result.found[name]["sequences"]:
            parts.append(grid(result, name))
    parts.append(Text("baselines: even = weight spread over the keys each query sees; random = all of a query's weight on one key "
                      "it sees, drawn at random; both scored as the heads are, on the same sequences", style="dim"))
    return parts
