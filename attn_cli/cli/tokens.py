"""`attn tokens`: how a model's tokenizer cuts a text, each piece with its id (llama.cpp's tokenize tool)."""

from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import LimitOpt, ModelOpt, TrustOpt, VectorsOpt


@app.command("tokens", cls=RowsCommand, epilog=examples(
    'attn tokens "Hello, world!" --model ./gemma-3-270m-q4_k_m.gguf',
    'attn tokens "naïve café" --model ollama:smollm2 --json',
    'attn tokens "the cat sat"',
))
def tokens(
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The text to cut into tokens; - reads one per line from stdin.", show_default=False)],
    model: ModelOpt = None,
    chat: Annotated[bool, typer.Option("--chat", help="With --model: wrap the text in the model's own chat template as a user's message first.")] = False,
    vectors_path: VectorsOpt = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    output: FormatOpt = Format.table,
) -> None:
    """How a model's tokenizer cuts a text: each piece with its id, the special tokens marked.

    The ids are those inspect and predict run the model on: the same BOS/EOS (as the tokenizer
    or GGUF file says), the same chat template with --chat. Without --model, the word vectors'
    tokenizer: each word and its row in the vectors (none for a word without a vector).
    """
    from attn_cli.cli.emit import emit, line_text, stdin_lines
    from attn_cli.errors import InputError
    from attn_cli.io.files import check_text

    if chat and model is None:
        raise InputError("--chat needs --model: the word vectors have no chat template")
    lines = stdin_lines() if text == "-" else iter([(1, check_text(text, "TEXT"))])
    if model is not None:
        from attn_cli.analysis.tokens import checkpoint_tokens
        from attn_cli.models.loading import load

        chosen = load(model)
        compute = lambda line: checkpoint_tokens(chosen, line_text(line), chat)  # noqa: E731
    else:
        from attn_cli.analysis.tokens import word_tokens
        from attn_cli.cli.options import load_vectors

        vectors = load_vectors(vectors_path, limit, trust_pickle)
        compute = lambda line: word_tokens(vectors, line_text(line))  # noqa: E731

    def view(result, line: int) -> list:
        from attn_cli.views.tokens import tokens_view

        return tokens_view(result)

    emit(lines, compute, view, single=text != "-", output=output, exports=None, options=None)
