"""Tokens as GloVe 6B has them, and their word vectors.

GloVe 6B was trained on lower-cased text split by the Stanford (PTB-style) tokenizer:
punctuation stands alone, clitics are their own tokens ("'s", "n't": "can't" -> "ca" "n't"),
while hyphenated words ("well-known"), numbers ("1,000", "3.14") and dotted
abbreviations ("u.s.", "mr.") stay whole.
"""

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np

from attn_cli.errors import UnknownWordsError

if TYPE_CHECKING:  # the vectors module is read only when vectors are loaded: not on every start
    from attn_cli.vectors import Vectors

MAX_SUGGESTED_WORDS = 10  # unknown words a message looks for a close spelling for (each costs ~60 look-ups a character)

ABBREVIATIONS = "mr mrs ms dr st jr sr vs etc inc co corp ltd prof gen gov sen rep mt ft jan feb aug sept oct nov dec".split()
CLITICS = r"(?:s|re|ve|ll|d|m)"
TOKEN = re.compile(
    rf"""
      (?:[^\W\d_]\.){{2,}}                                # u.s.  e.g.  a.m.
    | (?:{"|".join(ABBREVIATIONS)})\.(?=\s|$)              # mr.  st.  (only before a space)
    | \d+(?:[.,/:]\d+)*(?![^\W_]|-[^\W_])                  # 1,000  3.14  9/11 (1990s, 24-year-old are words)
    | '\d+s\b                                              # '90s
    | [^\W_]+(?=n't\b)                                     # do|n't  ca|n't
    | n't\b
    | '{CLITICS}\b                                         # 's 're 've 'll 'd 'm
    | [^\W_]+(?:-[^\W_]+)*(?:'(?!{CLITICS}\b)[^\W_]+)*     # words, well-known, o'neill
    | \.\.\.|--
    | \S                                                   # any other mark alone
    """,
    re.VERBOSE,
)
# Typographic quotes as GloVe's plain ones.
QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def tokenize(text: str) -> list[str]:
    return TOKEN.findall(text.lower().translate(QUOTES))


class Oov(str, Enum):
    """What to do with a word that has no vector."""

    error = "error"
    skip = "skip"
    zero = "zero"


@dataclass
class Embedded:
    tokens: list[str]  # the tokens kept, in order
    vectors: np.ndarray  # [n_tokens, d] float64 word vectors
    unknown: list[str] = field(default_factory=list)  # words without a vector (skipped or zeroed)


def embed(tokens: list[str], vectors: "Vectors", oov: Oov = Oov.error) -> Embedded:
    """Look up each token; unknown words raise, are dropped, or get a zero vector."""
    unknown = [t for t in tokens if not vectors.has_vector(t)]
    if unknown and oov == Oov.error:
        raise UnknownWordsError(*suggest(unknown, vectors))
    kept = [t for t in tokens if oov != Oov.skip or vectors.has_vector(t)]
    rows = [vectors.get_vector(t) if vectors.has_vector(t) else np.zeros(vectors.vector_size) for t in kept]
    matrix = np.array(rows, dtype=np.float64).reshape(len(kept), vectors.vector_size)
    return Embedded(kept, matrix, unknown)


def suggest(unknown: list[str], vectors: "Vectors") -> tuple[list[str], dict[str, str]]:
    """The distinct unknown words, and a close known spelling for the first few that have one."""
    distinct = list(dict.fromkeys(unknown))
    return distinct, {w: s for w in distinct[:MAX_SUGGESTED_WORDS] if (s := vectors.close_spelling(w))}
