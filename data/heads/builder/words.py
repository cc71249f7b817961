"""The words the heads are trained on: the hand-written and lexicon words, split into training and held-out pools."""

import numpy as np

import sentences as grammar
from attn_cli.core.attention import Mask
from attn_cli.heads import links as link_files
from attn_cli.vectors.tokens import embed
from builder.settings import HELDOUT_SHARE, HERE, SEED


def read_pos_words(path=HERE / "pos_words.tsv") -> dict[str, list[str]]:
    """{pos: [word]} from the hand-written list, in file order."""
    table: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            word, pos = line.split("\t")
            table.setdefault(pos, []).append(word)
    return table


def word_pools(vectors, seed=SEED) -> tuple[grammar.Words, grammar.Words]:
    """(training words, held-out words). A seeded HELDOUT_SHARE of the lexicon's adjectives and
    nouns is held out; the hand-written words all train (the lesson's words among them)."""
    rank = vectors.key_to_index
    lexicon, hand = grammar.read_lexicon(), read_pos_words()
    rng = np.random.default_rng(seed)

    def split(items):
        held = set(rng.permutation(len(items))[: round(HELDOUT_SHARE * len(items))].tolist())
        return [x for i, x in enumerate(items) if i not in held], [x for i, x in enumerate(items) if i in held]

    hand_adj, hand_nouns = set(hand["adj"]), set(hand["noun"])
    adj_train, adj_held = split([w for w, _ in lexicon["adj"] if w not in hand_adj])
    noun_train, noun_held = split([(w, f) for w, f in lexicon["noun"] if w not in hand_nouns])
    hand_noun_pairs = [(w, w + "s") for w in hand["noun"] if w + "s" in rank]
    verbs = [f for _, f in lexicon["verb"]] + hand["verb"] + hand["iverb"]
    adverbs = grammar.ADVERBS + [w for w, _ in lexicon["adv"] if w.endswith("ly")]

    def by_rank(items, key=lambda x: x):
        return sorted(dict.fromkeys(items), key=lambda x: rank[key(x)])

    def pools(adjectives, nouns):
        return grammar.Words(by_rank(adjectives), by_rank(nouns, key=lambda p: p[0]), by_rank(verbs), by_rank(adverbs))

    return pools(adj_train + hand["adj"], noun_train + hand_noun_pairs), pools(adj_held, noun_held)


def examples(sentences, vectors, links_of) -> list[link_files.Example]:
    """Each sentence under both masks; `links_of(sentence)` gives {query: [keys]}; under the causal
    mask keys after their query are dropped (a query left without keys attends to itself)."""
    out = []
    for s in sentences:
        embedded = embed(s.tokens, vectors)
        e, links = embedded.embeddings(), links_of(s)  # [n, d]
        for mask in Mask:
            kept = {q: [k for k in ks if mask == Mask.none or k < q] for q, ks in links.items()}
            out.append(link_files.Example(s.tokens, e, embedded.vectors, {q: ks for q, ks in kept.items() if ks}, mask))
    return out
