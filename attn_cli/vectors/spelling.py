"""Did-you-mean for words without a vector: the nearest known spelling, frequent keys first.

Candidates are ranked by (edits, kind of edit, frequency rank). One edit beats two. Among single
edits a swap of neighbouring letters comes first, as it keeps every letter that was typed ("dgo" ->
"dog", not "do"); the others tie and the more frequent key wins (keys are stored most frequent first,
as GloVe and word2vec files are). Two edits are tried only against the FREQUENT_KEYS most frequent
keys, and only for words of 5 to 10 letters, so a long typo costs at most a few hundred thousand dict look-ups.
"""

from collections.abc import Iterator, Mapping, Sequence

LETTERS = "abcdefghijklmnopqrstuvwxyz-'"
MAX_LENGTH = 40  # a longer word is not a typo: no suggestion
TWO_EDITS_LENGTHS = range(5, 11)  # two edits only for words this long: shorter ones are two edits from noise, longer cost ~60² x 10² look-ups
FREQUENT_KEYS = 30_000  # two-edit suggestions come from the keys this frequent
SWAP, OTHER = 0, 1


def edits(word: str) -> Iterator[tuple[int, str]]:
    """(kind, string) of every string one edit from `word`: a swap of neighbours, a deletion, a replacement, an insertion."""
    for i in range(len(word) + 1):
        a, b = word[:i], word[i:]
        if len(b) > 1:
            yield SWAP, a + b[1] + b[0] + b[2:]
        if b:
            yield OTHER, a + b[1:]
        for c in LETTERS:
            if b:
                yield OTHER, a + c + b[1:]
            yield OTHER, a + c + b


def close_spelling(word: str, key_to_index: Mapping[str, int], index_to_key: Sequence[str]) -> str | None:
    """The known key most likely meant by `word`, or None when nothing is one or two edits away.

    A word without a letter or digit ("😀", "→") was not a typo of one, and a key that shares no
    character with the word (a one-letter word replaced whole) is no spelling of it: neither gets one.
    """
    if not word or len(word) > MAX_LENGTH or not any(c.isalnum() for c in word):
        return None
    found = _closest(word, key_to_index, index_to_key)
    return found if found is not None and set(found) & set(word) else None


def _closest(word: str, key_to_index: Mapping[str, int], index_to_key: Sequence[str]) -> str | None:
    best = None  # (kind, index)
    for kind, edit in edits(word):
        i = key_to_index.get(edit)
        if i is not None and edit != word and (best is None or (kind, i) < best):
            best = (kind, i)
    if best is not None:
        return index_to_key[best[1]]
    if len(word) not in TWO_EDITS_LENGTHS:
        return None
    found = None
    for _, first in edits(word):
        for _, second in edits(first):
            i = key_to_index.get(second)
            if i is not None and i < FREQUENT_KEYS and second != word and (found is None or i < found):
                found = i
    return None if found is None else index_to_key[found]
