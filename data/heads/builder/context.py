"""The context head: keys scored by rarity, a value map that moves a word toward its context, the sink, all chosen on dev."""

from pathlib import Path
import itertools
import math

import numpy as np

from attn_cli.core.attention import allowed_keys, Head, Mask
from attn_cli.core.blocks import input_embeddings
from attn_cli.heads import senses as sense_eval
from attn_cli.vectors.tokens import tokenize
from builder.adjective import ridge_regression, with_positions
from builder.measures import sense_figures
from builder.settings import CONTEXT_RARITY, CONTEXT_SELF_COSTS, CONTEXT_VALUE_SCALES, CORPUS, CORPUS_MIN_SEEN, CORPUS_MIXES, CORPUS_RIDGE, CORPUS_SHA256, MASKS, MEAN_WORDS, MIN_ALONE_COSINE, MIN_COSINE, POSITION_COPIES, RANK_OFFSET, SEED, SETS, SINK_BOOSTS, SINK_RANKS, VALUE_RIDGES, VALUE_STEPS
from builder.value_map import sense_margins, train_value_map


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
