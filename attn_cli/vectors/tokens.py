"""Tokens as GloVe 6B has them, and their word vectors.

GloVe 6B was trained on lower-cased text split by the Stanford (PTB-style) tokenizer:
punctuation stands alone, clitics are their own tokens ("'s", "n't": "can't" -> "ca" "n't"),
while hyphenated words ("well-known"), numbers ("1,000", "3.14"), times ("9:30") and dotted
abbreviations ("u.s.", "mr.") stay whole; a time's am or pm is a word of its own ("9:30am" ->
"9:30" "am").
"""

import re
from enum import Enum
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from attn_cli.errors import InputError, UnknownWordsError
from attn_cli.records import Record

if TYPE_CHECKING:  # the vectors module is read only when vectors are loaded: not on every start
    from attn_cli.vectors.store import Vectors

SCAN_TOKENS = 64  # up to this many tokens, find their rows by scanning the key list
MAX_SUGGESTED_WORDS = 10  # unknown words a message looks for a close spelling for (each costs ~60 look-ups a character)

ABBREVIATIONS = "mr mrs ms dr st jr sr vs etc inc co corp ltd prof gen gov sen rep mt ft jan feb aug sept oct nov dec".split()
CLITICS = r"(?:s|re|ve|ll|d|m)"
WORDS_BEFORE = rf"""
      (?:[^\W\d_]\.){{2,}}                                # u.s.  e.g.  a.m.
    | (?:{"|".join(ABBREVIATIONS)})\.(?=\s|$)              # mr.  st.  (only before a space)
"""
TIMES = r"""
    | \d+(?:[.,/:]\d+)*(?=(?:[ap]\.?m\b|[ap]\.m\.))          # 9:30|am  7|pm  10:15|a.m. (a time, then its am or pm)
"""
WORDS_AFTER = rf"""
    | \d+(?:[.,/:]\d+)*(?![^\W_]|-[^\W_])                  # 1,000  3.14  9/11 (1990s, 24-year-old are words)
    | '\d+s\b                                              # '90s
    | [^\W_]+(?=n't\b)                                     # do|n't  ca|n't
    | n't\b
    | '{CLITICS}\b                                         # 's 're 've 'll 'd 'm
    | [^\W_]+(?:-[^\W_]+)*(?:'(?!{CLITICS}\b)[^\W_]+)*     # words, well-known, o'neill
    | \.\.\.|--
    | \S                                                   # any other mark alone
"""
TOKEN = re.compile(WORDS_BEFORE + TIMES + WORDS_AFTER, re.VERBOSE)
# Typographic quotes as GloVe's plain ones.
QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def tokenize(text: str, times: bool = True) -> list[str]:
    """The tokens of `text`. `times=False` reads "9:30am" as "9" ":" "30am", as the tokenizer did when the
    shipped heads were built (data/heads/build_heads.py fits on a corpus that holds such times)."""
    return (TOKEN if times else without_times()).findall(text.lower().translate(QUOTES))


@lru_cache(maxsize=1)
def without_times():
    return re.compile(WORDS_BEFORE + WORDS_AFTER, re.VERBOSE)


class Oov(str, Enum):
    """What to do with a word that has no vector."""

    error = "error"
    skip = "skip"
    zero = "zero"


def sentence_tokens(text: str, max_tokens: int) -> list[str]:
    """The tokens of one sentence, refused when there are none or more than `max_tokens`."""
    tokens = tokenize(text)
    if not tokens:
        raise InputError("no words in the input")
    if len(tokens) > max_tokens:
        raise InputError(f"{len(tokens)} tokens, more than --max-tokens {max_tokens}; split the text or raise the limit")
    return tokens


class Embedded(Record):
    """Words turned into their vectors, with what had none (a plain class: see attention.Head)."""

    __slots__ = ("tokens", "vectors", "unknown", "rows")

    def __init__(self, tokens: list[str], vectors: np.ndarray, unknown: list[str] | None = None, rows: list[int] | None = None):
        self.tokens = tokens  # the tokens kept, in order
        self.vectors = vectors  # [n_tokens, d] float64 word vectors
        self.unknown = [] if unknown is None else unknown  # words without a vector (skipped or zeroed)
        self.rows = [] if rows is None else rows  # each kept token's key row, -1 for a zeroed word

    def embeddings(self, position: bool = True) -> np.ndarray:  # -> [n_tokens, d] E = word vectors (+ positions)
        from attn_cli.core.blocks import input_embeddings

        return input_embeddings(self.vectors, position)


def key_rows(tokens: list[str], vectors: "Vectors") -> list[int | None]:
    """Each token's row, None for a word that is not a key.

    Building the key index costs ~50 ms for 100,000 keys; for one short sentence a scan of
    the key list is ~10x cheaper, so the index is built only when many tokens need it
    (stdin batches build it up front).
    """
    if "key_to_index" in vars(vectors) or len(tokens) > SCAN_TOKENS:
        index = vectors.key_to_index
        return [index.get(t) for t in tokens]
    rows = {token: vectors.find(token) for token in dict.fromkeys(tokens)}
    return [rows[t] for t in tokens]


def embed(tokens: list[str], vectors: "Vectors", oov: Oov = Oov.error) -> Embedded:
    """Look up each token's vector: the one way from tokens to word vectors (E adds positions: Embedded.embeddings).

    Unknown words raise UnknownWordsError, are dropped, or get a zero vector; a NaN or infinite
    vector is a damaged file (DataError).
    """
    rows = key_rows(tokens, vectors)
    if None not in rows:  # the common case: one read of the matrix
        matrix = np.asarray(vectors.vectors)  # a plain view of the (memory-mapped) matrix: cheaper to index
        return Embedded(list(tokens), vectors.checked(matrix[rows].astype(np.float64), tokens), [], rows)
    unknown = [t for t in tokens if not vectors.has_vector(t)]  # a fastText file builds vectors for words it has no key for
    if unknown and oov == Oov.error:
        raise UnknownWordsError(*suggest(unknown, vectors))
    keep = [oov != Oov.skip or vectors.has_vector(t) for t in tokens]
    kept = [t for t, k in zip(tokens, keep) if k]
    words = [vectors.get_vector(t) if vectors.has_vector(t) else np.zeros(vectors.vector_size) for t in kept]
    matrix = np.array(words, dtype=np.float64).reshape(len(kept), vectors.vector_size)  # [n, d]
    return Embedded(kept, matrix, unknown, [-1 if r is None else r for r, k in zip(rows, keep) if k])


def suggest(unknown: list[str], vectors: "Vectors") -> tuple[list[str], dict[str, str]]:
    """The distinct unknown words, and a close known spelling for the first few that have one."""
    distinct = list(dict.fromkeys(unknown))
    return distinct, {w: s for w in distinct[:MAX_SUGGESTED_WORDS] if (s := vectors.close_spelling(w))}
