"""`attn heads`: the list of heads, a trained head, an evaluation."""

from rich import box
from rich.table import Table
from rich.text import Text

from attn_cli import results
from attn_cli.views.base import FitTable, bar


def _figure(value) -> str:
    return "-" if value is None or value != value else f"{value:.2f}"


def heads_list(result: results.HeadsList) -> Table:
    table = FitTable(box=box.SIMPLE, title=f"attention heads (d = {result.dimension}; default: {' + '.join(result.default)})")
    table.add_column("head", style="bold")
    table.add_column("d_k", justify="right")
    table.add_column("learned")
    table.add_column("what it does / recorded metric")
    for head in result.heads:
        about = Text(head.description)
        if head.summary:
            about.append("\n" + head.summary, style="green")
        table.add_row(head.name, str(head.d_k), "yes" if head.trained else "no", about)
    return table


def head_trained(result: results.HeadTrained) -> Table:
    table = FitTable(box=box.SIMPLE, show_header=False, title=f"trained {result.path}")
    table.add_column(style="bold")
    table.add_column()
    table.add_row("links", f"{result.links:,} ({result.train_sentences} sentences trained on, {result.heldout_sentences} held out)")
    table.add_row("d_k / steps / seed / mask", f"{result.d_k} / {result.steps} / {result.seed} / {result.mask}")
    table.add_row("final training loss", f"{result.final_loss:.4f}")
    if result.heldout:
        top, weight = result.heldout["top_on_key"], result.heldout["key_weight"]
        table.add_row("held-out: top weight on a linked key", Text(f"{_figure(top)} ").append(bar(top, 16)))
        table.add_row("held-out: weight on linked keys", Text(f"{_figure(weight)} ").append(bar(weight, 16)))
        table.add_row("held-out linked queries", str(result.heldout["queries"]))
    else:
        table.add_row("held-out", "no sentences held out (--holdout 0): nothing measured")
    return table


EVAL_COLUMNS = {
    "links": [("top_on_key", "top on key"), ("exact_top", "exact top"), ("key_weight", "key weight"), ("others_on_self", "others on self")],
    "senses": [("before", "before"), ("after", "after"), ("mean_cos", "cos(E,E′)"), ("mean_delta_ratio", "‖ΔE‖/‖E‖"),
               ("mean_context_ratio", "‖ΔE_ctx‖/‖E‖"), ("scale", "s")],
}


def heads_eval(result: results.HeadsEval):
    """A row per head (or the heads together) and per baseline, the measures as columns."""
    c = result.counts
    if result.format == "links":
        caption = (f"{c['queries']} linked queries in {c['sentences']} sentences; mask {result.mask}"
                   + (f"; {c['dropped']} link{'s' if c['dropped'] != 1 else ''} dropped (key after its query, hidden by the causal mask)"
                      if c["dropped"] else ""))
        caption += ("\ntop on key: the largest non-self weight is on a linked key; exact top: the linked keys are exactly "
                    "the largest non-self weights; key weight: mean weight on the linked keys; others on self: "
                    "mean weight of every other token on itself")
    else:
        caption = (f"{c['cases']} cases, sense set {result.sense_set}; mask {result.mask}"
                   + (f"; {c['skipped']} skipped (context after the word, hidden by the causal mask)" if c["skipped"] else ""))
        if c.get("unplaced"):
            caption += (f"\n{c['unplaced']} of the skipped cases have no context column and content words on both sides of the word: "
                        "add before|after as a 4th column to score them under the causal mask")
        caption += ("\nbefore / after: share of cases where E / E′ of the word is nearer its intended sense than every other "
                    "(mean cosine with the probe words); the even rows spread the weight evenly over the visible tokens other than the word "
                    "(content words: not function words or punctuation), ΔE = s Σ_j w_ij E_j, s giving the heads' mean ‖ΔE‖/‖E‖")
    if c.get("unknown"):
        words = ", ".join(c["unknown"][:10]) + (f" and {len(c['unknown']) - 10} more" if len(c["unknown"]) > 10 else "")
        caption += f"\nwithout a vector (--oov): {words}"
    from rich.console import Group

    parts = [EvalTable(result), Text(caption, style="dim")]
    return Group(*parts) if result.cases is None else Group(*parts, Text(""), eval_cases(result.cases))


class EvalTable:
    """The measures of `heads eval`, a row per pattern: what each row is goes in a last column when the
    console is wide enough for it to read, else in lines under the table, so the figures never wrap."""

    WHAT_WIDTH = 30  # the narrowest "what" column that still reads as prose

    def __init__(self, result: results.HeadsEval):
        self.result = result

    def table(self, with_what: bool) -> Table:
        result = self.result
        table = FitTable(box=box.SIMPLE, title=f"heads eval: {result.file}", title_justify="left", collapse_padding=True)
        table.add_column("", style="bold", no_wrap=True)
        for _, label in EVAL_COLUMNS[result.format]:
            table.add_column(label, justify="right", no_wrap=True)
        if with_what:
            table.add_column("what", style="dim")
        for row in result.patterns:
            name = Text(row["name"], style="" if row["kind"] == "baseline" else "bold cyan")
            figures = ["-" if x is None or x != x else f"{x:.3f}" for x in (row.get(key) for key, _ in EVAL_COLUMNS[result.format])]
            table.add_row(name, *figures, *([row.get("about", "")] if with_what else []))
        return table

    def __rich_console__(self, console, options):
        plain = self.table(with_what=False)
        if console.measure(plain, options=options).maximum + self.WHAT_WIDTH <= options.max_width:
            yield self.table(with_what=True)
            return
        yield plain
        for row in self.result.patterns:
            if row.get("about"):
                yield Text.assemble((f"  {row['name']}: ", "bold"), (row["about"], "dim"))
        yield Text("")


def eval_cases(cases: list) -> Table:
    """`heads eval --cases`: each sense case, its nearest sense before and after the heads, resolved or not."""
    missed = sum(not c["resolved"] for c in cases)
    table = FitTable(box=box.SIMPLE, title=f"cases: {len(cases) - missed} resolved, {missed} not", title_justify="left",
                  caption="margin: the intended sense's score less the best other's (mean cosine with the probe words); "
                          "resolved when E′'s margin is above 0. pulls: the words whose share of ΔE, added to E alone, "
                          "moves the margin most (+ toward the intended sense)", caption_justify="left", collapse_padding=True)
    table.add_column("line", justify="right", style="dim")
    table.add_column("word", style="bold")
    table.add_column("sense")
    table.add_column("E nearest")
    table.add_column("E′ nearest")
    table.add_column("margin E → E′", justify="right", no_wrap=True)
    table.add_column("pulls")
    table.add_column("sentence", overflow="fold", ratio=1)
    for c in cases:
        mark = Text("✓ " if c["resolved"] else "✗ ", style="green" if c["resolved"] else "red")
        after = mark + Text(c["nearest_after"], style="" if c["resolved"] else "red")
        shown = [p["token"] for p in c.get("pulls", [])]
        label = lambda p: f"{p['token']}#{p['index']}" if shown.count(p["token"]) > 1 else p["token"]  # noqa: E731  a word twice: which one
        pulls = Text("\n").join(Text(f"{label(p)} ").append(f"{p['pull']:+.2f}", style="green" if p["pull"] > 0 else "red")
                                for p in c.get("pulls", []))
        table.add_row(str(c["line"] or ""), c["word"], c["sense"], c["nearest_before"], after,
                      f"{c['margin_before']:+.3f} → {c['margin_after']:+.3f}", pulls, c["sentence"])
    return table
