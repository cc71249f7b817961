"""`attn analogy`: directions and analogies over word vectors."""

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import LimitOpt, OovOpt, TrustOpt, VectorsOpt, load_vectors
from attn_cli.errors import AttnError, DataError, InputError
from attn_cli.lesson.directions import MAX_NEIGHBORS
from attn_cli.vectors.tokens import Oov
from attn_cli.io.writers import write


class Method(str, Enum):
    cosadd = "cosadd"
    cosmul = "cosmul"


def read_probes(path: Path) -> list[str]:
    """Probe words from a file (or '-' for stdin), separated by spaces or new lines; '#' starts a comment."""
    from attn_cli.io.files import read_input

    try:
        text = read_input(path, "a probes file")
    except AttnError as e:
        raise DataError(f"cannot read the probes ({e})") from None
    words = [w for line in text.splitlines() for w in line.split("#", 1)[0].split()]
    if not words:
        raise InputError(f"{path}: no probe words in it")
    return words


@app.command(cls=RowsCommand, epilog=examples("attn analogy cats cat", "attn analogy cats cat dog", "attn analogy king man -p queen -p woman"))
def analogy(
    words: Annotated[list[str], typer.Argument(metavar="WORD", help="A B: the direction E(A) - E(B). A B C: B is to A as C is to ?", show_default=False)],
    probe: Annotated[
        list[str] | None, typer.Option("--probe", "-p", metavar="WORD", help="A word to score against the direction (repeatable). Default: singular/plural pairs and one..four.")
    ] = None,
    probes_file: Annotated[
        Path | None, typer.Option("--probes-file", metavar="FILE", help="Probe words, one per line or space-separated ('-' for stdin).", show_default=False)
    ] = None,
    top: Annotated[int, typer.Option("--top", "-k", min=0, max=MAX_NEIGHBORS, metavar="K", help="How many nearest keys to the direction (two words) or answers (three words); 0 for none.")] = 5,
    method: Annotated[Method, typer.Option("--method", help="With three words: 3CosAdd (gensim most_similar) or 3CosMul (most_similar_cosmul).")] = Method.cosadd,
    vectors_path: VectorsOpt = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    oov: OovOpt = Oov.error,
    output: FormatOpt = Format.table,
) -> None:
    """Directions carry meaning: d = E(A) - E(B), its dot product with probe words, and analogies.

    `attn analogy cats cat` scores singular and plural nouns and one, two, three, four against
    the "plural" direction and says whether the pattern held; `attn analogy cats cat dog` answers
    "cat is to cats as dog is to ?". --oov applies to probe words; the input words must have vectors.
    """
    from attn_cli.io.files import check_text

    words = [check_text(w, f"word {i}") for i, w in enumerate(words, 1)]
    probes = None
    if probe or probes_file:
        probes = [check_text(p, "--probe") for p in probe or []] + (read_probes(probes_file) if probes_file else [])
    from attn_cli.lesson.analogy import analogy as find_analogy

    result = find_analogy(load_vectors(vectors_path, limit, trust_pickle), words, probes, top, method.value, oov)
    write(result, output, "analogy_view")
