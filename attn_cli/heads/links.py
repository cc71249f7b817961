"""Labelled links, "in this sentence, this query word should attend to this key word": reading them, and scoring a head on them.

A links file holds `sentence<TAB>query word<TAB>key word` lines; `attn heads train` learns from
them, `heads eval` scores heads on them, `heads find` ranks a checkpoint's heads on them.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attn_cli.analysis.links import even_weights, link_scores, previous_weights
from attn_cli.core.attention import Head, Mask, allowed_keys, run_head
from attn_cli.errors import InputError, UnknownWordsError
from attn_cli.io.files import input_name, read_input, tsv_rows
from attn_cli.vectors.tokens import Oov, embed, tokenize

WeightFn = Callable[[np.ndarray, np.ndarray | None], np.ndarray]  # (E [n, d], allowed [n, n] bool or None) -> weights [n, n]


@dataclass
class Link:
    sentence: str
    query: str
    key: str
    line: int  # 1-based line in the file, for error messages


@dataclass
class Example:
    """One sentence ready for training: its embeddings and which query rows link to which keys."""

    tokens: list[str]
    e: np.ndarray  # [n, d] input embeddings (word vector + position)
    words: np.ndarray  # [n, d] word vectors alone (value targets)
    links: dict[int, list[int]]  # query index -> key indices
    mask: Mask


LINK_HEADER = ["sentence", "query", "key"]


def read_links(path: str | Path) -> list[Link]:
    """Read a links file ('-': stdin): three tab-separated fields a line; '#' comments, blank lines and a
    header line "sentence<TAB>query<TAB>key" are skipped. Bad lines raise InputError naming them."""
    return parse_links(read_input(path, "a links file").splitlines(), input_name(path))


def parse_links(lines: Iterable[str], source: str = "<links>") -> list[Link]:
    links = [
        Link(sentence, query.lower(), key.lower(), number)
        for number, (sentence, query, key) in tsv_rows(lines, LINK_HEADER, "sentence, query word, key word", source)
    ]
    if not links:
        raise InputError(f"{source}: no links (lines 'sentence<TAB>query word<TAB>key word')")
    return links


def _nearest(tokens: list[str], word: str, to: int) -> int | None:
    """Index of `word` nearest to position `to`, an earlier one winning a tie."""
    places = [i for i, t in enumerate(tokens) if t == word]
    return min(places, key=lambda i: (abs(i - to), i > to)) if places else None


def links_to_examples(
    links: list[Link], vectors, mask: Mask | str, source: str = "<links>", strict: bool = True, self_links: bool = False,
    oov: Oov = Oov.error,
) -> list[Example]:
    """Group links by sentence and resolve words to token positions.

    The query is the first occurrence of the query word; the key, the occurrence nearest to it.
    Under the causal mask a key after its query cannot be seen: an error when `strict`,
    otherwise dropped (the row then falls back to attending to itself). A link from a word to
    itself is dropped, unless `self_links` (then a linked query shares its target with itself).
    Other words without a vector are an error, dropped or zeroed (`oov`, as inspect's --oov);
    a linked word must have one.
    """
    mask = Mask(mask)
    by_sentence: dict[str, list[Link]] = {}
    for link in links:
        by_sentence.setdefault(link.sentence, []).append(link)
    examples = []
    for sentence, group in by_sentence.items():
        for link in group:
            for role, word in (("query", link.query), ("key", link.key)):
                if not vectors.has_vector(word):
                    raise InputError(f"{source} line {link.line}: the {role} word {word!r} has no vector; a linked word needs one")
        try:
            embedded = embed(tokenize(sentence), vectors, oov)
        except UnknownWordsError as e:
            raise InputError(f"{source} line {group[0].line}: {e}") from None
        tokens = embedded.tokens
        pairs: dict[int, list[int]] = {}
        for link in group:
            q = tokens.index(link.query) if link.query in tokens else None
            if q is None:
                raise InputError(f"{source} line {link.line}: query word {link.query!r} is not a token of the sentence")
            k = _nearest(tokens, link.key, q)
            if k is None:
                raise InputError(f"{source} line {link.line}: key word {link.key!r} is not a token of the sentence")
            if mask == Mask.causal and k > q:
                if strict:
                    raise InputError(
                        f"{source} line {link.line}: key {link.key!r} comes after query {link.query!r}, "
                        "which the causal mask hides; use --mask none"
                    )
                continue
            if (k != q or self_links) and k not in pairs.setdefault(q, []):
                pairs[q].append(k)
        examples.append(Example(tokens, embedded.embeddings(), embedded.vectors, {q: ks for q, ks in pairs.items() if ks}, mask))
    return examples


# --- scoring a head on them -----------------------------------------------------------------------


def previous_token(e: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:  # [n, d] -> [n, n]
    """All weight on token i-1 (token 0 on itself)."""
    return previous_weights(len(e))


def even_visible(e: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:  # [n, d] -> [n, n]
    """Weight spread evenly over every key the query may see (itself included)."""
    return even_weights(len(e), allowed)


def check_mask(mask: Mask | str) -> str:
    """The mask's name ("causal" | "none"), as results carry it."""
    try:
        return Mask(mask).value
    except ValueError:
        raise InputError(f"mask must be 'causal' or 'none', not {mask!r}") from None


def link_metrics(attention: Head | WeightFn, examples: list[Example], mask: Mask | str = Mask.causal) -> dict:
    """How one attention pattern serves the linked queries of `examples`.

    `attention` is a head (its weights under `mask`), or a function (E [n, d], allowed
    [n, n] bool or None) -> weights [n, n]. Under mask "causal" a link whose key comes after
    its query cannot be served: it is dropped and counted (`dropped`); a query left without
    keys is not counted. A link from a word to itself is ignored. Over the `queries` counted:
    `top_on_key`, `exact_top`, `key_weight` (attn_cli.analysis.links.link_scores, the query
    itself left out of the ranking), and `others_on_self`: over every token that is not a linked
    query, its mean weight on itself (a pattern that puts weight on keys everywhere, such as the
    previous token, scores low).

    Build examples with links_to_examples(links, vectors, "none") to keep every link for counting.
    """
    mask = check_mask(mask)
    top, exact, weight, on_self, dropped = [], [], [], [], 0
    for ex in examples:
        n = len(ex.tokens)
        allowed = allowed_keys(mask, n)
        w = run_head(ex.e, attention, allowed).weights if isinstance(attention, Head) else attention(ex.e, allowed)  # [n, n]
        on_self += [w[i, i] for i in range(n) if i not in ex.links]
        for q, keys in ex.links.items():
            keys = [k for k in keys if k != q]
            kept = [k for k in keys if mask != Mask.causal or k < q]
            dropped += len(keys) - len(kept)
            if not kept:
                continue
            t, x, kw = link_scores(w, q, kept)
            top.append(t)
            exact.append(x)
            weight.append(kw)
    nan = float("nan")
    return {
        "queries": len(top),
        "dropped": dropped,
        "top_on_key": float(np.mean(top)) if top else nan,
        "exact_top": float(np.mean(exact)) if exact else nan,
        "key_weight": float(np.mean(weight)) if weight else nan,
        "others_on_self": float(np.mean(on_self)) if on_self else nan,
    }


def check_lengths(items, source: str) -> None:
    """Refuse a sentence longer than inspect's default --max-tokens before its n x n matrices are made
    (`items` have .sentence and .line): a file line is a sentence, not a document."""
    from attn_cli.models.glove import MAX_TOKENS

    for item in items:
        n = len(tokenize(item.sentence))
        if n > MAX_TOKENS:
            raise InputError(f"{source} line {item.line}: {n:,} tokens, more than {MAX_TOKENS}; a line holds one sentence")




def shipped_link_sets() -> dict:
    """name -> file of the link sets shipped: data/links/NAME.tsv, and adjective (the held-out noun -> adjective set)."""
    from attn_cli.vectors.store import DATA_DIR

    links = DATA_DIR / "links"
    shipped = {p.stem: p for p in sorted(links.glob("*.tsv"))} if links.is_dir() else {}
    return {"adjective": DATA_DIR / "heads" / "eval" / "adjectives_natural.tsv", **shipped}


def link_set(name: str):
    """A shipped link set by name (data/links/NAME.tsv; adjective: the held-out noun -> adjective set), else a path."""
    from pathlib import Path

    from attn_cli.vectors.store import DATA_DIR

    shipped = {"adjective": DATA_DIR / "heads" / "eval" / "adjectives_natural.tsv"}
    if name in shipped:
        return shipped[name]
    if (DATA_DIR / "links" / f"{name}.tsv").is_file() and "/" not in name:
        return DATA_DIR / "links" / f"{name}.tsv"
    return Path(name)
