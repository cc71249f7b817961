"""`attn generate`: a decoder writes, token by token, and every new token's attention is kept for the views."""

import math
import sys
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples, interruption
from attn_cli.cli.options import SteerLayerOpt, SteerLayersOpt, SteerOpt, ThreadsOpt, page_file, parse_head, steer_span
from attn_cli.errors import InputError


@app.command("generate", cls=RowsCommand, epilog=examples(
    'attn generate "The capital of France is" --model ./SmolLM2.Q4_1.gguf',
    'attn generate "A story?" --model ollama:smollm2 --chat -t 0.8 --seed 1',
    'attn generate "Once upon a time" --model m.gguf --jsonl | head -3',
))
def generate(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The prompt to continue; - reads it from stdin (all of it, one prompt).", show_default=False)],
    model: Annotated[str, typer.Option("--model", metavar="PATH|NAME", help="A decoder: a Hugging Face folder, a .gguf file, ollama:NAME[:TAG], a name in the local Hugging Face cache, or an installed Python package that ships a .gguf file (never downloaded).", show_default=False)],
    steps: Annotated[int, typer.Option("--steps", "-n", metavar="N", min=1, max=100_000, help="New tokens at most; it stops sooner at the model's end of turn.")] = 32,
    temperature: Annotated[float, typer.Option("--temperature", "-t", help="0: greedy (the most probable token each step); else sample from softmax(logits / T).")] = 0.0,
    top_k: Annotated[int | None, typer.Option("--top-k", metavar="K", min=1, help="Sample among the K most probable tokens only.", show_default=False)] = None,
    top_p: Annotated[float | None, typer.Option("--top-p", metavar="P", help="Then among the fewest tokens that hold probability P (0 < P <= 1).", show_default=False)] = None,
    seed: Annotated[int | None, typer.Option("--seed", metavar="S", min=0, help="Seed the sampler: the same seed, the same text.", show_default=False)] = None,
    chat: Annotated[bool, typer.Option("--chat", help="Wrap the text in the model's own chat template as a user's message first.")] = False,
    head: Annotated[str | None, typer.Option("--head", metavar="L.H", help="Name each step's sources by this head's attention (default: every head, the mean).", show_default=False)] = None,
    page: Annotated[Path | None, typer.Option("--page", metavar="FILE", parser=page_file, help="Also write an offline page of the generation: step through the new tokens, see each one's attention, pick a layer and a head.", show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace FILE of --page if it exists (a regular file only).")] = False,
    max_memory: Annotated[str | None, typer.Option("--max-memory", metavar="SIZE", help="The memory the run may take (4G, 512M); default: most of what is available. A run that needs more is refused before it starts, naming the --steps that would fit.", show_default=False)] = None,
    steer: SteerOpt = None,
    steer_layer: SteerLayerOpt = None,
    steer_layers: SteerLayersOpt = None,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Generate: predict the next token, append it, repeat, with the attention of every new token.

    The lesson's last loop. Each step runs only the new token through the layers (the keys and
    values of the tokens before it come from a cache), draws the next token, and keeps where it
    looked. At the end, each new token's probability, its runner-up and its top sources.
    """
    from attn_cli.analysis.generate import GenerateSettings, Generation, Sampling
    from attn_cli.io.files import check_text, stdin_text
    from attn_cli.models.loading import load

    if not math.isfinite(temperature) or temperature < 0:
        raise InputError(f"--temperature must be a finite number >= 0, not {temperature:g}")
    if top_p is not None and not 0 < top_p <= 1:
        raise InputError(f"--top-p must be in (0, 1], not {top_p:g}")
    if temperature == 0 and (top_k is not None or top_p is not None or seed is not None):
        raise InputError("--top-k, --top-p and --seed shape sampling: give --temperature T > 0 with them (T = 0 is greedy)")
    layer_head = parse_head(head) if head is not None else None
    from attn_cli.models.footprint import parse_size

    limit = None if max_memory is None else parse_size(max_memory)
    if page is not None:
        from attn_cli.io.atomic import check_writable

        check_writable(page, force)
    prompt = check_text(stdin_text("TEXT") if text == "-" else text, "TEXT")
    from attn_cli.io.control_vector import steer_edits, steering_blamed

    span = steer_span(steer, steer_layer, steer_layers)
    chosen = load(model)
    edits, steered = steer_edits(chosen, steer or [], span)
    settings = GenerateSettings(steps=steps, sampling=Sampling(temperature, top_k, top_p, seed), chat=chat, head=layer_head,
                                attention=page is not None, steer=edits, steered=steered)  # only the page draws every step's rows
    run = Generation(chosen, prompt, settings)
    check_footprint(run, steps, limit, page is not None)
    stopped = None
    streamed = output is Format.table and sys.stdout.isatty()  # into a pipe or a file, the text comes whole, wrapped, at the end
    try:
        with steering_blamed(steered):
            if streamed:
                stream_to_terminal(run)
            elif output is Format.jsonl:
                stream_lines(run)
            else:
                for _ in run:
                    pass
    except BaseException as e:
        if interruption(e) is None:
            raise
        stopped = e  # Ctrl-C: what was made is shown and written, then attn exits 130
    result = run.result()
    finish(result, output, page, force, streamed=streamed)
    if stopped is not None:
        raise stopped


def check_footprint(run, steps: int, max_memory: int | None, page: bool) -> None:
    """Refuse, before the first pass, a generation whose estimate (models.footprint.generation) passes the limit, naming the
    --steps that would fit."""
    from attn_cli.analysis.generate import HOLD_BYTES, PAGE_CELLS
    from attn_cli.models import footprint

    prompt = len(run.tokens.ids)
    need = lambda s: footprint.generation(run.model, prompt, s, HOLD_BYTES, PAGE_CELLS if page else None)  # noqa: E731
    footprint.check(run.model, steps, need, "generate", max_memory, over=f"of {steps:,} steps after {prompt:,} token{'s' if prompt != 1 else ''}",
                    fits=lambda k: f"--steps {k:,}" if k else "a shorter prompt")


def stream_to_terminal(run) -> None:
    """The prompt, then each new token's text as it is made (a byte-level token that ends mid-character waits for the rest)."""
    from rich.text import Text

    from attn_cli.io.console import view_console

    out = view_console()
    m = run.model
    out.print(Text(f"{m.name} · {m.kind} · {m.n_layers} layers × {m.n_heads} heads", style="bold"))
    out.print(Text(m.tokenizer.decode(list(run.tokens.ids), skip_special_tokens=False), style="dim"), end="")
    shown = ""
    for _ in run:
        text = run.text()
        if text.endswith("\ufffd"):  # part of a character's bytes: the next token completes it
            continue
        out.print(Text(text[len(shown):], style="cyan"), end="")
        shown = text
        out.file.flush()
    out.print(Text(run.text()[len(shown):], style="cyan"))


def stream_lines(run) -> None:
    """One JSON object per step, written and flushed as it is made: a reader can stop at any line."""
    from attn_cli.io.output import json_line
    from attn_cli.results.generate import step_dict

    prompt = list(run.tokens.labels)
    for step in run:
        sys.stdout.write(json_line(step_dict(step, prompt, [s.token for s in run.steps])) + "\n")
        sys.stdout.flush()


def finish(result, output: Format, page, force: bool, *, streamed: bool) -> None:
    from attn_cli.io import writers

    if output is Format.table:
        from attn_cli.io.console import view_console
        from attn_cli.views.generate import generate_view

        out = view_console()
        for part in generate_view(result, streamed=streamed):
            out.print(part)
    elif output is Format.json:
        writers.write_json(result.to_dict())
    elif output is Format.jsonl:
        from attn_cli.cli.app import say
        from attn_cli.results.generate import STOPS

        say(f"{len(result.steps)} new tokens; stopped: {STOPS[result.stop]}")
    else:
        writers.write_rows(result.rows(), output)
    if page is not None:
        from attn_cli.io.generate_page import write_page

        from attn_cli.cli.app import say

        say(write_page(page, result, force=force))
