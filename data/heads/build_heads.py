"""Build the shipped heads `adjective` and `context`, and measure them, reproducibly.

    python data/heads/build_heads.py            # adjective.npz, context.npz, *.metrics.json, *.md, training samples
    python data/heads/build_heads.py --check    # rebuild in memory, compare with the shipped files

Training data: sentences from the grammar in sentences.py, over the words of pos_words.tsv
(hand-written) and lexicon.tsv (from lemminflect, see build_lexicon.py), with fixed seeds. A
seeded share of the words is held out of training altogether. The context head's value map is
also fitted on running text: the Lee background corpus, read from gensim's test data (see
corpus_sentences), where every gensim wheel ships it.

Measured on sets that are *not* the training distribution, all written by hand:
- eval/adjectives_natural.tsv, eval/adjectives_long.tsv, eval/adjectives_natural3.tsv (links: noun ->
  its own adjectives) and eval/senses_natural*.tsv with eval/sense_words*.tsv (ambiguous words in
  natural sentences): the held-out sets, never used to choose anything (the third of each was
  written blind after the heads were built);
- dev/adjectives.tsv, dev/senses.tsv, dev/sense_words.tsv: the development set, on which the
  choices made from data (the heads' shapes, the context head's beta, value scale and corpus-map share, and the
  training of its W_V) are made; its figures are reported apart.
Every figure stands beside the same figure for baselines (previous token, even attention, the
identity head, even attention over the content words), computed by attn_cli.evaluation, the
code behind `attn heads eval`.
"""

import argparse
import itertools
import math
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import sentences as grammar  # noqa: E402
from attn_cli.heads import evaluation
from attn_cli.heads import senses as sense_eval
from attn_cli.heads import training  # noqa: E402
from attn_cli.heads import links as link_files
from attn_cli.core.attention import Head, Mask, allowed_keys
from attn_cli.core.blocks import input_embeddings  # noqa: E402
from attn_cli.analysis.senses import read_sense_set  # noqa: E402
from attn_cli.vectors.tokens import embed, tokenize  # noqa: E402

SEED = 2024
MASKS = tuple(m.value for m in Mask)  # "causal", "none": every figure is measured under both
LONG_TOKENS = 25  # a long sentence has at least this many tokens, as in eval/adjectives_long.tsv
HELDOUT_SHARE = 0.2  # of the lexicon's adjectives and nouns, never in a training sentence

ADJECTIVE_CONFIG = training.TrainConfig(d_k=2, steps=0, seed=SEED, self_weight=0.05)  # W_V's fit: value_scale, value_ridge, self_weight
ADJECTIVE_D_K = 2
ADJECTIVE_SENTENCES = 1500  # grammar sentences for W_V, each seen under both masks
ADJECTIVE_SHAPES = {  # candidates for the score's shape (see adjective_qk), chosen on the dev set
    "alpha": (1.5, 2.0, 3.0), "beta": (2.0, 3.0, 4.0), "bias": (0.25, 0.5, 1.0), "gamma": (4.0, 16.0), "self": (0.0, 2.0, 4.0, 8.0)}
TEMPERATURES = (1.0, 1.5, 2.0, 3.0, 4.0)  # chosen on the dev set after the shape (see build_adjective)
HAND_WEIGHT = 10.0  # a hand-written word (pos_words.tsv) counts this many times a lexicon word in the classifiers: its label is sure
AFTER_FACTOR = 3.0  # a key after the noun costs this many times more per token than one before it
MIN_KEY_WEIGHT = 0.6  # the chosen shape keeps the dev set's mean weight on own adjectives at least this
FUNCTION_KEYS = 300  # the most frequent GloVe keys, as function words when no lexicon word
CLASSIFIER_POSITIONS = 64  # the word classifiers see each word at random positions below this
POSITION_COPIES = 4
CONTEXT_RARITY = (0.5, 0.75, 1.0, 1.5, 2.0)  # candidates for beta, how strongly the context head prefers rare keys; chosen on the dev set
CONTEXT_SELF_COSTS = (0.0, 8.0, 16.0)  # candidates for the cost of attending to oneself; chosen on the dev set
CONTEXT_VALUE_SCALES = (4.0, 5.0, 6.0, 7.0, 8.0)  # candidates for s in W_V = s (I - m m^T); chosen on the dev set
RANK_OFFSET = 10.0  # rarity is fitted to log(rank + this): the first keys' ranks (0, 1, 2...) do not dominate
MIN_COSINE = 0.6  # the chosen s keeps the dev set's mean cos(E, E') of the ambiguous word at least this
SINK_RANKS = (None, 1_000, 3_000, 10_000, 30_000, 100_000)  # candidates for the sink's score: that of a key of this frequency rank (None: no sink); chosen on the dev set
SINK_BOOSTS = (1.0, 1.5, 2.0, 2.5, 3.0)  # candidates for the factor on W_V that comes with the sink (weight on the sink shrinks every update); chosen on the dev set
MIN_ALONE_COSINE = 0.8  # the chosen sink keeps the mean cos(E, E') of the dev words with no content word before them (causal mask) at least this
MEAN_WORDS = 20_000  # m: the unit mean of the most frequent word vectors, a direction every word shares
CORPUS = "lee_background.cor"  # gensim's copy of the Lee background corpus, in its test data (see corpus_sentences)
CORPUS_SHA256 = "5d78d6dafd953bbf65797bef09a9ffb9ec430583381be705f8fd460000f370fb"
CORPUS_RIDGE = 1.0  # of the closed-form fit of the corpus map (the dev figures are the same from 0.01 to 100)
CORPUS_MIN_SEEN = 3  # a corpus word is a training row when its head sees at least this many other tokens
CORPUS_MIXES = (0.0, 0.25, 0.5, 0.75, 1.0)  # candidates for mu in W_V = s (mu C + (1 - mu) (I - m m^T)); chosen on the dev set
VALUE_RIDGES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, None)  # candidates for the pull of the trained W_V toward its start (None: left as it starts); chosen by cross-validation on dev
VALUE_FOLDS = 5  # the dev words are split into this many groups; each is predicted by a map trained on the others
VALUE_STEPS, VALUE_LEARNING_RATE = 400, 0.02  # Adam on the value map's sense margins (converged: 1000 steps give the same choice)
MIN_VALUE_COSINE = 0.55  # the chosen ridge keeps the mean cos(E, E') of words it was not trained on at least this (the bar is 0.5)

SETS = {  # name -> (file, sense words or None); dev is the tuning set
    "natural": (HERE / "eval" / "adjectives_natural.tsv", None),
    "long": (HERE / "eval" / "adjectives_long.tsv", None),
    "natural3": (HERE / "eval" / "adjectives_natural3.tsv", None),  # written blind, after the heads were built
    "dev": (HERE / "dev" / "adjectives.tsv", None),
    "senses": (HERE / "eval" / "senses_natural.tsv", HERE / "eval" / "sense_words.tsv"),
    "senses_dev": (HERE / "dev" / "senses.tsv", HERE / "dev" / "sense_words.tsv"),
    "senses2": (HERE / "eval" / "senses_natural2.tsv", HERE / "eval" / "sense_words2.tsv"),  # 12 words of no other set
    "senses3": (HERE / "eval" / "senses_natural3.tsv", HERE / "eval" / "sense_words3.tsv"),  # 12 more, written after the head was built
}
HELDOUT_SENSES = {"senses": "held-out", "senses2": "held-out, 12 other words", "senses3": "held-out, 12 more words"}  # name -> label
SENSE_SETS = (*HELDOUT_SENSES, "senses_dev")


# --- words --------------------------------------------------------------------------------------


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


# --- measuring ----------------------------------------------------------------------------------


def link_figures(heads, links_file, vectors) -> dict:
    """{mask: {row name: figures}} for the heads and the baselines, as `attn heads eval` reports them."""
    links = link_files.read_links(links_file) if isinstance(links_file, Path) else links_file
    exs = link_files.links_to_examples(links, vectors, Mask.none, str(links_file), strict=False)
    return {mask: {row.pop("name"): row for row in evaluation.link_rows(heads, exs, mask, vectors.vector_size)}
            for mask in MASKS}


def long_links(links_file: Path) -> list[link_files.Link]:
    """The links of the file's sentences of LONG_TOKENS tokens or more."""
    return [link for link in link_files.read_links(links_file) if len(tokenize(link.sentence)) >= LONG_TOKENS]


def sense_figures(heads, cases_file, words_file, vectors) -> dict:
    """sense_eval.sense_metrics under both masks, without the case-by-case rows (`attn heads eval --cases` shows them)."""
    cases = sense_eval.parse_sense_cases(cases_file.read_text(encoding="utf-8").splitlines(), str(cases_file))
    sense_set = read_sense_set(words_file)
    figures = {mask: sense_eval.sense_metrics(heads, cases, sense_set, vectors, mask) for mask in MASKS}
    for f in figures.values():
        del f["case_rows"]
    return figures


def sense_cases(cases_file, words_file, vectors) -> tuple[list, dict]:
    """A sense set's cases, and each word's sense names with their probe centroids: {word: ([names], [s, d])}."""
    from attn_cli.analysis.senses import probe_matrix, sense_centroids

    cases = sense_eval.parse_sense_cases(cases_file.read_text(encoding="utf-8").splitlines(), str(cases_file))
    sense_set = read_sense_set(words_file)
    return cases, {w: (list(table), sense_centroids([probe_matrix(p, vectors) for p in table.values()])) for w, table in sense_set.items()}


def even_through_value_map(adjective, context, cases_file, words_file, vectors) -> dict:
    """The context head's attention replaced by even weights over the other content words the word can
    see, through the head's own W_V (the adjective head as it is): what the value map does without
    the head's choice of where to look. The weight spread is what the head gives to tokens (1 less
    its sink's). {mask: share of cases resolved}."""
    from attn_cli.analysis.inspect import inspect_text
    from attn_cli.models.glove import Settings
    from attn_cli.vectors.words import is_content

    cases, senses = sense_cases(cases_file, words_file, vectors)
    out = {}
    for mask in MASKS:
        rows, centroids, intended = [], [], []
        for case in cases:
            if mask == Mask.causal and not case.context_before:
                continue
            result = inspect_text(case.sentence, vectors, [adjective, context], Settings(mask=Mask(mask)))
            i = result.tokens.index(case.word)
            seen = [j for j in range(len(result.tokens)) if j != i and is_content(result.tokens[j]) and (mask == Mask.none or j < i)]
            share = 1.0 if context.sink is None else 1.0 - result.heads[1].sink_weights[i]  # the weight the head gives to tokens
            mix = share * result.e[seen].mean(axis=0) @ context.w_v if seen else 0.0  # [d]
            rows.append(result.e[i] + result.heads[0].delta[i] + mix)  # [d]: the adjective head's update as it is
            names, c = senses[case.word]
            centroids.append(c)
            intended.append(names.index(case.sense))
        out[mask] = sense_eval._share_correct(np.array(rows), centroids, intended)  # the rule `attn heads eval` counts by
    return out


def unambiguous(s: grammar.Sentence) -> bool:
    """Every labelled noun and adjective occurs once: a links file names words, not positions."""
    labelled = [s.tokens[i] for q, ks in s.adjectives.items() for i in (q, *ks)]
    return all(s.tokens.count(w) == 1 for w in labelled)


def sentence_links(sentences) -> list[link_files.Link]:
    """The sentences' noun -> adjective links as a links file would give them (sentences whose
    labelled words repeat are left out)."""
    return [link_files.Link(s.text, s.tokens[q], s.tokens[k], 0) for s in sentences if unambiguous(s)
            for q, ks in s.adjectives.items() for k in ks]


# --- the heads ----------------------------------------------------------------------------------


def word_classes(words: grammar.Words, vectors, exclude: set[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The training words with two labels each: (words, is_adjective [w], is_noun [w]).

    Adjectives, nouns (both forms), verbs and adverbs of the training pool, plus function words:
    the grammar's own and the most frequent GloVe keys that are no lexicon word. A word listed
    under two parts of speech is left out. `exclude`: words never to use (the held-out pool)."""
    tags: dict[str, set[str]] = {}
    for pos, items in (("adj", words.adjectives), ("noun", [w for pair in words.nouns for w in pair]),
                       ("verb", words.verbs), ("adv", words.adverbs)):
        for w in items:
            tags.setdefault(w, set()).add(pos)
    function = [*grammar.DETERMINERS, *grammar.PLURAL_DETERMINERS, *grammar.PREPOSITIONS, *grammar.COPULAS, *grammar.ENDS,
                *grammar.PRONOUNS, *grammar.OBJECTS, *(w for group in (*grammar.JOINS, *grammar.MODALS) for w in group)]
    lexicon = {w for items in grammar.read_lexicon().values() for w, form in items for w in (w, form) if w}
    function += [w for w in vectors.index_to_key[:FUNCTION_KEYS] if w not in lexicon and w not in tags]
    for w in function:
        tags.setdefault(w, set()).add("function")
    chosen = [w for w, t in tags.items() if len(t) == 1 and w not in exclude and vectors.has_vector(w)]
    return chosen, np.array([tags[w] == {"adj"} for w in chosen]), np.array([tags[w] == {"noun"} for w in chosen])


def with_positions(x: np.ndarray, rng) -> np.ndarray:  # [w, d] -> [w * POSITION_COPIES, d]
    """Each word vector at POSITION_COPIES random positions: E as a head sees it."""
    pe = input_embeddings(np.zeros((CLASSIFIER_POSITIONS, x.shape[1])), position=True)  # [p, d]: the positions alone
    return np.concatenate([x + pe[rng.integers(0, CLASSIFIER_POSITIONS, len(x))] for _ in range(POSITION_COPIES)])


def logistic_regression(x: np.ndarray, y: np.ndarray, weight: np.ndarray, steps=2000, lr=0.5, l2=1e-3) -> np.ndarray:  # [m, d], [m], [m] -> [d + 1]
    """Weights and intercept of a logistic regression by full-batch gradient descent (no penalty on the
    intercept); each example counts `weight`, the two classes equally however many words each has."""
    xb = np.hstack([x, np.ones((len(x), 1))])  # [m, d + 1]
    share = np.average(y, weights=weight)
    balance = np.where(y > 0, 0.5 / share, 0.5 / (1.0 - share)) * weight / weight.mean()  # [m]
    w = np.zeros(xb.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))  # [m]
        w -= lr * (xb.T @ (balance * (p - y)) / len(y) + l2 * np.r_[w[:-1], 0.0])
    return w


def ridge_regression(x: np.ndarray, y: np.ndarray, weight: np.ndarray, ridge=1.0) -> np.ndarray:  # [m, d], [m], [m] -> [d + 1]
    """Weights and intercept minimising sum_i weight_i (x_i w + b - y_i)^2 + ridge |(w, b)|^2 (training.fit_value_map, one output)."""
    xb = np.hstack([x, np.ones((len(x), 1))])  # [m, d + 1]
    return training.fit_value_map(xb, y[:, None], weight, np.zeros((xb.shape[1], 1)), ridge)[:, 0]


def adjective_qk(adj: np.ndarray, noun: np.ndarray, shape: dict, temperature: float = 1.0) -> Head:
    """The head's Q, K and distance slopes from the two word classifiers, W_V left as I.

    With a(x) = adj . x (how adjective-like a token is) and n(x) = noun . x + b (how noun-like),
    the scaled score of query i and key j is
        alpha (bias + n_i) a_j - gamma n_i n_j - beta * distance before (3 beta after), - self on itself:
    a noun wants the nearest adjectives before it and no other noun, itself included. Every term is
    divided by `temperature` (the ranking stays; only how sharp it is changes).
    """
    d, root = len(adj) - 1, math.sqrt(ADJECTIVE_D_K)
    w_q = np.stack([noun[:-1], noun[:-1]], axis=1)  # [d, 2]
    b_q = np.array([shape["bias"] + noun[-1], noun[-1]])  # [2]
    w_k = root / temperature * np.stack([shape["alpha"] * adj[:-1], -shape["gamma"] * noun[:-1]], axis=1)  # [d, 2]; the key's intercepts only shift whole rows
    distance = np.array([shape["beta"], AFTER_FACTOR * shape["beta"], shape["self"]]) / temperature
    return Head("adjective", w_q, w_k, np.eye(d), b_q=b_q, distance=distance)


def build_adjective(vectors, n_train=ADJECTIVE_SENTENCES):
    """Q, K from two linear word classifiers (adjective? noun?) fitted on the training words, the
    score's shape chosen on the dev set; W_V by ridge regression on grammar sentences."""
    train_words, held_words = word_pools(vectors)
    held = {w for w in held_words.adjectives} | {w for pair in held_words.nouns for w in pair}
    words, is_adj, is_noun = word_classes(train_words, vectors, held)
    rng = np.random.default_rng(SEED)
    x = with_positions(embed(words, vectors).vectors, rng)  # [w * copies, d]
    hand = {w for ws in read_pos_words().values() for w in ws}
    weight = np.tile([HAND_WEIGHT if w in hand else 1.0 for w in words], POSITION_COPIES)  # [w * copies]
    adj = logistic_regression(x, np.tile(is_adj, POSITION_COPIES).astype(float), weight)
    noun = ridge_regression(x, np.tile(is_noun, POSITION_COPIES).astype(float), weight)
    dev = link_files.links_to_examples(link_files.read_links(SETS["dev"][0]), vectors, Mask.none, strict=False)
    tried = []
    for values in itertools.product(*ADJECTIVE_SHAPES.values()):
        shape = dict(zip(ADJECTIVE_SHAPES, values))
        head = adjective_qk(adj, noun, shape)
        figures = [evaluation.link_metrics(head, dev, mask) for mask in MASKS]
        tried.append({**shape, **{k: float(np.mean([f[k] for f in figures])) for k in ("exact_top", "top_on_key", "key_weight")}})
    enough = [t for t in tried if t["key_weight"] >= MIN_KEY_WEIGHT] or tried
    best = max(enough, key=lambda t: (round(t["exact_top"], 6), round(t["top_on_key"], 6), round(t["key_weight"], 6)))
    shape = {k: best[k] for k in ADJECTIVE_SHAPES}
    # How sharp: the same ranking at every temperature; the one whose noun rows are closest (cross-entropy)
    # to "evenly over my own adjectives" on the dev set, so a noun with two adjectives shows both.
    spread = {t: cross_entropy(adjective_qk(adj, noun, shape, t), dev) for t in TEMPERATURES}
    temperature = min(TEMPERATURES, key=lambda t: round(spread[t], 9))
    shape["temperature"] = temperature
    train = grammar.generate(train_words, n_train, SEED)
    head = training.with_value_map(adjective_qk(adj, noun, shape, temperature), examples(train, vectors, lambda s: s.adjectives), ADJECTIVE_CONFIG)
    unseen = grammar.generate(held_words, 300, SEED + 1)  # the grammar, over words never trained on
    classifier = {"words": len(words), "adjectives": int(is_adj.sum()), "nouns": int(is_noun.sum())}
    return head, {"train": train, "unseen": unseen, "config": ADJECTIVE_CONFIG, "shape": shape, "tried": tried, "classifier": classifier,
                  "spread": {f"{t:g}": v for t, v in spread.items()}}


def cross_entropy(head: Head, exs: list[link_files.Example]) -> float:
    """Mean over linked queries (both masks) of -mean_{own keys a} log w_qa: how far each row is from even weight on its own keys."""
    from attn_cli.core.attention import run_head

    losses = []
    for mask in MASKS:
        for ex in exs:
            keys_of = {q: [k for k in ks if mask == Mask.none or k < q] for q, ks in ex.links.items()}
            if not any(keys_of.values()):
                continue
            w = run_head(ex.e, head, allowed_keys(mask, len(ex.tokens))).weights  # [n, n]
            losses += [-np.mean(np.log(np.maximum(w[q, ks], 1e-300))) for q, ks in keys_of.items() if ks]
    return float(np.mean(losses))


def value_map(scale: float, vectors) -> np.ndarray:  # -> [d, d]
    """W_V = s (I - m m^T): a key's vector without the direction every word shares, scaled by s."""
    m = np.asarray(vectors.vectors[:MEAN_WORDS], dtype=np.float64).mean(axis=0)
    m /= np.linalg.norm(m)
    return scale * (np.eye(len(m)) - np.outer(m, m))


def rarity_key(vectors) -> np.ndarray:  # -> [d + 1]
    """Weights and intercept of a ridge regression of log(rank + RANK_OFFSET) on E, over every key of
    the vectors at random positions: GloVe lists its keys from the most frequent, so u . E says how
    rare, how specific, a token is ("the", "of" and "." low; "biopsy" and "carbon" high)."""
    x = np.asarray(vectors.vectors, dtype=np.float64)  # [w, d]
    y = np.log(np.arange(len(x)) + RANK_OFFSET)  # [w]
    rng = np.random.default_rng(SEED + 3)
    return ridge_regression(with_positions(x, rng), np.tile(y, POSITION_COPIES), np.ones(len(x) * POSITION_COPIES))


def context_head(rarity: np.ndarray, beta: float, self_cost: float, w_v: np.ndarray, sink_rank: int | None = None) -> Head:
    """The context head from the rarity regression: every query asks the same question (W_Q = 0, b_Q = beta),
    each key answers with its rarity, so the scaled score of key j is beta * (u . E_j) whatever the query,
    less `self_cost` on the query itself; W_V writes what those words mean. With `sink_rank`, a key that
    writes nothing scores as a word of that frequency rank would: where the sentence has no rarer word
    to attend to, the weight goes there and the word stays itself."""
    d = len(rarity) - 1
    w_q, b_q, w_k = np.zeros((d, 1)), np.array([beta]), rarity[:-1, None]  # [d, 1], [1], [d, 1]; the intercept only shifts whole rows
    distance = np.array([0.0, 0.0, self_cost]) if self_cost else None
    sink = None if sink_rank is None else beta * (math.log(sink_rank + RANK_OFFSET) - rarity[-1])  # u . E = log(rank + offset) - intercept
    return Head("context", w_q, w_k, w_v, b_q=b_q, distance=distance, sink=sink)


def corpus_sentences(vectors) -> list[list[str]]:
    """The Lee background corpus (Lee, Pincombe and Welsh 2005: 300 news articles of the Australian
    Broadcasting Corporation, 2,581 sentences), read from gensim's test data, where every gensim wheel
    ships it (pinned by its SHA-256): running text on every topic, unlike the dev and held-out sets.
    Each sentence as the tokens that have a vector."""
    import hashlib
    import importlib.util
    import re

    path = Path(importlib.util.find_spec("gensim").submodule_search_locations[0]) / "test" / "test_data" / CORPUS
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != CORPUS_SHA256:
        raise SystemExit(f"{path}: not the corpus the heads were built from (SHA-256 differs)")
    sentences = re.split(r"(?<=[.!?])\s+", data.decode("utf-8"))
    return [[t for t in tokenize(s, times=False) if vectors.has_vector(t)] for s in sentences]  # as the shipped heads were fitted


def corpus_rows(head: Head, vectors) -> tuple[np.ndarray, np.ndarray]:  # -> [r, d], [r, d]
    """What the corpus map is fitted on: for each content word of the corpus under both masks (when the
    head sees at least CORPUS_MIN_SEEN other tokens), c = sum_j w_ij E_j over the head's weights (its
    own query costs it, so c is its context) and y = the word's unit vector without the shared direction m."""
    from attn_cli.core.attention import run_head
    from attn_cli.vectors.words import is_content

    plain = value_map(1.0, vectors)  # [d, d]
    contexts, targets = [], []
    for tokens in corpus_sentences(vectors):
        if len(tokens) <= CORPUS_MIN_SEEN:
            continue
        words = np.stack([vectors.get_vector(t) for t in tokens]).astype(np.float64)  # [n, d]
        e = input_embeddings(words)  # [n, d]
        for mask in MASKS:
            w = run_head(e, head, allowed_keys(Mask(mask), len(tokens))).weights  # [n, n]
            for i, t in enumerate(tokens):
                seen = len(tokens) - 1 if mask == Mask.none else i
                if is_content(t) and seen >= CORPUS_MIN_SEEN:
                    contexts.append(w[i] @ e)  # [d]
                    y = words[i] @ plain
                    targets.append(y / np.linalg.norm(y))
    return np.array(contexts), np.array(targets)


def corpus_value_map(head: Head, vectors) -> tuple[np.ndarray, dict]:  # -> [d, d]
    """C: the map that best predicts a content word of running text from what the head gathers around
    it (see corpus_rows): C minimises sum |c C - y|^2 + CORPUS_RIDGE |C|^2 (closed form), so c C points
    at the words that fit such a context (after "carbon" and "dioxide", at chemistry). C is then scaled
    so that its updates have the mean size of (I - m m^T)'s over the same rows."""
    c, y = corpus_rows(head, vectors)  # [r, d] each
    fitted = np.linalg.solve(c.T @ c + CORPUS_RIDGE * np.eye(c.shape[1]), c.T @ y)  # [d, d]
    fitted *= np.mean(np.linalg.norm(c @ value_map(1.0, vectors), axis=1)) / np.mean(np.linalg.norm(c @ fitted, axis=1))
    return fitted, {"file": f"gensim/test/test_data/{CORPUS}", "sha256": CORPUS_SHA256, "rows": len(c), "ridge": CORPUS_RIDGE}


def best_on_dev(heads: dict, adjective, vectors, alone: bool = False) -> tuple[object, list]:
    """The candidate head that resolves most dev sense cases (mean of both masks) among those that keep
    the dev words' mean cos(E, E') >= MIN_COSINE under both masks (with `alone`, also the mean cos of
    the words that have no content word before them, under the causal mask, >= MIN_ALONE_COSINE);
    ties: the first. -> (key, every figure)."""
    cases_file, words_file = SETS["senses_dev"]
    tried = {}
    for key, head in heads.items():
        figures = sense_figures([adjective, head], cases_file, words_file, vectors)
        tried[key] = {"after": float(np.mean([figures[m]["heads"]["after"] for m in figures])),
                      "mean_cos": float(min(figures[m]["heads"]["mean_cos"] for m in figures))}
        if alone:
            tried[key]["alone_cos"] = alone_cosine([adjective, head], cases_file, vectors)

    def keeps(k):
        return tried[k]["mean_cos"] >= MIN_COSINE and (not alone or tried[k]["alone_cos"] >= MIN_ALONE_COSINE)

    allowed = [k for k in heads if keeps(k)] or list(heads)[:1]
    return max(allowed, key=lambda k: round(tried[k]["after"], 6)), [{"key": k, **v} for k, v in tried.items()]


def alone_figures(adjective, context, cases_file, vectors) -> dict:
    """alone_cosine for the heads as shipped and for the same heads without the context head's sink."""
    out = {"heads": alone_cosine([adjective, context], cases_file, vectors)}
    if context.sink is not None:
        out["without_sink"] = alone_cosine([adjective, without_sink(context)], cases_file, vectors)
    return out


def alone_cosine(heads, cases_file, vectors) -> float:
    """Mean cos(E, E') of the sense cases' words under the causal mask when no content word comes before
    them (their context is after): the heads have nothing to write, and the word should stay itself."""
    from attn_cli.analysis.inspect import inspect_text
    from attn_cli.models.glove import Settings
    from attn_cli.vectors.words import is_content

    cosines = []
    for case in sense_eval.parse_sense_cases(cases_file.read_text(encoding="utf-8").splitlines(), str(cases_file)):
        result = inspect_text(case.sentence, vectors, heads, Settings(mask=Mask.causal))
        i = result.tokens.index(case.word)
        if not any(is_content(t) for t in result.tokens[:i]):
            e, after = result.e[i], result.e_prime[i]
            cosines.append(float(e @ after / (np.linalg.norm(e) * np.linalg.norm(after))))
    return float(np.mean(cosines))


def build_context(vectors, adjective, scales=CONTEXT_VALUE_SCALES, betas=CONTEXT_RARITY, self_costs=CONTEXT_SELF_COSTS,
                  mixes=CORPUS_MIXES, ridges=VALUE_RIDGES, steps=VALUE_STEPS, sink_ranks=SINK_RANKS, boosts=SINK_BOOSTS):
    """The rarity key; beta and the cost on the query itself, chosen on the dev sense set with W_V =
    s (I - m m^T); the corpus map C under that key; then mu and s of W_V = s (mu C + (1 - mu) (I - m m^T)),
    chosen on dev by the same rule (see best_on_dev); then the sink and the factor k on that W_V that
    comes with it, by the same rule with one more bar: words with nothing before them stay themselves.
    Last, W_V is trained on the dev cases' sense margins, starting from and pulled toward k W_V
    (see train_value_map), or left as it is when cross-validation says training does not help words
    it has not seen."""
    rarity = rarity_key(vectors)
    plain = value_map(1.0, vectors)
    # smaller updates first, so that a tie goes to the smaller update
    keys = sorted(itertools.product(betas, self_costs, scales), key=lambda k: (k[2], -k[0], -k[1]))
    (b, c, _), tried = best_on_dev({k: context_head(rarity, k[0], k[1], k[2] * plain) for k in keys}, adjective, vectors)
    corpus, corpus_data = corpus_value_map(context_head(rarity, b, c, plain), vectors)
    mixed = {(mu, s): mixed_value_map(corpus, mu, s, vectors) for s in sorted(scales) for mu in mixes}
    (mu, s), mix_tried = best_on_dev({k: context_head(rarity, b, c, w) for k, w in mixed.items()}, adjective, vectors)
    sinks = {(k, r): context_head(rarity, b, c, k * mixed[(mu, s)], r) for k in sorted(boosts) for r in sink_ranks}  # smaller updates first
    (k, r), sink_tried = best_on_dev(sinks, adjective, vectors, alone=True)
    choice = {"beta": b, "self_cost": c, "scale": s, "mix": mu, "boost": k, "sink_rank": r, "sink": sinks[(k, r)].sink,
              "min_cosine": MIN_COSINE, "min_alone_cosine": MIN_ALONE_COSINE,
              "tried": [{"beta": t["key"][0], "self_cost": t["key"][1], "scale": t["key"][2], "after": t["after"], "mean_cos": t["mean_cos"]} for t in tried],
              "mix_tried": [{"mix": t["key"][0], "scale": t["key"][1], "after": t["after"], "mean_cos": t["mean_cos"]} for t in mix_tried],
              "sink_tried": [{"boost": t["key"][0], "sink_rank": t["key"][1], "after": t["after"], "mean_cos": t["mean_cos"], "alone_cos": t["alone_cos"]}
                             for t in sink_tried]}
    start = sinks[(k, r)]
    cases_file, words_file = SETS["senses_dev"]
    w_v, training_data = train_value_map(sense_margins(adjective, start, cases_file, words_file, vectors), start.w_v, ridges, steps)
    return with_w_v(start, w_v), {"value_choice": choice, "value_training": training_data, "rarity_words": len(vectors.vectors),
                                  "corpus": corpus_data}


def with_w_v(head: Head, w_v: np.ndarray) -> Head:
    """The same head (a new object) with another value map."""
    return Head(head.name, head.w_q, head.w_k, w_v, b_q=head.b_q, distance=head.distance, sink=head.sink)


def plain_value_map(context: Head, scale: float, vectors) -> Head:
    """The context head with W_V = s (I - m m^T): a context word's own vector, without the corpus map or training."""
    return with_w_v(context, value_map(scale, vectors))


def mixed_value_map(corpus: np.ndarray, mix: float, scale: float, vectors) -> np.ndarray:  # [d, d] -> [d, d]
    """W_V = s (mu C + (1 - mu) (I - m m^T)): what the corpus says fits the context, and the context itself."""
    return scale * (mix * corpus + (1.0 - mix) * value_map(1.0, vectors))


def start_value_map(context: Head, choice: dict, vectors) -> Head:
    """The context head with W_V as its training on the dev cases starts (the corpus map is recomputed:
    it depends on the head's attention only)."""
    corpus, _ = corpus_value_map(without_sink(context), vectors)  # C was fitted before the sink was chosen
    return with_w_v(context, choice["boost"] * mixed_value_map(corpus, choice["mix"], choice["scale"], vectors))


def without_sink(head: Head) -> Head:
    """The same head (a new object) with no sink."""
    return Head(head.name, head.w_q, head.w_k, head.w_v, b_q=head.b_q, distance=head.distance)


def sense_margins(adjective, context, cases_file, words_file, vectors) -> dict:
    """What the context head's W_V is trained on: for each case of the set under each mask, the word's
    E plus the adjective head's update (a), its context as the head sees it (c = sum_j w_ij E_j, so the
    head's update is c W_V) and, for each other sense, the difference of the centroids (g = intended -
    other). E' = a + c W_V is nearer the intended sense than the other exactly when g . E' > 0.
    {"a", "c", "g": [r, d], "case": [r] (an index into "e" and "word"), "mask": [r], "e": [n, d], "word": [n]}"""
    from attn_cli.analysis.inspect import inspect_text
    from attn_cli.models.glove import Settings

    cases, senses = sense_cases(cases_file, words_file, vectors)
    rows = {"a": [], "c": [], "g": [], "case": [], "mask": [], "e": [], "word": []}
    for mask in MASKS:
        for case in cases:
            if mask == Mask.causal and not case.context_before:
                continue
            result = inspect_text(case.sentence, vectors, [adjective, context], Settings(mask=Mask(mask)))
            i = result.tokens.index(case.word)
            names, centroids = senses[case.word]
            t = names.index(case.sense)
            for other in range(len(names)):
                if other != t:
                    rows["a"].append(result.e[i] + result.heads[0].delta[i])  # [d]
                    rows["c"].append(result.heads[1].weights[i] @ result.e)  # [n] x [n, d] -> [d]
                    rows["g"].append(centroids[t] - centroids[other])  # [d]
                    rows["case"].append(len(rows["e"]))
                    rows["mask"].append(mask)
            rows["e"].append(result.e[i])
            rows["word"].append(case.word)
    return {k: np.array(v) for k, v in rows.items()}


def fit_sense_value_map(rows, prior: np.ndarray, ridge: float, steps: int = VALUE_STEPS) -> np.ndarray:  # -> [d, d]
    """W_V that minimises the mean logistic loss of the sense margins g . (a + c W_V), measured in units
    of their spread under the prior, plus ridge * |W_V - prior|^2: the update moves each word toward the
    sense its context selects, and stays near the prior where the cases say nothing. Adam, full batch,
    from the prior: deterministic."""
    a, c, g = rows["a"], rows["c"], rows["g"]  # [r, d] each
    base = np.einsum("rd,rd->r", g, a + c @ prior)  # [r] margins under the prior
    unit = 1.0 / np.std(base)
    change = np.zeros_like(prior)  # [d, d]: W_V - prior
    m1, m2 = np.zeros_like(change), np.zeros_like(change)
    for t in range(1, steps + 1):
        margin = base + np.einsum("rd,rd->r", c @ change, g)  # [r]
        slope = -unit / (1.0 + np.exp(unit * margin))  # [r] d loss / d margin
        grad = (c * slope[:, None]).T @ g / len(g) + 2 * ridge * change  # [d, r] x [r, d] -> [d, d]
        m1 = 0.9 * m1 + 0.1 * grad
        m2 = 0.999 * m2 + 0.001 * grad**2
        change -= VALUE_LEARNING_RATE * (m1 / (1 - 0.9**t)) / (np.sqrt(m2 / (1 - 0.999**t)) + 1e-8)
    return prior + change


def value_map_figures(rows, w_v: np.ndarray, cases: np.ndarray) -> dict:
    """{mask: {"after": share of the cases resolved, "mean_cos": mean cos(E, E')}} for the given case indices."""
    out = {}
    for mask in MASKS:
        picked = np.isin(rows["case"], cases) & (rows["mask"] == mask)
        if not picked.any():
            continue
        case = rows["case"][picked]
        after = rows["a"][picked] + rows["c"][picked] @ w_v  # [r, d]: E' of each row's case
        ok = np.einsum("rd,rd->r", rows["g"][picked], after) > 0  # [r]
        seen, first = np.unique(case, return_index=True)  # the cases, and one row (one E') of each
        failed = np.unique(case[~ok])  # a case is resolved when every other sense's margin is positive
        e, e_after = rows["e"][seen], after[first]
        cos = np.einsum("rd,rd->r", e, e_after) / (np.linalg.norm(e, axis=1) * np.linalg.norm(e_after, axis=1))
        out[mask] = {"after": float(np.mean(~np.isin(seen, failed))), "mean_cos": float(np.mean(cos)), "cases": len(seen)}
    return out


def train_value_map(rows, prior: np.ndarray, ridges=VALUE_RIDGES, steps: int = VALUE_STEPS) -> tuple[np.ndarray, dict]:
    """Choose the ridge by cross-validation over the dev *words* (each group of words is predicted by a
    map trained on the other words' cases, so the figure is for words the map has not seen), then
    train on every dev case. The choice: the most cases resolved (mean of both masks) among the ridges
    whose mean cos(E, E') stays >= MIN_VALUE_COSINE; ties: the larger ridge. A ridge of None leaves the
    prior as it is (no training): chosen when training does not help the words it has not seen."""
    def fit(train, ridge):
        return prior if ridge is None else fit_sense_value_map(train, prior, ridge, steps)

    def pull(ridge):  # None pulls hardest
        return math.inf if ridge is None else ridge

    words = sorted(set(rows["word"].tolist()))
    np.random.default_rng(SEED + 4).shuffle(words)
    folds = [words[k::VALUE_FOLDS] for k in range(VALUE_FOLDS)]
    tried = []
    for ridge in ridges:
        pooled = {mask: {"after": 0.0, "mean_cos": 0.0, "cases": 0} for mask in MASKS}
        for fold in folds:
            held = np.flatnonzero(np.isin(rows["word"], fold))  # case indices of this group's words
            train = {k: v[~np.isin(rows["case"], held)] for k, v in rows.items() if k not in ("e", "word")}
            for mask, f in value_map_figures(rows, fit(train, ridge), held).items():
                for k in ("after", "mean_cos"):
                    pooled[mask][k] += f[k] * f["cases"]
                pooled[mask]["cases"] += f["cases"]
        tried.append({"ridge": ridge, **{mask: {k: p[k] / p["cases"] for k in ("after", "mean_cos")} for mask, p in pooled.items()}})
    allowed = [t for t in tried if min(t[m]["mean_cos"] for m in MASKS) >= MIN_VALUE_COSINE] or [max(tried, key=lambda t: pull(t["ridge"]))]
    best = max(allowed, key=lambda t: (round(float(np.mean([t[m]["after"] for m in MASKS])), 6), pull(t["ridge"])))
    every_case = np.arange(len(rows["e"]))
    w_v = fit(rows, best["ridge"])
    return w_v, {"ridge": best["ridge"], "folds": VALUE_FOLDS, "steps": steps, "min_cosine": MIN_VALUE_COSINE, "tried": tried,
                 "dev_untrained": value_map_figures(rows, prior, every_case), "dev_trained": value_map_figures(rows, w_v, every_case)}


def value_map_references(adjective, context, start: Head, scale: float, sense_set, vectors) -> dict:
    """What each step of the value map adds, on one sense set: the same heads with W_V = s (I - m m^T)
    ("plain_value_map") and with W_V as its dev training starts ("start_value_map", see start_value_map),
    and even attention over the content words through the shipped W_V. {mask: {reference: figures}}"""
    out = {mask: {} for mask in MASKS}
    for mask, share in even_through_value_map(adjective, context, *sense_set, vectors).items():
        out[mask]["even_content_value_map"] = {"after": share}
    for name, head in (("plain_value_map", plain_value_map(context, scale, vectors)), ("start_value_map", start)):
        for mask, f in sense_figures([adjective, head], *sense_set, vectors).items():
            out[mask][name] = {k: f["heads"][k] for k in ("after", "mean_cos")}
    return out


def measure(adjective, context, data, vectors) -> dict:
    """Every shipped figure: the adjective head on the link sets, both heads on the sense sets."""
    adjective_metrics = {name: link_figures([adjective], SETS[name][0], vectors) for name in ("natural", "long", "natural3", "dev")}
    adjective_metrics["natural3_long"] = link_figures([adjective], long_links(SETS["natural3"][0]), vectors)
    adjective_metrics["unseen_words"] = link_figures([adjective], sentence_links(data["adjective"]["unseen"]), vectors)
    context_metrics = {name: sense_figures([adjective, context], *SETS[name], vectors) for name in SENSE_SETS}
    choice = data["context"]["value_choice"]
    start = start_value_map(context, choice, vectors)  # the corpus map is fitted once
    for name in SENSE_SETS:
        for mask, f in value_map_references(adjective, context, start, choice["scale"] * choice["boost"], SETS[name], vectors).items():
            context_metrics[name][mask].update(f)
        context_metrics[name]["alone"] = alone_figures(adjective, context, SETS[name][0], vectors)
    for key in ("value_choice", "value_training", "corpus"):
        context_metrics[key] = data["context"][key]
    return {"adjective": adjective_metrics, "context": context_metrics}


# --- files --------------------------------------------------------------------------------------


ADJECTIVE_DESCRIPTION = "nouns attend to their own adjectives, the nearest adjective-like words before them; other tokens mostly to the token before"
CONTEXT_DESCRIPTION = "every token attends to the most specific (rarest) other words of the sentence and moves toward what they mean, so an ambiguous word toward the sense its context selects"


def adjective_summary(m) -> str:
    n, long, third = (m[name]["causal"]["adjective"] for name in ("natural", "long", "natural3"))
    return (f"hand-written held-out sentences: top non-self key an own adjective {n['top_on_key']:.3f} "
            f"(long sentences {long['top_on_key']:.3f}; a third set, written blind, {third['top_on_key']:.3f}), "
            f"mean weight on own adjectives {n['key_weight']:.3f}")


def context_summary(m) -> str:
    c, n = m["senses"]["causal"]["heads"], m["senses"]["none"]["heads"]
    others = "; ".join(f"{HELDOUT_SENSES[name].removeprefix('held-out, ')} {m[name]['causal']['heads']['after']:.3f} and "
                       f"{m[name]['none']['heads']['after']:.3f} (before: {m[name]['causal']['heads']['before']:.3f}, "
                       f"{m[name]['none']['heads']['before']:.3f})" for name in list(HELDOUT_SENSES)[1:])
    return (f"hand-written held-out sense cases: E' nearer the intended sense {c['after']:.3f} causal, "
            f"{n['after']:.3f} mask none (E before: {c['before']:.3f}, {n['before']:.3f}); {others}")


def head_meta(name, description, metrics, summary) -> dict:
    return {"name": name, "description": description, "trained": True, "metrics": metrics,
            "summary": summary, "seed": SEED, "steps": 0, "built_by": "data/heads/build_heads.py"}


def link_table(m, sets=("natural", "long", "natural3", "natural3_long", "unseen_words", "dev")) -> str:
    labels = {"natural": "natural sentences", "long": "long sentences (25-40 tokens)", "natural3": "third set, written blind (9-38 tokens)",
              "natural3_long": f"third set, its sentences of {LONG_TOKENS}+ tokens",
              "unseen_words": "grammar sentences, words never trained on", "dev": "dev set (tuning)"}
    lines = ["| set | mask | pattern | top non-self key is an own adjective | own adjectives exactly the top keys | mean weight on own adjectives | other tokens' weight on themselves | nouns |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in sets:
        for mask in MASKS:
            for name, r in m[s][mask].items():
                bold = "**" if r["kind"] == "head" else ""
                lines.append(f"| {labels[s]} | {mask} | {bold}{name}{bold} | {bold}{r['top_on_key']:.3f}{bold} | "
                             f"{r['exact_top']:.3f} | {r['key_weight']:.3f} | {r['others_on_self']:.3f} | {r['queries']} |")
    return "\n".join(lines)


def sense_table(m, sets=SENSE_SETS) -> str:
    labels = {**HELDOUT_SENSES, "senses_dev": "dev (tuning)"}
    names = {"heads": "**adjective + context**", "start_value_map": "adjective + context, W_V before its dev training (s (mu C + (1 - mu) (I - m m^T)))",
             "plain_value_map": "adjective + context, W_V = s (I - m m^T) (no corpus map, no training)", "identity": "identity head", "even_content": "even over other content words",
             "even_all": "even over all other tokens", "even_content_value_map": "even over other content words, through the context head's W_V"}
    lines = ["| set | mask | pattern | nearer the intended sense: E | E' | mean cos(E, E') | mean \\|ΔE\\|/\\|E\\| | cases |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in sets:
        for mask in MASKS:
            f = m[s][mask]
            for name, label in names.items():
                r = f[name]
                after = f"**{r['after']:.3f}**" if name == "heads" else f"{r['after']:.3f}"
                if name == "even_content_value_map":  # only the share is measured for this one
                    lines.append(f"| {labels[s]} | {mask} | {label} | {f['heads']['before']:.3f} | {after} | | | {f['cases']} |")
                    continue
                if name in ("start_value_map", "plain_value_map"):  # the share and the cosine
                    lines.append(f"| {labels[s]} | {mask} | {label} | {f['heads']['before']:.3f} | {after} | {r['mean_cos']:.3f} | | {f['cases']} |")
                    continue
                lines.append(f"| {labels[s]} | {mask} | {label} | {r['before']:.3f} | {after} | {r['mean_cos']:.3f} | "
                             f"{r['mean_delta_ratio']:.2f} | {f['cases']} |")
    return "\n".join(lines)


def adjective_reading(m) -> str:
    """What the table says, in words, from the figures themselves."""
    n, long = m["natural"]["causal"], m["long"]["causal"]
    head, prev = n["adjective"], n["previous"]
    more = lambda f: "more" if f["adjective"]["exact_top"] > f["previous"]["exact_top"] else "less"  # noqa: E731
    return (f"In natural sentences an adjective nearly always stands right before its noun, so the previous token "
            f"alone puts the top weight on an own adjective for {prev['top_on_key']:.3f} of nouns; the head does for "
            f"{head['top_on_key']:.3f} ({long['adjective']['top_on_key']:.3f} in long sentences, against "
            f"{long['previous']['top_on_key']:.3f}). The head gives all of a noun's adjectives the top weights {more(n)} often "
            f"than the previous token in the natural set ({head['exact_top']:.3f} against {prev['exact_top']:.3f}) and "
            f"{more(long)} often in long sentences ({long['adjective']['exact_top']:.3f} against "
            f"{long['previous']['exact_top']:.3f}, where most nouns have one adjective). Other tokens keep "
            f"{'more' if head['others_on_self'] > prev['others_on_self'] else 'less'} weight on themselves than the previous token does "
            f"({head['others_on_self']:.3f} against {prev['others_on_self']:.3f}): the head charges every token for attending to itself. "
            "A single head over static vectors sees each key's own word and position, not the words in between: it finds "
            "a noun's adjectives because they are the nearest adjective-like words before it, and it misses where a word's "
            "vector reads as another part of speech.")


def adjective_card(meta, data) -> str:
    m, c, shape, cls = meta["metrics"], data["config"], data["shape"], data["classifier"]
    return f"""# `adjective` head

Each noun attends to its own adjectives, the ones of its noun phrase before it ("creature" to
"fluffy" and "blue", "forest" to "verdant", not "creature"'s adjectives); a token that is no noun
goes mostly to the token before it. Its value map moves the noun toward its adjectives' meaning. How far it
gets on sentences unlike its training data is below, beside patterns that know nothing of
adjectives. A small head over static GloVe 6B 50d vectors (plus the positional encoding `inspect`
adds) to show the lesson's mechanism: it is **not** a head taken from a trained transformer.

- Shapes: W_Q, W_K [50, {ADJECTIVE_D_K}], a query bias b_Q [{ADJECTIVE_D_K}], W_V [50, 50] (no W_O), and three
  distance costs: a key k tokens before the query loses {shape['beta'] / shape['temperature']:.3g} k from its scaled score, a key after
  it {AFTER_FACTOR * shape['beta'] / shape['temperature']:.3g} k (ALiBi, Press et al. 2022), and the query itself {shape['self'] / shape['temperature']:.3g} (a relative bias at
  offset 0, as T5 learns one). Seed {c.seed}.
- Built by `python data/heads/build_heads.py` (rebuilds this file; `--check` compares).
- How: two linear classifiers of a token's E (word vector plus position) are fitted on
  {cls['words']:,} training words ({cls['adjectives']:,} adjectives, {cls['nouns']:,} nouns, verbs, adverbs and
  function words from `pos_words.tsv`, `lexicon.tsv` and the grammar in `sentences.py`, each at
  {POSITION_COPIES} random positions): a(x), how adjective-like (logistic regression, classes weighted
  equally), and n(x), how noun-like (ridge regression). Q and K are built so that the scaled score of
  query i and key j is [{shape['alpha']:g} ({shape['bias']:g} + n_i) a_j - {shape['gamma']:g} n_i n_j - distance costs] / {shape['temperature']:g}:
  a noun wants the nearest adjectives before it and no other noun (itself included). The b_Q bias is
  what lets "{shape['bias']:g} a_j" count for every query. A token that is no noun (n near 0) is left
  with the distance costs and goes mostly to the token before it.
- The numbers of that shape were chosen on the dev set alone ({len(data['tried'])} candidates): the
  most nouns whose own adjectives are exactly their top keys, among those that keep the mean weight on
  own adjectives at least {MIN_KEY_WEIGHT}; then the temperature (which keeps the ranking) whose noun rows
  are nearest, by cross-entropy, to even weight over their own adjectives. Hand-written words count
  {HAND_WEIGHT:g} times a lexicon word in the classifiers.
- {HELDOUT_SHARE:.0%} of the lexicon's adjectives and nouns are held out of everything (the "words never
  trained on" rows).
- W_V by ridge regression over {len(data['train'])} grammar sentences (`adjective_train.tsv`, the links format
  of `attn heads train`), so a noun's update is about {c.value_scale} times the mean of its adjectives' vectors.

## Measured

Held-out sets written by hand, unlike the grammar: `eval/adjectives_natural.tsv`,
`eval/adjectives_long.tsv` and `eval/adjectives_natural3.tsv`, written blind after the head was
built (its sentences of {LONG_TOKENS} tokens or more are also measured apart). Nothing was chosen on them. `dev/adjectives.tsv` is the development
set. Beside the head, the same figures for three patterns that know nothing of adjectives:
all weight on the previous token, even weight over the visible tokens, and the identity head.
Recompute any row with `attn heads eval FILE --head adjective [--mask none]`.

{link_table(m)}

{adjective_reading(m)}
"""


def context_reading(m) -> str:
    """What the table says, in words, from the figures themselves."""
    sets = list(HELDOUT_SENSES)

    def pair(name, key):  # causal and none of one set
        return f"{m[name]['causal'][key]['after']:.3f} and {m[name]['none'][key]['after']:.3f}"

    def figures(key):  # the first set's pair, then the others' in parentheses
        return f"{pair(sets[0], key)} ({'; '.join(pair(name, key) for name in sets[1:])})"

    c, n = m["senses"]["causal"], m["senses"]["none"]
    first, dev = (set(read_sense_set(SETS[name][1])) for name in ("senses", "senses_dev"))
    bar = 0.9
    short = [f"{HELDOUT_SENSES[name]} ({mask}) {m[name][mask]['heads']['after']:.3f}" for name in sets for mask in MASKS
             if m[name][mask]["heads"]["after"] < bar]
    verdict = (f"Below the {bar} we set for it: {'; '.join(short)}." if short else f"Every held-out figure is at least {bar}.")
    return (f"Before the heads, the ambiguous word is nearer its intended sense in {c['heads']['before']:.3f} of the cases "
            f"(its vector leans to one sense whatever the sentence); after them in {c['heads']['after']:.3f} (causal) and "
            f"{n['heads']['after']:.3f} (`--mask none`) on the first set, which shares {len(first & dev)} of its {len(first)} words with the "
            f"development set (in other sentences), and in {'; '.join(pair(name, 'heads') for name in sets[1:])} on the "
            f"other sets, whose words appear in no other set. Even attention over the other content words, with an update of "
            f"the same size, reaches {figures('even_content')}; over all other tokens {c['even_all']['after']:.3f} and {n['even_all']['after']:.3f}; "
            f"the identity head {c['identity']['after']:.3f} and {n['identity']['after']:.3f}. Most of the gain over those comes from "
            f"the value map. With W_V = s (I - m m^T) alone, which only drops the direction every word shares, the same heads reach "
            f"{figures('plain_value_map')}; with the corpus map mixed in, before any training on sense cases, "
            f"{figures('start_value_map')}. Even attention over the "
            f"content words through the shipped map reaches {figures('even_content_value_map')}; the rarity key finds the content words without a word list, "
            f"and `attn heads eval --cases` shows what each word pulled: in most misses the context pulls the right way, but not far "
            f"enough against a vector that leans to the other sense; in the rest one word pulls the wrong way. "
            f"{verdict} The update is large (mean |ΔE|/|E| "
            f"{c['heads']['mean_delta_ratio']:.1f}), and the word keeps its identity only as far as a mean cos(E, E') of "
            f"{c['heads']['mean_cos']:.2f} says.")


def sink_text(m) -> str:
    """The card's account of the sink, from the figures."""
    choice = m["value_choice"]
    if choice["sink_rank"] is None:
        return (f"No sink: on the dev set the candidate without one came first (see `sink_tried` in the metrics: the bars are "
                f"mean cos(E, E') >= {choice['min_cosine']}, and >= {choice['min_alone_cosine']} for words with no content word before them).")
    alone = {name: m[name]["alone"] for name in SENSE_SETS}
    held = "; ".join(f"{alone[name]['heads']:.2f} (without the sink {alone[name]['without_sink']:.2f})" for name in HELDOUT_SENSES)
    return (f"A sink: one more key that every query sees and that writes nothing (its value is 0), scored "
            f"{choice['sink']:.3g}, as a word of frequency rank {choice['sink_rank']:,} would. Where nothing rarer comes before a "
            f"word (the first words of a sentence under the causal mask), most of its weight goes there and the word\n"
            f"  stays itself instead of taking in \"the\" or \"a\"; real models do the same with a first or special token. "
            f"Chosen on dev with a factor k = {choice['boost']:g} on W_V ({len(choice['sink_tried'])} candidates): the one that resolves most dev cases\n"
            f"  among those that keep the ambiguous words' mean cos(E, E') >= {choice['min_cosine']} and that of the dev words with no\n"
            f"  content word before them >= {choice['min_alone_cosine']} ({alone['senses_dev']['heads']:.2f}; without the sink "
            f"{alone['senses_dev']['without_sink']:.2f}). On the held-out sets: {held}.")


def context_card(meta, data) -> str:
    m = meta["metrics"]
    choice, training, corpus = m["value_choice"], m["value_training"], m["corpus"]
    allowed = [t for t in choice["tried"] if t["mean_cos"] >= choice["min_cosine"]]
    step1 = max(allowed, key=lambda t: t["after"] if (t["beta"], t["self_cost"]) == (choice["beta"], choice["self_cost"]) else -1)
    best_per_mix = {}
    for t in choice["mix_tried"]:
        best = best_per_mix.setdefault(t["mix"], None)
        if t["mean_cos"] >= choice["min_cosine"] and (best is None or t["after"] > best["after"]):
            best_per_mix[t["mix"]] = t
    mixes = ", ".join(f"mu = {mu:g}: {t['after']:.3f} (s = {t['scale']:g}, cos {t['mean_cos']:.2f})" if t else
                      f"mu = {mu:g}: no s keeps cos >= {choice['min_cosine']}" for mu, t in best_per_mix.items())
    ridge = lambda r: "none (left as it starts)" if r is None else f"{r:g}"  # noqa: E731
    cross = "; ".join(f"lambda = {ridge(t['ridge'])}: {t['causal']['after']:.3f} / {t['none']['after']:.3f} "
                      f"(cos {t['causal']['mean_cos']:.2f} / {t['none']['mean_cos']:.2f})" for t in training["tried"])
    return f"""# `context` head

Every token attends to the most specific words of the sentence: the rare ones, which carry its
topic ("biopsy", "carbon", "river"), not "the", "of" or punctuation. The value map writes what
they mean into the token, so an ambiguous word's E' moves toward the sense its context selects
("take a biopsy of the mole" -> skin; "one mole of carbon dioxide" -> chemistry with `--mask none`,
where the word sees what follows it). A small head built on static GloVe 6B 50d vectors to show
the mechanism: it is **not** a head taken from a trained transformer.

- The query is the same for every token (W_Q = 0, b_Q = {choice['beta']:g}): every word asks "which of you is
  the most specific?". The key is a learned rarity score, u . E_j: a ridge regression of
  log(frequency rank + {RANK_OFFSET:g}) on the vectors of all {data['rarity_words']:,} keys (GloVe lists its keys by
  frequency), fitted at random positions as a head sees them. So the scaled score of key j is
  {choice['beta']:g} u . E_j whatever the query, less {choice['self_cost']:g} on the query itself: a word takes its
  meaning from the others, not from a copy of itself.
- {sink_text(m)}
- Shapes: W_Q, W_K [50, 1], b_Q [1], W_V [50, 50] (no W_O), and the sink's score. Built by
  `python data/heads/build_heads.py` (rebuilds this file; `--check` compares).
- W_V is built in three steps; the table below measures each.
  1. s (I - m m^T), where m is the unit mean of the {MEAN_WORDS:,} most frequent word vectors: a
     context word's vector without the direction that every GloVe vector shares, which says
     nothing about a sense. beta and the cost on the query itself were chosen with it on the dev set
     (`dev/senses.tsv`, {len(choice['tried'])} candidates with s), as the choice that resolves most dev cases
     while the mean cos(E, E') of the ambiguous word stays >= {choice['min_cosine']} ({step1['after']:.3f} of the dev cases).
  2. The corpus map C, fitted on running text: the Lee background corpus (Lee, Pincombe and Welsh
     2005; 300 news articles, as every gensim wheel ships it in `{corpus['file']}`, SHA-256
     `{corpus['sha256'][:16]}...`). For each content word of the corpus under both masks
     ({corpus['rows']:,} rows), c is what this head gathers around it and the target is the word's unit
     vector without m; C is the ridge least-squares map from c to the target (closed form,
     ridge {corpus['ridge']:g}), scaled to the size of (I - m m^T)'s updates. So c C points at the words
     that fit such a context: no sense labels, and nothing from the dev or held-out sets. W_V =
     s (mu C + (1 - mu) (I - m m^T)), with mu = {choice['mix']:g} and s = {choice['scale']:g} chosen on dev by the same rule
     (the best dev figure for each mu: {mixes}).
  3. Training on the dev cases: for each case and each other sense, the margin g . E' between
     the intended sense's centroid and the other's (g = intended - other, E' = E + the adjective
     head's update + the context head's), through a logistic loss, plus lambda |W_V - W_start|^2,
     so it stays near its start where the cases say nothing (Adam, {training['steps']} steps, full batch).
     lambda = {ridge(training['ridge'])} was chosen by {training['folds']}-fold cross-validation over the dev *words*: each
     group of words is resolved by a map trained on the other words' cases, so the figure is for
     words the map has never seen. The choice resolves most of them while their mean cos(E, E')
     stays >= {training['min_cosine']}: {cross}. On the dev cases themselves the shipped map resolves
     {training['dev_trained']['causal']['after']:.3f} (causal) and {training['dev_trained']['none']['after']:.3f} (none), against {training['dev_untrained']['causal']['after']:.3f} and {training['dev_untrained']['none']['after']:.3f} before this step.
  The update is large: the word keeps its identity (cos(E, E') above 0.5) but leans strongly on
  its context. Function words are no exception: they too take in the sentence's rarest words,
  and their E' lands near them ("of" in "Take a biopsy of the mole." ends nearest "biopsy").

## Measured

A case counts when the ambiguous word is nearer (mean cosine with the probe words of
`sense_words.tsv`) to the intended sense than to every other, before the heads (E) and after
them (E'), with both default heads running as `inspect` runs them. "causal" uses the sentences
whose selecting words come before the word; "none" all of them. The held-out sets,
`eval/senses_natural.tsv` (26 words), `eval/senses_natural2.tsv` (12 other words) and
`eval/senses_natural3.tsv` (12 more, written after this head was built), are written
by hand, their sentences contain none of the probe words, and nothing was chosen on them. The
even-attention references get an update scaled to the same mean size as the heads'; the last
reference of each block uses the context head's own W_V instead. The second and third rows of
each block are the same heads with W_V as it was before step 3, and before steps 2 and 3. Recompute with
`attn heads eval data/heads/eval/senses_natural.tsv --sense-set data/heads/eval/sense_words.tsv
[--mask none]` (and `senses_natural2.tsv` with `sense_words2.tsv`, `senses_natural3.tsv` with `sense_words3.tsv`).

{sense_table(m)}

{context_reading(m)}
"""


def write_links(path, sentences, header):
    rows = [f"{link.sentence}\t{link.query}\t{link.key}" for link in sentence_links(sentences)]
    path.write_text("\n".join([header, "sentence\tquery\tkey"] + rows) + "\n", encoding="utf-8")


def build_all(vectors):
    adjective, adj_data = build_adjective(vectors)
    context, ctx_data = build_context(vectors, adjective)
    data = {"adjective": adj_data, "context": ctx_data}
    metrics = measure(adjective, context, data, vectors)
    adj_meta = head_meta("adjective", ADJECTIVE_DESCRIPTION, metrics["adjective"], adjective_summary(metrics["adjective"]))
    ctx_meta = head_meta("context", CONTEXT_DESCRIPTION, metrics["context"], context_summary(metrics["context"]))
    return {"adjective": (adjective, adj_meta, adj_data), "context": (context, ctx_meta, ctx_data)}


CHECK_RTOL = 1e-9  # of the array's largest entry: BLAS kernels add in different orders (2.9e-13 seen between two), a real change is far larger


def check(built) -> bool:
    """Compare a rebuild with the shipped files, array by array: each within CHECK_RTOL of the shipped array's scale.

    Not bit for bit: the build multiplies and sums through BLAS, and OpenBLAS chooses its kernel by
    CPU (and OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS), so the last bits of a float64 may differ from
    one machine to the next, on the same code and data.
    """
    from attn_cli.heads.registry import load_head

    ok = True
    print(f"tolerance: max |rebuilt - shipped| <= {CHECK_RTOL:.0e} x max |shipped| per array")
    for name, (head, _, _) in built.items():
        shipped = load_head(HERE / f"{name}.npz", head.w_q.shape[0])
        for key in ("w_q", "w_k", "w_v", "b_q", "distance", "sink"):
            mine, theirs = getattr(head, key), getattr(shipped, key)
            if mine is None or theirs is None:
                print(f"{name} {key}: {'absent' if mine is None else 'present'} in the rebuild, {'absent' if theirs is None else 'present'} in the shipped file")
                ok &= mine is None and theirs is None
                continue
            mine, theirs = np.asarray(mine, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
            if mine.shape != theirs.shape:
                print(f"{name} {key}: shape {list(mine.shape)} rebuilt, {list(theirs.shape)} shipped")
                ok = False
                continue
            diff = float(np.max(np.abs(mine - theirs), initial=0.0))
            scale = float(np.max(np.abs(theirs), initial=0.0))
            within = diff <= CHECK_RTOL * scale
            print(f"{name} {key}: max |rebuilt - shipped| = {diff:.2e} ({diff / scale if scale else 0.0:.1e} of max |shipped| {scale:.3g}) "
                  f"{'ok' if within else 'DIFFERS'}")
            ok &= within
    print("the rebuild matches the shipped heads" if ok else "the rebuild differs from the shipped heads")
    return ok


def main():
    from attn_cli.heads.registry import save_head
    from attn_cli.vectors.loading import load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="rebuild in memory and compare with the shipped files")
    args = parser.parse_args()
    built = build_all(load())
    for name, (_, meta, _) in built.items():
        print(f"{name}: {meta['summary']}")
    if args.check:
        sys.exit(0 if check(built) else 1)
    write_links(HERE / "adjective_train.tsv", built["adjective"][2]["train"],
                "# the adjective head's training sentences (generated by build_heads.py; the format of `attn heads train`)")
    for name, (head, meta, _) in built.items():
        save_head(head, HERE / f"{name}.npz", meta)
        (HERE / f"{name}.metrics.json").write_text(json.dumps(meta["metrics"], indent=1) + "\n", encoding="utf-8")
    (HERE / "adjective.md").write_text(adjective_card(built["adjective"][1], built["adjective"][2]), encoding="utf-8")
    (HERE / "context.md").write_text(context_card(built["context"][1], built["context"][2]), encoding="utf-8")
    print("wrote", ", ".join(f"{name}.npz" for name in built))


if __name__ == "__main__":
    main()
