"""`attn heads list|train|eval`."""

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import AttnCommand, Format, FormatOpt, app, examples, say
from attn_cli.cli.options import ForceOpt, HeadsOpt, LimitOpt, ModelOpt, OovOpt, SeedOpt, TrustOpt, VectorsOpt, check_new_file, complete_link_sets, complete_sense_sets, load_vectors
from attn_cli.core.attention import Mask
from attn_cli.vectors.tokens import Oov
from attn_cli.io.writers import check_format, write
from attn_cli.errors import InputError

heads_app = typer.Typer(help="List the attention heads, train your own from labelled links, score heads on a file, or find a real model's head that does X.", no_args_is_help=True)
app.add_typer(heads_app, name="heads")


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
    steps: Annotated[int, typer.Option("--steps", min=1, help="Adam steps on W_Q, W_K.")] = 300,
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


@heads_app.command("eval", cls=AttnCommand, epilog=examples(
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
    output: FormatOpt = Format.table,
) -> None:
    """Rank every (layer, head) of a real model by how often a query's largest non-self weight lands on its labelled key.

    Example: attn heads find adjective --model PATH, "which head attends from a noun to its adjectives?".
    """
    from attn_cli.analysis.find import find_heads
    from attn_cli.heads.links import link_set, read_links
    from attn_cli.io.files import input_name
    from attn_cli.models.loading import load
    from attn_cli.results.models import HeadsFound

    if model is None:
        raise InputError("heads find needs --model PATH|NAME (a checkpoint: a Hugging Face folder, a .gguf file or ollama:NAME)")
    check_format(output, HeadsFound)
    from attn_cli.io.console import counted

    path = link_set(links)
    chosen, read = load(model), read_links(path)
    sentences = len({link.sentence for link in read})
    found = find_heads(chosen, read, input_name(path), sort.value, each=lambda pairs: counted(pairs, "sentences", sentences))
    write(found, output, "heads_found", top)
