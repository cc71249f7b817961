"""Training sentences for the shipped heads, generated from a small English grammar with fixed seeds.

Word pools: the hand-written pos_words.tsv (including words of several parts of speech, such as
"blue") and lexicon.tsv (words of one part of speech, from lemminflect; see build_lexicon.py).
The grammar is meant to look like what people type, not like one template: noun phrases with
0-3 adjectives joined by commas and "and", adverbs ("very old"), plurals, possessives, numbers,
noun modifiers ("a stone wall"), prepositional phrases, relative and subordinate clauses,
predicative adjectives after the noun ("the soup was cold"), and sentences of 4 to 40 tokens.

Every generated sentence comes with its labels: which adjectives belong to which noun (the
attributive adjectives of the noun's own phrase, before it), and which tokens are content words.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

DETERMINERS = "the the the a a this that his her their our my your its every some these those".split()
PLURAL_DETERMINERS = "the the these those their our some many two three several".split()
ADVERBS = "very very rather quite extremely really fairly so too surprisingly slightly incredibly".split()
PREPOSITIONS = "in on near under with by from behind beside across through over into at of for along toward".split()
JOINS = [["and"], ["but"], ["while"], ["because"], ["when"], [",", "and"], [",", "but"], [";"], [",", "so"], ["after"]]
OPENERS = [["yesterday", ","], ["later", ","], ["at", "night", ","], ["suddenly", ","], ["in", "the", "morning", ","],
           ["after", "a", "while", ","], ["then"], ["once", "again", ","]]
COPULAS = ["was", "is", "seemed", "looked", "were", "became", "felt"]
ENDS = [".", ".", ".", ".", "!", "?"]
MAX_EXTRA_CLAUSES = 3  # clauses after the first
NOUN_MODIFIER = 0.1  # share of noun phrases with a noun before the noun ("a stone wall")
PRONOUNS = ["she", "he", "they", "we", "i", "you", "it", "nobody", "everyone"]
OBJECTS = ["us", "them", "him", "her", "me", "you", "everyone"]
MODALS = [["could"], ["would"], ["will"], ["must"], ["might"], ["did", "n't"], ["ca", "n't"], ["want", "to"], ["need", "to"],
          ["let", "'s"], ["please"], ["tried", "to"], ["used", "to"]]
BASE_VERBS = "see find buy take try need want like keep bring make get give show use visit watch love hate".split()


@dataclass
class Words:
    """Word pools by part of speech; nouns and verbs carry their plural / past-tense forms."""

    adjectives: list[str]  # most frequent first
    nouns: list[tuple[str, str]]  # (singular, plural), most frequent first
    verbs: list[str]  # past tense, transitive or not: every frame below reads either way; most frequent first
    adverbs: list[str] = field(default_factory=lambda: list(ADVERBS))  # degree adverbs before an adjective


def read_lexicon(path: Path = HERE / "lexicon.tsv") -> dict[str, list[tuple[str, str]]]:
    """{pos: [(word, form)]} from lexicon.tsv, most frequent first."""
    table: dict[str, list[tuple[str, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            word, pos, form, _rank = line.split("\t")
            table.setdefault(pos, []).append((word, form))
    return table


@dataclass
class Sentence:
    tokens: list[str]
    adjectives: dict[int, list[int]]  # noun index -> indices of its own adjectives (before it)
    content: list[int]  # indices of content words (nouns, adjectives, verbs)

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


class Grammar:
    """A seeded generator of labelled sentences over the given word pools."""

    def __init__(self, words: Words, seed: int):
        self.words = words
        self.rng = np.random.default_rng(seed)
        self.tokens: list[str] = []
        self.adjectives: dict[int, list[int]] = {}
        self.content: list[int] = []
        self.used: set[str] = set()

    # -- small helpers --------------------------------------------------------------------
    def pick(self, items):
        return items[int(self.rng.integers(len(items)))]

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def fresh(self, pool, key=lambda w: w):
        """A word of `pool` not used yet in this sentence (words repeat rarely in real text).

        Pools are in frequency order; i = N u^3 with u uniform draws the i-th word with density
        ~ i^(-2/3): common words come up often, rare ones still do.
        """
        for _ in range(20):
            i = int(len(pool) * self.rng.random() ** 3)  # density ~ i^(-2/3): common words more often
            item = pool[i]
            if key(item) not in self.used:
                self.used.add(key(item))
                return item
        return self.pick(pool)

    def emit(self, *words: str, content: bool = False) -> list[int]:
        start = len(self.tokens)
        self.tokens.extend(words)
        if content:
            self.content.extend(range(start, len(self.tokens)))
        return list(range(start, len(self.tokens)))

    # -- phrases --------------------------------------------------------------------------
    def noun_phrase(self, allow_adjectives: bool = True) -> None:
        plural = self.chance(0.3)
        r = self.rng.random()
        if r < 0.12:
            pass  # bare: "red apples", "fresh bread"
        elif r < 0.2:
            self.emit(str(self.pick(["two", "three", "four", "five", "ten", "many", "several"])) if plural else "a")
        else:
            self.emit(self.pick(PLURAL_DETERMINERS if plural else DETERMINERS))
        n_adj = int(self.pick([0, 1, 1, 1, 2, 2, 3])) if allow_adjectives else 0
        own: list[int] = []
        for k in range(n_adj):
            if k > 0:
                joint = self.pick([[","], [","], ["and"], [], []]) if k < n_adj - 1 else self.pick([[","], ["and"], [",", "and"], [], []])
                self.emit(*joint)
            if self.chance(0.2):
                self.emit(self.fresh(self.words.adverbs))
            own += self.emit(self.fresh(self.words.adjectives), content=True)
        if self.chance(NOUN_MODIFIER):  # a noun modifier: "stone wall", "kitchen table"; not an adjective
            self.emit(self.fresh(self.words.nouns, key=lambda p: p[0])[0], content=True)
        singular, plural_form = self.fresh(self.words.nouns, key=lambda p: p[0])
        (noun,) = self.emit(plural_form if plural else singular, content=True)
        if own:
            self.adjectives[noun] = own
        if self.chance(0.15):  # a prepositional phrase inside the noun phrase
            self.emit(self.pick(PREPOSITIONS))
            self.noun_phrase()

    def subject(self) -> None:
        if self.chance(0.15):
            self.emit(self.pick(PRONOUNS))
        else:
            self.noun_phrase()

    def predicate(self) -> None:
        r = self.rng.random()
        if self.chance(0.1):
            self.emit(self.pick(["never", "often", "quickly", "slowly", "finally", "also", "still"]))
        if r < 0.15:  # predicative adjectives come after the noun and are not its attributive adjectives
            self.emit(self.pick(COPULAS))
            if self.chance(0.2):
                self.emit(self.fresh(self.words.adverbs))
            self.emit(self.fresh(self.words.adjectives), content=True)
            if self.chance(0.3):
                self.emit("and")
                self.emit(self.fresh(self.words.adjectives), content=True)
            return
        if self.chance(0.15):  # a modal or an auxiliary, then a verb in its base form
            self.emit(*self.pick(MODALS))
            self.emit(self.pick(BASE_VERBS), content=True)
        else:
            self.emit(self.fresh(self.words.verbs), content=True)
        if self.chance(0.12):  # an indirect object: "gave us a tiny room"
            self.emit(self.pick(OBJECTS))
        if r < 0.3:
            self.emit(self.pick(PREPOSITIONS))
            self.noun_phrase()
        elif r < 0.8:
            self.noun_phrase()
            if self.chance(0.35):
                self.emit(self.pick(PREPOSITIONS))
                self.noun_phrase()
        else:
            self.noun_phrase()
            self.emit(self.pick(["that", "which", "who"]))
            self.emit(self.fresh(self.words.verbs), content=True)
            self.noun_phrase()

    def clause(self) -> None:
        if self.chance(0.15):
            self.emit("there", self.pick(["was", "were", "is"]))
            self.noun_phrase()
            self.emit(self.pick(PREPOSITIONS))
            self.noun_phrase()
            return
        self.subject()
        if self.chance(0.1):
            self.emit(",", self.pick(["which", "who", "that"]))
            self.predicate()
            self.emit(",")
        self.predicate()

    def sentence(self) -> Sentence:
        self.tokens, self.adjectives, self.content, self.used = [], {}, [], set()
        if self.chance(0.15):
            self.emit(*self.pick(OPENERS))
        self.clause()
        for _ in range(int(self.rng.integers(MAX_EXTRA_CLAUSES + 1))):
            if len(self.tokens) > 30:
                break
            self.emit(*self.pick(JOINS))
            self.clause()
        self.emit(self.pick(ENDS))
        tokens = ["an" if t == "a" and i + 1 < len(self.tokens) and self.tokens[i + 1][0] in "aeiou" else t
                  for i, t in enumerate(self.tokens)]
        return Sentence(tokens, self.adjectives, self.content)


def generate(words: Words, count: int, seed: int, max_tokens: int = 40, need_adjectives: bool = True) -> list[Sentence]:
    """`count` distinct sentences of at most `max_tokens` tokens (with at least one labelled noun)."""
    grammar, seen, out = Grammar(words, seed), set(), []
    while len(out) < count:
        s = grammar.sentence()
        if len(s.tokens) <= max_tokens and (s.adjectives or not need_adjectives) and s.text not in seen:
            seen.add(s.text)
            out.append(s)
    return out
