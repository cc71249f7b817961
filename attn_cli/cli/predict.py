"""`attn predict`: a real model's own prediction, a softmax over its vocabulary, and the logit lens."""

import math
from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import AblateOpt, AblateWith, AblateWithOpt, SteerLayerOpt, SteerLayersOpt, SteerOpt, ThreadsOpt, ablate_with_value, steer_span
from attn_cli.errors import InputError

MAX_TOP = 100


@app.command("predict", cls=RowsCommand, epilog=examples(
    'attn predict "The capital of France is" --model ollama:smollm2 --lens',
    'attn predict "Capital of France?" --model ./smollm2 --chat --top 5 --json',
    'attn predict "The capital of France is" --model ./smollm2 --token " Lyon"',
))
def predict(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The text to continue (a decoder), or with [MASK] where a masked LM should fill in; - reads one per line from stdin.", show_default=False)],
    model: Annotated[str, typer.Option("--model", metavar="PATH|NAME", help="A checkpoint: a Hugging Face folder, a .gguf file, ollama:NAME[:TAG], a name in the local Hugging Face cache, or an installed Python package that ships a .gguf file (never downloaded).", show_default=False)],
    top: Annotated[int, typer.Option("--top", metavar="K", min=1, max=MAX_TOP, help="Tokens to list.")] = 10,
    temperature: Annotated[float, typer.Option("--temperature", "-t", help="Divide the logits by T before softmax: low T sharper, high T flatter; T = 0 is the argmax.")] = 1.0,
    chat: Annotated[bool, typer.Option("--chat", help="Wrap the text in the model's own chat template as a user's message first.")] = False,
    lens: Annotated[bool, typer.Option("--lens", help="Also read every layer's residual through the output head (the logit lens): what it would predict there.")] = False,
    focus: Annotated[str | None, typer.Option("--focus", metavar="WORD|INDEX", help="Predict from this token instead (a word of several tokens: its last; default: the last one, or the [MASK]).", show_default=False)] = None,
    token: Annotated[list[str] | None, typer.Option("--token", metavar="TEXT|ID", help="Also the probability, logit and rank of this token, however far down (a text that is one token, a leading space included: \" Paris\"; or id:N, its id). Repeat for several.", show_default=False)] = None,
    max_memory: Annotated[str | None, typer.Option("--max-memory", metavar="SIZE", help="The memory the run may take (4G, 512M); default: most of what is available. A run that needs more is refused before it starts.", show_default=False)] = None,
    ablate: AblateOpt = None,
    ablate_with: AblateWithOpt = AblateWith.zero,
    steer: SteerOpt = None,
    steer_layer: SteerLayerOpt = None,
    steer_layers: SteerLayersOpt = None,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """The model's own prediction: its logits at the last position through softmax over the whole vocabulary, the top tokens.

    The lesson's last step: "the transformer block finally produces a probability distribution
    over the next token". A masked-LM encoder (BERT with its head) predicts a [MASK] instead.
    """
    from attn_cli.analysis.predict import PredictSettings, predict as run
    from attn_cli.cli.emit import emit, line_text, stdin_lines
    from attn_cli.io.files import check_text
    from attn_cli.models.loading import load

    if not math.isfinite(temperature) or temperature < 0:
        raise InputError(f"--temperature must be a finite number >= 0, not {temperature:g}")
    ablate_with = ablate_with_value(ablate, ablate_with)  # a str from here
    lines = stdin_lines() if text == "-" else iter([(1, check_text(text, "TEXT"))])
    from attn_cli.io.control_vector import steer_edits

    span = steer_span(steer, steer_layer, steer_layers)
    chosen = load(model)
    if chosen.predicts is None:
        raise InputError(f"{chosen.name} has no output head to predict with: an encoder without a masked-LM head (attn inspect --model shows its layers)")
    from attn_cli.models.footprint import parse_size

    asked = [check_text(t, "--token") for t in token or []]
    edits, steered = steer_edits(chosen, steer or [], span)
    settings = PredictSettings(top=top, temperature=temperature, chat=chat, lens=lens, focus=focus, asked=asked,
                               max_memory=None if max_memory is None else parse_size(max_memory), ablate=ablate, ablate_with=ablate_with, steer=edits, steered=steered)

    def view(result, line: int) -> list:
        from attn_cli.views.predict import predict_view

        return predict_view(result)

    from attn_cli.io.control_vector import steering_blamed

    with steering_blamed(steered):
        emit(lines, lambda line: run(chosen, line_text(line), settings), view, single=text != "-", output=output, exports=None, options=None)
