"""What a view shows as one token: a word piece, or a whole word; special tokens kept or left out; a token named by --focus.

A unit is a list of piece indices. Without --words every piece is its own unit; with --words a
word's pieces merge (its row: the mean over its pieces' rows; its column: the sum), so rows
still sum to 1.
"""

import numpy as np

from attn_cli.errors import InputError
from attn_cli.models.base import Tokens


def groups(tokens: Tokens, words: bool) -> tuple[list[list[int]], list[str], list[bool]]:
    """The units the view shows: (pieces of each unit, labels, special flags).

    Without `words` every piece is its own unit. With `words` the pieces of one word merge and
    are labelled with the word as written; special tokens stay units of their own.
    """
    t = tokens
    if not words:
        return [[i] for i in range(len(t.ids))], list(t.labels), list(t.special)
    members: list[list[int]] = []
    seen: dict[int, int] = {}
    for i, (word, special) in enumerate(zip(t.words, t.special)):
        if special or word is None:
            members.append([i])
        elif word in seen:
            members[seen[word]].append(i)
        else:
            seen[word] = len(members)
            members.append([i])
    labels = []
    for unit in members:
        if t.special[unit[0]] or t.words[unit[0]] is None:
            labels.append(t.labels[unit[0]])
        else:
            start, end = t.offsets[unit[0]][0], t.offsets[unit[-1]][1]
            labels.append(t.text[start:end].strip() or t.pieces[unit[0]])
    return members, labels, [t.special[u[0]] for u in members]


def aggregate(weights: np.ndarray, members: list[list[int]]) -> np.ndarray:  # [..., n, n] -> [..., g, g]
    """A unit's weight on a unit: the mean over its query pieces of the sum over the key pieces.

    Rows still sum to 1. A cell is NaN where every piece pair was masked.
    """
    n, g = weights.shape[-1], len(members)
    mean_rows = np.zeros((g, n), np.float32)  # [g, n]
    sum_cols = np.zeros((n, g), np.float32)  # [n, g]
    for u, pieces in enumerate(members):
        mean_rows[u, pieces] = 1.0 / len(pieces)
        sum_cols[pieces, u] = 1.0
    return mean_rows @ weights @ sum_cols  # [g, n] x [..., n, n] x [n, g] -> [..., g, g]


def visible_units(causal: bool, members: list[list[int]], window: int | None = None) -> np.ndarray | None:  # -> [g, g] bool or None
    """Where a unit's query may see some piece of the key unit (None: everywhere). With a sliding `window` w, piece p sees
    pieces p - w + 1 .. p: a unit sees a key unit some of whose pieces are that close."""
    if not causal:
        return None
    first = np.array([u[0] for u in members])
    last = np.array([u[-1] for u in members])
    seen = first[None, :] <= last[:, None]
    return seen if window is None else seen & (last[None, :] > first[:, None] - window)


def pool(weights: np.ndarray, size: int) -> np.ndarray:  # [..., g, g] -> [..., s, s], s = min(g, size)
    """Weights on a coarser grid of token blocks: the mean over a block's queries of the sum over a block's keys.

    Rows still sum to 1, so a pooled cell reads on the same 0-1 scale. NaN (masked) entries count as 0.
    """
    g = weights.shape[-1]
    if g <= size:
        return weights
    edges = np.linspace(0, g, size + 1).round().astype(int)
    blocks = [list(range(a, b)) for a, b in zip(edges[:-1], edges[1:])]
    return aggregate(np.nan_to_num(weights), blocks)


def find_focus(labels: list[str], pieces: list[str], focus: str, fold) -> int:
    """The unit `--focus` names: an index (0-based, negative from the end), or a token as the model folds words
    (`fold`, its Model.fold): the first label, else the first piece, that folds to the same text."""
    n = len(labels)
    try:
        i = int(focus)
    except ValueError:
        wanted = fold(focus)
        for names in (labels, pieces):
            for j, name in enumerate(names):
                if wanted and fold(name) == wanted:
                    return j
        run = word_run([fold(name) for name in pieces], wanted) or word_run([fold(name) for name in labels], wanted)
        if run is not None:
            import warnings

            from attn_cli.errors import Notice

            first, last = run
            warnings.warn(Notice(f"--focus {focus!r} is {last - first + 1} tokens ({' '.join(labels[first:last + 1])}): taking its last, "
                f"{labels[last]!r} (#{last})"), stacklevel=2)
            return last
        raise InputError(f"--focus {focus!r} is not one of the tokens: {' '.join(labels)} "
                         f"(or give a token's index, 0 to {n - 1})") from None
    if not -n <= i < n:
        raise InputError(f"--focus {i} is out of range: the sentence has {n} tokens (0 to {n - 1})")
    return i % n


def word_run(folded: list[str], wanted: str) -> tuple[int, int] | None:
    """The first run of two or more consecutive tokens whose folded texts make `wanted` ("ver" "d" "ant" for
    "verdant"): (first, last), or None."""
    if not wanted:
        return None
    for first in range(len(folded)):
        text = ""
        for last in range(first, len(folded)):
            text += folded[last]
            if not wanted.startswith(text) or not folded[last]:
                break
            if text == wanted and last > first:
                return first, last
    return None


def find_unit(labels: list[str], word: str, near: int | None = None) -> int | None:
    """The unit whose label is `word` (case-insensitive): the first, or the one nearest to `near` (earlier wins a tie)."""
    places = [i for i, label in enumerate(labels) if label.lower() == word.lower()]
    if not places:
        return None
    return places[0] if near is None else min(places, key=lambda i: (abs(i - near), i > near))
