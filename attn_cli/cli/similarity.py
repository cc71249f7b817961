"""`attn similarity`: dot products and cosines of word pairs, read against random pairs."""

from typing import Annotated

import typer

from attn_cli.cli.app import Format, FormatOpt, RowsCommand, app, examples
from attn_cli.cli.options import LimitOpt, TrustOpt, VectorsOpt, load_vectors
from attn_cli.errors import InputError
from attn_cli.io.writers import write

MAX_SIMILARITY_WORDS = 200  # 19,900 pairs: every pair is a line of the table and an object of the JSON


@app.command(cls=RowsCommand, epilog=examples("attn similarity cat dog", "attn similarity good bad king apple", "attn similarity cat dog --json"))
def similarity(
    words: Annotated[list[str], typer.Argument(metavar="WORD", help="Two or more words; - reads them from stdin (separated by spaces or new lines).", show_default=False)],
    vectors_path: VectorsOpt = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    output: FormatOpt = Format.table,
) -> None:
    """Dot product = alignment: dot and cosine of every pair of words, against random pairs.

    Each cosine is placed among the cosines of 20,000 random pairs of the 10,000 most frequent
    keys (seed 0): above 95% of them reads as aligned, below 5% as opposed, in between as
    unrelated (as aligned as two words picked at random). The dot product is written out: the
    largest component products a_i b_i and what the other components add.
    """
    from attn_cli.io.files import check_text, stdin_text
    from attn_cli.lesson.similarity import compare

    if words == ["-"]:
        words = stdin_text().split()
    if len(words) < 2:
        raise InputError("similarity needs at least two words")
    if len(words) > MAX_SIMILARITY_WORDS:
        pairs = len(words) * (len(words) - 1) // 2
        raise InputError(f"{len(words):,} words make {pairs:,} pairs; similarity compares at most {MAX_SIMILARITY_WORDS} words at a time")
    words = [check_text(w, f"word {i}") for i, w in enumerate(words, 1)]
    result = compare(load_vectors(vectors_path, limit, trust_pickle), words)
    write(result, output, "similarity_view")
