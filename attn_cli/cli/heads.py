"""`attn heads list|train|eval|find|detect|stats` (and `heads compose`, from cli/compose.py)."""

import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import AttnCommand, Format, FormatOpt, RowsCommand, examples, say
from attn_cli.cli.heads_group import heads_app
from attn_cli.cli.options import ForceOpt, HeadsOpt, LimitOpt, ModelOpt, OovOpt, SeedOpt, ThreadsOpt, TrustOpt, VectorsOpt, check_new_file, complete_link_sets, complete_sense_sets, load_vectors
from attn_cli.core.attention import Mask
from attn_cli.vectors.tokens import Oov
from attn_cli.io.writers import check_format, write
from attn_cli.errors import InputError

MAX_STEPS = 100_000  # --steps: 300x the default (each step is a pass over every link); more is a typo, not a plan


@heads_app.command("list", cls=AttnCommand, epilog=examples("attn heads list", "attn heads list --json"))
def list_heads(
    vectors_path: VectorsOpt = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    output: FormatOpt = Format.table,
) -> None:
    """Every head `inspect --head` accepts: built-in ones and the shipped learned ones, with d_k and metrics."""
    from attn_cli.heads import registry as heads

    result = heads.list_heads(load_vectors(vectors_path, limit, trust_pickle).vector_size)
    write(result, output, "heads_list")


@contextmanager
def train_progress(steps: int) -> Iterator[Callable[[int, float], None] | None]:
    """An Adam-step bar with the loss on stderr, drawn only on a terminal."""
    from attn_cli.io.console import progress_bars

    with progress_bars(fields="loss {task.fields[loss]}") as bars:
        if bars is None:
            yield None
            return
        task = bars.add_task("training", total=steps, loss="-")
        yield lambda step, loss: bars.update(task, completed=step, loss=f"{loss:.4f}")


@heads_app.command("train", cls=AttnCommand, epilog=examples(
    "attn heads train data/heads/adjective_train.tsv mine.npz --steps 200",
    'attn inspect "the big red dog barked" --head mine.npz',
))
def train(
    links: Annotated[Path, typer.Argument(metavar="LINKS", help="Labelled links: sentence<TAB>query word<TAB>key word per line; '#' comments; - reads stdin.", show_default=False)],
    out: Annotated[Path, typer.Argument(metavar="FILE", help="The .npz head file to write.", show_default=False)],
    d_k: Annotated[int, typer.Option("--d-k", min=1, max=512, help="Size of queries and keys.")] = 16,
    steps: Annotated[int, typer.Option("--steps", min=1, max=MAX_STEPS, help=f"Adam steps on W_Q, W_K (at most {MAX_STEPS:,}).")] = 300,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the initial weights and of the held-out split.")] = 0,
    holdout: Annotated[float, typer.Option("--holdout", min=0.0, max=0.9, help="Share of sentences held out to measure the head.")] = 0.2,
    mask: Annotated[Mask, typer.Option("--mask", help="Train under the causal mask (keys must precede their query) or none.")] = Mask.causal,
    distance: Annotated[bool, typer.Option("--distance", help="Also learn distance costs: per token before and after the query (ALiBi), and on itself.")] = False,
    query_bias: Annotated[bool, typer.Option("--query-bias", help="Also learn a query bias b_Q (Q = E W_Q + b_Q): lets a key matter to every query.")] = False,
    oov: OovOpt = Oov.error,
    vectors_path: VectorsOpt = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    force: ForceOpt = False,
    output: FormatOpt = Format.table,
) -> None:
    """Train a head whose queries attend to the keys your links name; print its held-out metric.

    Each linked query word should attend to its key words (several lines may give one query
    several keys); every other token is trained to attend to itself. The value map is then
    fitted so a linked query moves toward its keys' vectors.
    """
    from attn_cli.heads import training
    from attn_cli.results import HeadTrained

    check_format(output, HeadTrained)  # before training, not after it
    if math.isnan(holdout):  # NaN passes Click's range check: every comparison with it is false
        raise InputError("--holdout must be a share from 0 to 0.9, not nan")
    from attn_cli.io.files import user_path

    out = user_path(out, "FILE")
    if out.suffix != ".npz":
        raise InputError(f"{out}: the head file must end in .npz")
    check_new_file(out, force)  # before training, not after it
    with train_progress(steps) as progress:
        result = training.train_from_links(links, out, load_vectors(vectors_path, limit, trust_pickle), d_k=d_k, steps=steps, seed=seed,
                                           holdout=holdout, mask=mask, replace=force, progress=progress,
                                           distance=distance, query_bias=query_bias, oov=oov)
    write(result, output, "head_trained")


@heads_app.command("eval", cls=RowsCommand, epilog=examples(
    "attn heads eval data/heads/eval/adjectives_natural.tsv --head adjective",
    "attn heads eval data/heads/eval/adjectives_long.tsv --json",
))
def evaluate(
    file: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="Links (sentence<TAB>query<TAB>key) or sense cases (sentence<TAB>word<TAB>sense[<TAB>before|after]); - reads stdin.", show_default=False),
    ],
    head: HeadsOpt = None,
    mask: Annotated[Mask, typer.Option("--mask", help="causal: a token sees only itself and earlier tokens; none: every token.")] = Mask.causal,
    sense_set: Annotated[
        str | None,
        typer.Option("--sense-set", metavar="NAME|FILE", autocompletion=complete_sense_sets, help="Senses and probe words for sense cases: a shipped set (lesson) or a TSV word<TAB>sense<TAB>probe words.", show_default=False),
    ] = None,
    cases: Annotated[
        bool,
        typer.Option("--cases", help="Sense cases: also list each case, its nearest sense before and after the heads and whether it is resolved (CSV/TSV: a row per case)."),
    ] = False,
    seed: SeedOpt = 0,
    oov: OovOpt = Oov.error,
    vectors_path: VectorsOpt = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    output: FormatOpt = Format.table,
) -> None:
    """Score heads on a file, beside reference baselines.

    Links: where each linked query's attention goes, per head, beside the previous token, even
    attention and the identity head. Sense cases (need --sense-set): how often the heads, run
    together as inspect runs them, bring the word's E' nearest its intended sense, beside the
    identity head and even attention with an update of the same size.
    """
    from attn_cli.heads import evaluation
    from attn_cli.heads import registry as heads
    from attn_cli.analysis import senses
    from attn_cli.results import HeadsEval

    check_format(output, HeadsEval)  # before the work, not after it
    table, table_name = senses.resolve_sense_set(sense_set) if sense_set else (None, "")
    vectors = load_vectors(vectors_path, limit, trust_pickle)
    chosen, note = heads.resolve_heads(head, vectors.vector_size, seed)
    if note:
        say(note)
    result = evaluation.evaluate_file(file, chosen, vectors, mask, table, table_name, cases, oov)
    write(result, output, "heads_eval")


class FindSort(str, Enum):
    top = "top"
    exact = "exact"
    weight = "weight"
    beyond = "beyond"


@heads_app.command("find", cls=AttnCommand, epilog=examples(
    "attn heads find adjective --model bert-base-uncased",
    "attn heads find my-links.tsv --model ./gpt2 --sort beyond --top 5",
))
def find(
    links: Annotated[
        str,
        typer.Argument(metavar="LINKS", autocompletion=complete_link_sets, help="A links file (sentence<TAB>query word<TAB>key word; - reads stdin), or a shipped set: adjective, determiner, previous.", show_default=False),
    ],
    model: ModelOpt = None,
    top: Annotated[int, typer.Option("--top", metavar="N", min=1, help="Heads to list in the terminal (JSON has all).")] = 10,
    sort: Annotated[FindSort, typer.Option("--sort", help="Rank by top on key, exact top, key weight, or top on key beyond the previous word.")] = FindSort.top,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Rank every (layer, head) of a real model by how often a query's largest non-self weight lands on its labelled key.

    Example: attn heads find adjective --model PATH, "which head attends from a noun to its adjectives?".
    """
    from attn_cli.analysis.find import find_heads
    from attn_cli.heads.links import link_set, read_links
    from attn_cli.io.files import input_name
    from attn_cli.io.memory import check_line_length
    from attn_cli.models.loading import load
    from attn_cli.results.models import HeadsFound

    if model is None:
        raise InputError("heads find needs --model PATH|NAME (a checkpoint: a Hugging Face folder, a .gguf file or ollama:NAME)")
    check_format(output, HeadsFound)
    from attn_cli.io.console import counted

    path = link_set(links)
    checkpoint, source = load(model), input_name(path)
    labelled = read_links(path)
    for link in labelled:  # before the tokenizer sees a sentence: a huge one would cost it gigabytes
        try:
            check_line_length(link.sentence, checkpoint.spec.max_positions, checkpoint.name)
        except InputError as e:
            raise InputError(f"{source} line {link.line}: {e}") from None
    sentences = len({link.sentence for link in labelled})
    found = find_heads(checkpoint, labelled, source, sort.value, each=lambda pairs: counted(pairs, "sentences", sentences))
    write(found, output, "heads_found", top)


class Pattern(str, Enum):
    previous = "previous"
    duplicate = "duplicate"
    induction = "induction"
    first = "first"
    special = "special"
    self = "self"
    all = "all"


class ErrorMeasure(str, Enum):
    mul = "mul"
    abs = "abs"


ErrorOpt = Annotated[ErrorMeasure, typer.Option("--error", help="mul: the share of a head's weight on the pattern; abs: 1 - Σ|A - P| / n (TransformerLens's two forms).")]
ExcludeBosOpt = Annotated[bool, typer.Option("--exclude-bos", help="Leave the weight on the first token out of every score.")]
ExcludeCurrentOpt = Annotated[bool, typer.Option("--exclude-current", help="Leave each query's weight on itself out of every score.")]


@contextmanager
def line_progress(what: str, total: int | None) -> Iterator[Callable[[int], None] | None]:
    """A bar of lines done on stderr, drawn only on a terminal (total None: a count without an end)."""
    from attn_cli.io.console import progress_bars

    with progress_bars() as bars:
        if bars is None:
            yield None
            return
        task = bars.add_task(what, total=total)
        yield lambda done: bars.update(task, completed=done)


def numbered_text(path: str, kind: str) -> list[tuple[int, str]]:
    """(line number, text) of each non-blank line of a text file or stdin (-)."""
    from attn_cli.io.files import read_input, user_path

    text = read_input(path if path == "-" else user_path(path, kind), kind)
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


@heads_app.command("detect", cls=RowsCommand, epilog=examples(
    "attn heads detect --model ./all-MiniLM-L6-v2",
    'attn heads detect --model ./gpt2 "The cat sat on the mat." --top 3',
    "attn heads detect --model SmolLM2.gguf --pattern induction --seed 1",
))
def detect(
    sentence: Annotated[str | None, typer.Argument(metavar="TEXT", help="A sentence for previous, first, special and self, or - to read one a line from stdin (as --text does). Default: the 42 sentences of the shipped previous-word set.", show_default=False)] = None,
    model: ModelOpt = None,
    pattern: Annotated[Pattern, typer.Option("--pattern", help="The kind of head to score every head for, or all of them.")] = Pattern.all,
    error: ErrorOpt = ErrorMeasure.mul,
    exclude_bos: ExcludeBosOpt = False,
    exclude_current: ExcludeCurrentOpt = False,
    text: Annotated[str | None, typer.Option("--text", metavar="FILE", help="Sentences (one a line; - reads stdin) for previous, first, special and self. Default: the 42 sentences of the shipped previous-word set.", show_default=False)] = None,
    length: Annotated[int, typer.Option("--length", metavar="N", min=2, help="Tokens of the random sequence that duplicate and induction are scored on (it is given twice).")] = 50,
    seed: Annotated[int, typer.Option("--seed", metavar="N", min=0, help="Seed of the random sequence and of the random baseline.")] = 0,
    top: Annotated[int, typer.Option("--top", metavar="N", min=1, help="Heads listed per pattern in the terminal (JSON and CSV have all).")] = 5,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Score every (layer, head) of a real model for the kinds of head TransformerLens's head detector finds, and more.

    previous: weight on the token before; duplicate: on an earlier copy of the query's token;
    induction: on the token after that copy (both on a random sequence given twice); first: on
    the first token; special: on [CLS], [SEP], BOS...; self: on the query itself. Each pattern's
    heads are ranked beside two baselines scored the same way: even attention, and a head that
    looks at one random visible key.
    """
    from attn_cli.analysis.detect import PATTERNS, REPEATED, detect_heads
    from attn_cli.models.loading import load
    from attn_cli.results.detect import HeadsDetected

    if model is None:
        raise InputError("heads detect needs --model PATH|NAME (a checkpoint: a Hugging Face folder, a .gguf file or ollama:NAME)")
    check_format(output, HeadsDetected)
    names = list(PATTERNS) if pattern is Pattern.all else [pattern.value]
    if sentence is not None and text is not None:
        raise InputError("heads detect takes its sentences as TEXT or from --text FILE, not both")
    if sentence is not None and sentence != "-":
        sentences, source = [(0, sentence)], "TEXT"  # line 0: not a line of a file
    elif sentence is None and text is None:
        from attn_cli.heads.links import link_set, read_links

        shipped = link_set("previous")
        sentences, source = list(enumerate(dict.fromkeys(link.sentence for link in read_links(shipped)), 1)), "data/links/previous.tsv"
    else:
        from attn_cli.io.files import input_name

        path = text if text is not None else "-"
        sentences, source = numbered_text(path, "--text" if text is not None else "TEXT"), input_name(path)
    checkpoint = load(model)
    on_text = any(name not in REPEATED for name in names)
    with line_progress("sentences", len(sentences) if on_text else None) as progress:
        found = detect_heads(checkpoint, sentences, source, names, error=error.value, exclude_bos=exclude_bos, exclude_current=exclude_current,
                             length=length, seed=seed, progress=progress)
    write(found, output, "heads_detected", top)


class Figure(str, Enum):
    entropy = "entropy"
    distance = "distance"
    first = "first"
    special = "special"
    self = "self"
    previous = "previous"
    detect_previous = "detect_previous"
    detect_duplicate = "detect_duplicate"
    detect_induction = "detect_induction"
    detect_first = "detect_first"
    detect_special = "detect_special"
    detect_self = "detect_self"


@heads_app.command("stats", cls=RowsCommand, epilog=examples(
    "attn heads stats corpus.txt --model ./all-MiniLM-L6-v2",
    "attn heads stats corpus.txt --model SmolLM2.gguf --grid first",
    "attn heads stats - --model ./gpt2 --csv < corpus.txt > heads.csv",
))
def stats(
    corpus: Annotated[str, typer.Argument(metavar="CORPUS", help="A text file, one sentence a line; - reads stdin.", show_default=False)],
    model: ModelOpt = None,
    error: ErrorOpt = ErrorMeasure.mul,
    exclude_bos: ExcludeBosOpt = False,
    exclude_current: ExcludeCurrentOpt = False,
    grid: Annotated[Figure | None, typer.Option("--grid", metavar="FIGURE", help="Show one figure of every head as a layers x heads grid instead of the tables: entropy, distance, first, special, self, previous, or detect_PATTERN (previous, duplicate, induction, first, special, self).", show_default=False)] = None,
    sort: Annotated[Figure | None, typer.Option("--sort", metavar="FIGURE", help="Order the heads by one figure, largest first (the tables, JSON, CSV and Parquet); the same names as --grid. Default: layer, then head.", show_default=False)] = None,
    top: Annotated[int | None, typer.Option("--top", metavar="N", min=1, help="Heads listed in the terminal's tables, the first N (with --sort: the N largest); JSON and CSV have all.", show_default=False)] = None,
    parquet: Annotated[Path | None, typer.Option("--parquet", metavar="FILE", help="Also write the rows (as --csv has them, unrounded) to FILE as Parquet (needs pyarrow: the fast extra).", show_default=False)] = None,
    force: ForceOpt = False,
    threads: ThreadsOpt = None,
    output: FormatOpt = Format.table,
) -> None:
    """Per head, figures over a corpus: entropy, distance, where the weight goes, and the head detector's scores.

    Each head's mean entropy (nats) and distance to its keys over every query, its mean weight on
    the first token, the special tokens, itself and the token before; and its detector scores
    (heads detect) averaged over the sentences that have each pattern; beside even attention.
    The corpus streams through in bounded memory. Exit 2 when any line failed (each said on
    stderr; the figures are those of the others).
    """
    from attn_cli.results.stats import HeadStats

    if model is None:
        raise InputError("heads stats needs --model PATH|NAME (a checkpoint: a Hugging Face folder, a .gguf file or ollama:NAME)")
    check_format(output, HeadStats)
    if grid is not None and output is not Format.table:
        raise InputError(f"--grid draws the terminal view; it does not combine with --{output.value}")
    if grid is not None and (sort is not None or top is not None):
        raise InputError(f"--grid draws every head in its place; --{'sort' if sort is not None else 'top'} orders and cuts the tables, not the grid")
    if parquet is not None:
        parquet = check_parquet(parquet, force)
    from attn_cli import api
    from attn_cli.io import files

    path = None if corpus == "-" else files.user_path(corpus, "CORPUS")
    lines = files.stdin_line_bytes() if path is None else files.file_line_bytes(path, "a text file")
    total = None if path is None or not sys.stderr.isatty() else files.count_lines(path)  # a bar with an end, for a file on a terminal
    checkpoint = api.load_model(model)
    with line_progress("lines", total) as progress:
        partial = api.head_stats(checkpoint, lines, error=error.value, exclude_bos=exclude_bos, exclude_current=exclude_current,
                                 on_error=lambda n, e: say(f"line {n}: {e}"), progress=progress)
    if partial.blank:
        say(f"skipped {partial.blank} blank line{'s' if partial.blank != 1 else ''}")
    result = api.figures(partial)
    if sort is not None:
        result = result.sorted(sort.value)
    if parquet is not None:
        write_parquet(result, parquet, force)
    write(result, output, "head_stats", None if grid is None else grid.value, top)
    if partial.failed:
        say(f"{partial.failed} of {partial.sentences + partial.failed} lines failed")
        raise typer.Exit(2)


def check_parquet(path: Path, force: bool) -> Path:
    """--parquet FILE, refused before any work: without pyarrow, or where it would overwrite what the user has."""
    from attn_cli.io.files import user_path

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise InputError("--parquet needs pyarrow, which is not installed: pip install 'attn-cli[fast]' (or pip install pyarrow)") from None
    return check_new_file(user_path(path, "--parquet"), force)


def write_parquet(result, path: Path, force: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from attn_cli.io.atomic import write_atomic

    table = pa.Table.from_pylist(list(result.rows_for_files()))
    write_atomic(path, lambda f: pq.write_table(table, f), force=force)


from attn_cli.cli import compose as _compose  # noqa: E402, F401 (registers `heads compose`)
