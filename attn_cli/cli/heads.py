"""`attn heads list|train|eval`."""

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from attn_cli.cli.app import AttnCommand, Format, FormatOpt, ForceOpt, HeadsOpt, LimitOpt, ModelOpt, SeedOpt, TrustOpt, VectorsOpt, app, check_new_file, load_vectors
from attn_cli.writers import write
from attn_cli.errors import InputError

heads_app = typer.Typer(help="List the attention heads, train your own from labelled links, score heads on a file, or find a real model's head that does X.", no_args_is_help=True)
app.add_typer(heads_app, name="heads")


class TrainMask(str, Enum):
    causal = "causal"
    none = "none"


@heads_app.command("list", cls=AttnCommand)
def list_heads(
    vectors: VectorsOpt = None,
    limit: LimitOpt = None,
    trust_pickle: TrustOpt = False,
    output: FormatOpt = Format.table,
) -> None:
    """Every head `inspect --head` accepts: built-in ones and the shipped learned ones, with d_k and metrics."""
    from attn_cli import heads
    from attn_cli.results import HeadInfo, HeadsList

    d = load_vectors(vectors, limit, trust_pickle).vector_size
    rows = []
    for name in heads.BUILT_IN:
        head = heads.resolve_head(name, d)
        rows.append(HeadInfo(name, "built-in", head.d_k, False, head.description, None, {}))
    for path in heads.shipped_heads():
        meta = heads.read_meta(path)
        try:
            head = heads.load_head(path, d, name=path.stem)
            d_k, description = head.d_k, head.description
        except InputError:  # shipped for other vectors: list it, and say why inspect cannot use it
            d_k = meta.get("d_k") if isinstance(meta.get("d_k"), int) else 0
            description = f"{meta.get('description', '')} (does not fit vectors with d = {d})"
        summary, metrics = meta.get("summary"), meta.get("metrics")
        rows.append(HeadInfo(
            path.stem, str(path), d_k, meta.get("trained", True), description,
            str(summary) if summary is not None else None, metrics if isinstance(metrics, dict) else {},
        ))
    result = HeadsList(dimension=d, default=list(heads.DEFAULT_HEADS), heads=rows)
    write(result, output, "heads_list")


class TrainProgress:
    """An Adam-step bar on stderr, drawn only on a terminal."""

    def __init__(self, steps: int):
        self.steps, self.bars, self.task = steps, None, None

    def __enter__(self):
        if sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

            from attn_cli.output import console

            columns = (TextColumn("training"), BarColumn(), TaskProgressColumn(), TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn())
            self.bars = Progress(*columns, console=console(stderr=True), transient=True)
            self.bars.__enter__()
            self.task = self.bars.add_task("train", total=self.steps, loss="-")
        return self

    def __call__(self, step: int, loss: float) -> None:
        if self.bars is not None:
            self.bars.update(self.task, completed=step, loss=f"{loss:.4f}")

    def __exit__(self, *exc):
        if self.bars is not None:
            self.bars.__exit__(*exc)


@heads_app.command("train", cls=AttnCommand)
def train(
    links: Annotated[Path, typer.Argument(help="Labelled links: sentence<TAB>query word<TAB>key word per line; '#' comments.", show_default=False)],
    out: Annotated[Path, typer.Argument(help="The .npz head file to write.", show_default=False)],
    d_k: Annotated[int, typer.Option("--d-k", min=1, max=512, help="Size of queries and keys.")] = 16,
    steps: Annotated[int, typer.Option("--steps", min=1, help="Adam steps on W_Q, W_K.")] = 300,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the initial weights and of the held-out split.")] = 0,
    holdout: Annotated[float, typer.Option("--holdout", min=0.0, max=0.9, help="Share of sentences held out to measure the head.")] = 0.2,
    mask: Annotated[TrainMask, typer.Option("--mask", help="Train under the causal mask (keys must precede their query) or none.")] = TrainMask.causal,
    vectors: VectorsOpt = None,
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
    from attn_cli import evaluation, heads, training
    from attn_cli.results import HeadTrained

    from attn_cli.files import display_path

    out = out.expanduser()
    if out.suffix != ".npz":
        raise InputError(f"{out}: the head file must end in .npz")
    check_new_file(out, force)  # before training, not after it
    all_links = training.read_links(links)
    evaluation.check_lengths(all_links, str(links))
    word_vectors = load_vectors(vectors, limit, trust_pickle)
    train_links, held_links = training.split_sentences(all_links, holdout, seed)
    config = training.TrainConfig(d_k=d_k, steps=steps, seed=seed, mask=mask.value)
    train_ex = training.links_to_examples(train_links, word_vectors, mask.value, str(links))
    held_ex = training.links_to_examples(held_links, word_vectors, mask.value, str(links)) if held_links else []
    with TrainProgress(steps) as progress:
        head = training.train_link_head(out.stem, train_ex, config, progress)
    final_loss = training.attention_loss(head.w_q, head.w_k, training.make_batches(train_ex, config.self_weight), config.l2)[0]
    metrics = evaluation.link_metrics(head, held_ex, mask.value) if held_ex else {}
    summary = (
        f"held-out: top weight on a linked key {metrics['top_on_key']:.2f}, weight on linked keys {metrics['key_weight']:.2f}"
        if held_ex else "no held-out sentences"
    )
    meta = {
        "description": f"trained by `attn heads train` from {links.name} ({len(train_ex)} sentences, mask {mask.value})",
        "summary": summary, "metrics": metrics, "mask": mask.value, "seed": seed, "steps": steps, "trained": True,
    }
    heads.save_head(head, out, meta, replace=force)
    result = HeadTrained(
        path=display_path(out), d_k=d_k, steps=steps, seed=seed, mask=mask.value, links=len(all_links),
        train_sentences=len(train_ex), heldout_sentences=len(held_ex), final_loss=final_loss, heldout=metrics,
    )
    write(result, output, "head_trained")


@heads_app.command("eval", cls=AttnCommand)
def evaluate(
    file: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="Links (sentence<TAB>query<TAB>key) or sense cases (sentence<TAB>word<TAB>sense<TAB>before|after).", show_default=False),
    ],
    head: HeadsOpt = None,
    mask: Annotated[TrainMask, typer.Option("--mask", help="causal: a token sees only itself and earlier tokens; none: every token.")] = TrainMask.causal,
    sense_set: Annotated[
        str | None,
        typer.Option("--sense-set", metavar="NAME|FILE", help="Senses and probe words for sense cases: a shipped set (lesson) or a TSV word<TAB>sense<TAB>probe words.", show_default=False),
    ] = None,
    seed: SeedOpt = 0,
    vectors: VectorsOpt = None,
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
    from attn_cli import evaluation, heads, senses

    table, table_name = senses.resolve_sense_set(sense_set) if sense_set else (None, "")
    words = load_vectors(vectors, limit, trust_pickle)
    chosen = heads.resolve_heads(head, words.vector_size, seed)
    result = evaluation.evaluate_file(file, chosen, words, mask.value, table, table_name)
    write(result, output, "heads_eval")


class FindSort(str, Enum):
    top = "top"
    exact = "exact"
    weight = "weight"
    beyond = "beyond"


@heads_app.command("find", cls=AttnCommand)
def find(
    links: Annotated[
        str,
        typer.Argument(metavar="LINKS", help="A links file (sentence<TAB>query word<TAB>key word), or a shipped set: adjective, determiner, previous.", show_default=False),
    ],
    model: ModelOpt = None,
    top: Annotated[int, typer.Option("--top", metavar="N", min=1, help="Heads to list in the terminal (JSON has all).")] = 10,
    sort: Annotated[FindSort, typer.Option("--sort", help="Rank by top on key, exact top, key weight, or top on key beyond the previous word.")] = FindSort.top,
    output: FormatOpt = Format.table,
) -> None:
    """Rank every (layer, head) of a real model by how often a query's largest non-self weight lands on its labelled key.

    Example: attn heads find adjective --model PATH, "which head attends from a noun to its adjectives?".
    """
    from attn_cli import training
    from attn_cli.files import display_path
    from attn_cli.models import inspection, transformer

    if model is None:
        raise InputError("heads find needs --model PATH|NAME (a BERT or GPT-2 checkpoint)")
    path = inspection.link_set(links)
    found = inspection.find_heads(transformer.load(model), training.read_links(path), display_path(path), sort.value)
    write(found, output, "heads_found", top)
