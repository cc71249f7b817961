"""`attn direction`: a direction in a decoder's residual stream from contrast pairs, written as a llama.cpp control vector."""

from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import ThreadsOpt
from attn_cli.errors import InputError


@app.command("direction", cls=RowsCommand, epilog=examples(
    'attn direction "the cats" "the cat" --model ./SmolLM2.Q4_1.gguf',
    'attn direction --pairs plural.tsv --holdout 4 --model m.gguf',
    'attn direction --pairs plural.tsv --model m.gguf -o plural.gguf',
))
def direction(
    positive: Annotated[str | None, typer.Argument(metavar="POSITIVE", help="The text on the direction's side (e.g. \"the cats\").", show_default=False)] = None,
    negative: Annotated[str | None, typer.Argument(metavar="NEGATIVE", help="Its contrast (e.g. \"the cat\").", show_default=False)] = None,
    model: Annotated[str, typer.Option("--model", metavar="PATH|NAME", help="A decoder: a Hugging Face folder, a .gguf file, ollama:NAME[:TAG], or a name in the local Hugging Face cache (never downloaded).", show_default=False)] = ...,
    pairs: Annotated[Path | None, typer.Option("--pairs", metavar="FILE", help="Many pairs, one a line: POSITIVE<tab>NEGATIVE (- reads stdin). Instead of, or after, the two arguments.", show_default=False)] = None,
    method: Annotated[str, typer.Option("--method", metavar="mean|pca", help="mean: the mean difference of the pairs' streams; pca: their first principal component (as repeng does), unit norm.")] = "mean",
    holdout: Annotated[int, typer.Option("--holdout", metavar="K", min=0, help="Keep the last K pairs out of the direction and report how many of them it orders right, beside a random direction.")] = 0,
    seed: Annotated[int, typer.Option("--seed", metavar="S", min=0, help="The random baseline direction's seed.")] = 0,
    probe: Annotated[str | None, typer.Option("--probe", metavar="WORDS", help="Texts projected on the direction, layer by layer, split at spaces (\"one two three\") or at commas when there is one (\"I saw one, I saw two\"); says where the projections rise along them.", show_default=False)] = None,
    out: Annotated[Path | None, typer.Option("-o", "--out", metavar="FILE", help="Write the direction as llama.cpp's control vector (direction.1 .. direction.{L-1}, F32).", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE.gguf of -o if it exists (a regular file only).")] = False,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """A direction in the residual stream from contrast pairs: the lesson's E(cats) − E(cat), inside a real model.

    Each text runs once; its stream leaving every layer at the last token is kept. The direction at
    a layer is the mean of the positive − negative differences (or their first principal
    component). With --holdout, the pairs kept out tell whether it generalises: the fraction whose
    positive projects above its negative, beside a random direction of the same norm.
    """
    from attn_cli.analysis.direction import DirectionSettings, direction as run
    from attn_cli.io.files import check_text
    from attn_cli.models.loading import load

    texts = read_pairs(positive, negative, pairs)
    words = probe_texts(check_text(probe, "--probe")) if probe is not None else []
    if probe is not None and not words:
        raise InputError("--probe: give words separated by spaces, such as \"one two three four\"")
    if out is not None:
        from attn_cli.io.atomic import check_writable

        check_writable(out, force)
    chosen = load(model)
    result = run(chosen, texts, DirectionSettings(method=method, holdout=holdout, seed=seed, probe=words))
    show(result, output)
    if out is not None:
        from attn_cli.cli.app import say
        from attn_cli.io.control_vector import write_control_vector

        written = write_control_vector(out, result.directions, result.architecture, force=force)
        say(f"wrote {written}: direction.1 to direction.{len(result.directions) - 1} ({result.directions.shape[1]} floats each)")


def probe_texts(probe: str) -> list[str]:
    """--probe's texts: split at commas when it has any ("I saw one, I saw two"), else at spaces ("one two three")."""
    parts = probe.split(",") if "," in probe else probe.split()
    return [p.strip() for p in parts if p.strip()]


def read_pairs(positive: str | None, negative: str | None, pairs: Path | None) -> list[tuple[str, str]]:
    from attn_cli.analysis.direction import parse_pairs
    from attn_cli.io.files import check_text, read_input

    if (positive is None) != (negative is None):
        raise InputError("give two texts, POSITIVE and NEGATIVE (or --pairs FILE)")
    texts = [] if positive is None else [(check_text(positive, "POSITIVE"), check_text(negative, "NEGATIVE"))]
    if pairs is not None:
        texts += parse_pairs(read_input(pairs, "a file of pairs"), f"{pairs}")
    if not texts:
        raise InputError("give two texts, POSITIVE and NEGATIVE, or --pairs FILE")
    return texts


def show(result, output: Format) -> None:
    from attn_cli.io import writers

    if output is Format.table:
        from attn_cli.io.console import view_console
        from attn_cli.views.direction import direction_view

        console = view_console()
        for part in direction_view(result):
            console.print(part)
    elif output is Format.json:
        writers.write_json(result.to_dict())
    else:
        writers.write_rows(result.rows(), output)
