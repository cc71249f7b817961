"""Help and usage errors that guide: options in panels, the output formats a line each, and the names a typo meant.

Read only when --help is shown or an option is mistyped: not on any command's start.
"""

from attn_cli.io.writers import Format

FORMAT_HELP = {  # each --format's line in --help, under "Output"
    Format.json: "One JSON document: every number the view shows, and more",
    Format.jsonl: "JSON Lines: one object a line (with -, one per input line, as each is done)",
    Format.csv: "Tidy rows under a header, for pandas, R, DuckDB or a spreadsheet",
    Format.tsv: "The same rows, separated by tabs",
}


def format_options(command, ctx, formatter, chosen: dict, shorthands: dict) -> None:
    """Arguments, then the options under their panels (`chosen`: parameter name -> panel; the others first, as
    "Options"), the output formats under "Output format" with each shorthand (--json: Format.json) on a line
    of its own, and -h/--help last."""
    args, panels, helps = [], {"Options": [], **{panel: [] for panel in chosen.values()}}, []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        if param.param_type_name == "argument":
            args.append(record)
            continue
        if param.name == "help":
            helps.append(record)
            continue
        panel = panels.setdefault(chosen.get(param.name) or getattr(param, "rich_help_panel", None) or "Options", [])
        rank = list(chosen).index(param.name) if param.name in chosen else len(chosen)
        panel.append((rank, record))
        if param.name == "output":
            panel += [(rank, (flag, f"{FORMAT_HELP[f]} (--format {f.value})")) for flag, f in shorthands.items()]
    if args:
        with formatter.section("Arguments"):
            formatter.write_dl(args)
    shown = [name for name, records in panels.items() if records]
    for name in shown:
        with formatter.section(name):
            records = [record for _, record in sorted(panels[name], key=lambda ranked: ranked[0])]  # stable: the rest as declared
            formatter.write_dl(records + (helps if name == shown[-1] else []))


def suggestion(typed: str, names: list[str]) -> str:
    """Click's "no such option" with the likeliest names meant, nearest first."""
    import difflib

    close = difflib.get_close_matches(typed, names, n=3, cutoff=0.6)
    ratio = lambda name: difflib.SequenceMatcher(None, typed, name).ratio()  # noqa: E731
    close = [name for name in close if ratio(name) >= ratio(close[0]) - 0.1]
    return f"No such option: {typed}" + (f" (did you mean {', '.join(close[:-1]) + ' or ' if len(close) > 1 else ''}{close[-1]}?)" if close else "")
