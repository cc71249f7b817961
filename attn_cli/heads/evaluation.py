"""`attn heads eval`: heads scored on a file of labelled sentences, beside reference baselines.

Two kinds of file:

- links (3 fields a line, `sentence<TAB>query<TAB>key`, as `attn heads train` reads them):
  where does each linked query put its attention? `link_metrics` scores one attention pattern
  (a head, or a function giving weights) on linked queries: `top_on_key`, `exact_top`,
  `key_weight`; the baselines are the previous token, even attention and the identity head.
- sense cases (4 fields, `sentence<TAB>word<TAB>sense<TAB>before|after`, or 3 without the context
  column, with a sense set giving each word's senses and probe words): does E' of the word land
  nearer its intended sense?
  `sense_metrics` runs the heads together exactly as `inspect` does and measures the word's E
  and E' with the sense meter (attn_cli.senses), beside the identity head and even attention
  over the other (content) tokens with an update of the same size.

Both functions are what data/heads/build_heads.py can call to compute shipped metrics.
"""

from collections.abc import Callable
from pathlib import Path

import numpy as np

from attn_cli.heads import links
from attn_cli.heads.links import check_mask, check_lengths, even_visible, link_metrics, previous_token
from attn_cli.heads.senses import (  # noqa: F401 (heads eval's sense cases: their measures live there)
    SENSE_BASELINES, SENSE_HEADER, SenseCase, case_rows, check_cases, context_from_position, parse_sense_cases, sense_index, sense_metrics, sense_rows,
    token_shares,
)
from attn_cli.core.attention import Head, Mask
from attn_cli.io.files import input_name, read_input
from attn_cli.errors import DataError, InputError
from attn_cli.vectors.tokens import Oov, tokenize


WeightFn = Callable[[np.ndarray, np.ndarray | None], np.ndarray]  # (E [n, d], allowed [n, n] bool or None) -> weights [n, n]


# --- reading ------------------------------------------------------------------------------------


def file_format(lines: list[str], source: str, senses_expected: bool = False) -> tuple[str, int, bool]:
    """("links" | "senses", fields a line, guessed), from the header or else the number of fields of the
    first line that is not a comment. Three fields without a header are links, unless `senses_expected`
    (a sense set was given): then they are sense cases without the context column. `guessed`: read
    from the number of fields alone (3, no header), so an error can say how the lines were read."""
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip().lower() for f in line.rstrip("\r\n").split("\t")]
        if fields == links.LINK_HEADER:
            return "links", 3, False
        if fields in (SENSE_HEADER, SENSE_HEADER[:3]) or len(fields) == 4:
            return "senses", len(fields), False
        if len(fields) == 3:
            return ("senses" if senses_expected else "links"), 3, True
        raise InputError(
            f"{source} line {number}: expected 3 tab-separated fields (links: sentence, query, key; or sense cases "
            f"without a context column) or 4 (sense cases: sentence, word, sense, before|after), found {len(fields)}"
        )
    raise InputError(f"{source}: nothing to evaluate (only comments or blank lines)")


def read_eval_file(path: str | Path, senses_expected: bool = False) -> tuple[str, list, bool]:
    """("links", [links.Link], guessed) or ("senses", [SenseCase], guessed) from a TSV file or '-', stdin (see file_format)."""
    lines, source = read_input(path, "a TSV file").splitlines(), input_name(path)
    kind, fields, guessed = file_format(lines, source, senses_expected)
    if kind == "links":
        return kind, links.parse_links(lines, source), guessed
    return kind, parse_sense_cases(lines, source, fields), guessed


# --- links ----------------------------------------------------------------------------------------


LINK_BASELINES = {
    "previous": "all weight on the token before (token 0: itself)",
    "even": "weight spread evenly over the visible tokens",
    "identity": "the identity head: plain similarity",
}


def link_rows(heads: list[Head], examples: list[links.Example], mask: Mask | str, d: int) -> list[dict]:
    """One row per head, then the baselines: {"name", "kind", "about", "queries", "dropped", "top_on_key", ...}."""
    from attn_cli.heads.registry import identity_head

    patterns: list[tuple[str, str, Head | WeightFn]] = [(h.name, "head", h) for h in heads]
    patterns += [("previous", "baseline", previous_token), ("even", "baseline", even_visible), ("identity", "baseline", identity_head(d))]
    rows = []
    for name, kind, attention in patterns:
        about = LINK_BASELINES[name] if kind == "baseline" else "the head alone"
        rows.append({"name": name, "kind": kind, "about": about, **link_metrics(attention, examples, mask)})
    return rows


# --- the command's whole job ----------------------------------------------------------------------


def evaluate_file(path: str | Path, heads: list[Head], vectors, mask: Mask | str = Mask.causal, sense_set: dict | None = None,
                  set_name: str = "", cases: bool = False, oov: Oov = Oov.error):
    """Read `path`, score the heads on it, and return attn_cli.results.HeadsEval (with every sense
    case's row when `cases`). Words without a vector: an error, or skipped or zeroed (`oov`) and
    listed in the counts."""
    from attn_cli.results import HeadsEval

    mask = check_mask(mask)
    kind, items, guessed = read_eval_file(path, senses_expected=sense_set is not None)
    path = input_name(path)
    check_lengths(items, path)
    unknown = [] if oov == Oov.error else unknown_words(items, vectors, kind == "senses" and mask == Mask.causal)
    if kind == "links":
        if cases:
            raise InputError(f"{path} holds links (3 fields a line); --cases lists sense cases only")
        if sense_set is not None:
            raise InputError(f"{path} holds links (3 fields a line); --sense-set applies only to sense cases")
        try:
            examples = links.links_to_examples(items, vectors, Mask.none, str(path), oov=oov)  # every link kept; the mask drops later
        except InputError as e:  # a sense-cases file without its sense set fails here: say how its lines were read
            hint = " (3 fields a line without a header, read as links: sentence, query, key; for sense cases pass --sense-set)"
            raise InputError(f"{e}{hint if guessed else ''}") from None
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # checked below: one message, not NumPy's warnings
            rows = link_rows(heads, examples, mask, vectors.vector_size)
        check_finite(rows, path)
        counts = {"sentences": len(examples), "queries": rows[0]["queries"], "dropped": rows[0]["dropped"], "unknown": unknown}
        for row in rows:
            del row["queries"], row["dropped"]
        return HeadsEval(file=str(path), format=kind, mask=mask, counts=counts, patterns=rows)
    if sense_set is None:
        raise InputError(f"{path} holds sense cases; pass --sense-set NAME|FILE giving each word's senses and probe words")
    set_name_shown = f"sense set {set_name}" if set_name else "the sense set"
    try:
        check_cases(items, sense_set, set_name_shown)
    except InputError as e:  # a links file given a sense set by mistake fails here: say how its lines were read
        hint = " (3 fields a line without a header, read as sentence, word, sense because --sense-set was given)" if guessed else ""
        raise InputError(f"{path}: {e}{hint}") from None
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            metrics = sense_metrics(heads, items, sense_set, vectors, mask, set_name_shown, oov)
    except InputError as e:
        message = str(e)
        raise InputError(f"{path} {message}" if message.startswith("line ") else f"{path}: {message}") from None
    unplaced = sum(c.context_before is None for c in items) if mask == Mask.causal else 0  # skipped for want of a context column
    counts = {"cases": metrics["cases"], "skipped": metrics["skipped"], "unplaced": unplaced, "unknown": unknown}
    rows = sense_rows(metrics)
    if metrics["cases"]:
        check_finite(rows, path)
    return HeadsEval(file=str(path), format=kind, mask=mask, counts=counts, patterns=rows, sense_set=set_name or None,
                     cases=metrics["case_rows"] if cases else None)


def unknown_words(items, vectors, context_before_only: bool) -> list[str]:
    """The distinct words of the sentences scored (`items` have .sentence) that have no vector, in order of appearance."""
    used = [item for item in items if not context_before_only or item.context_before]
    return list(dict.fromkeys(t for item in used for t in tokenize(item.sentence) if not vectors.has_vector(t)))


def check_finite(rows: list[dict], path) -> None:
    """A head whose scores or updates overflow float64 gives NaN or infinite measures: say so, rather than show them as missing."""
    for row in rows:
        if row["kind"] != "baseline" and any(isinstance(v, float) and not np.isfinite(v) for v in row.values()):
            raise DataError(f"{path}: the scores or updates of {row['name']} overflow float64: its weights (or the vectors) are too large")
