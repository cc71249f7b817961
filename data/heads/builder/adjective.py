"""The adjective head: word classifiers give W_Q and W_K, a ridge fit gives W_V; its shape chosen on the dev set."""

import itertools
import math

import numpy as np

import sentences as grammar
from attn_cli.core.attention import allowed_keys, Head, Mask
from attn_cli.core.blocks import input_embeddings
from attn_cli.heads import evaluation, links as link_files, training
from attn_cli.vectors.tokens import embed
from builder.settings import ADJECTIVE_CONFIG, ADJECTIVE_D_K, ADJECTIVE_SENTENCES, ADJECTIVE_SHAPES, AFTER_FACTOR, CLASSIFIER_POSITIONS, FUNCTION_KEYS, HAND_WEIGHT, MASKS, MIN_KEY_WEIGHT, POSITION_COPIES, SEED, SETS, TEMPERATURES
from builder.words import examples, read_pos_words, word_pools


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
