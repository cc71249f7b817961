"""Build the training data and the shipped heads `adjective` and `context`, reproducibly.

    python data/heads/build_heads.py            # data/heads/*.tsv, adjective.npz, context.npz, *.md
    python data/heads/build_heads.py --check    # rebuild in memory, compare with the shipped files

Inputs written by hand: pos_words.tsv (adjectives, nouns, verbs) and senses.tsv (ambiguous
words, their senses, probe and context words). Everything else is generated here with fixed
seeds: the train / held-out word split, the sentences (as link files), the heads and their
measured metrics. Held-out words never occur in training sentences.
"""

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from attn_cli import training  # noqa: E402
from attn_cli.attention import Head, input_embeddings  # noqa: E402
from attn_cli.tokens import tokenize  # noqa: E402

SEED = 2024
HELDOUT_SHARE = 0.25
FITTING_SHARE = 0.25  # adjectives drawn for a noun come from the quarter that suit it best
DETERMINERS = "the a this that his her their our every one".split()

ADJECTIVE_CONFIG = training.TrainConfig(d_k=16, steps=500, lr=0.05, seed=SEED, mask="causal", self_weight=0.05, l2=1e-3)
# set_weight: attention a content word gives "the", "of", "." adds only a generic direction to its E';
# set_weight 100 and CONTEXT_GENERIC chosen by 2-fold validation over the training words (W_Q, W_K
# retrained per fold; set_weight 0, 10, 30, 100, 1000; generic sentences 0, 1000, 3000)
CONTEXT_CONFIG = training.TrainConfig(d_k=16, steps=600, lr=0.05, seed=SEED, mask="both", self_weight=0.05, l2=1e-3,
                                      set_weight=100.0)
ADJECTIVE_SENTENCES = 1500  # training sentences (held out: 300)
CONTEXT_PER_TEMPLATE = 3  # training sentences per word, sense and template (held out: 2)
CONTEXT_GENERIC = 3000  # extra sentences of the same templates with random training nouns and adjectives (links only)
CONTEXT_VALUE_SCALES = (0.45,)  # Delta E of the ambiguous word ~ this share of |E|, toward the sense (more may be listed: validation picks)
# Ridge fits toward the sense moves win only when W_Q, W_K saw the validation words: with W_Q, W_K
# retrained per fold they lose to the prior alone (ridge inf: W_V = s*I), 0.87 against 0.94.
CONTEXT_RIDGES = (np.inf,)  # candidates, chosen by 2-fold validation on training words
CONTEXT_PRIORS = ("identity",)  # W_V stays near s*I, or near s*(I - mu mu^T) (mu: mean word direction; "centred")

# Context sentences: {w} the ambiguous word, {c} a word of the intended sense.
BEFORE = ["{c} {c} {w}", "a {c} of the {w} .", "the {c} and the {w} .", "they saw {c} , {c} and a {w} .",
          "the {c} {c} of the {w} .", "the {c} was {c} at the {w} .", "there is {c} in this {w} .",
          "it was {c} to see the {c} by the {w} ."]
AFTER = ["the {w} of the {c} {c} .", "one {w} with {c} and {c} .", "a {w} near the {c} .", "the {w} and the {c} .",
         "the {w} was {c} at the {c} .", "he saw that {w} on the {c} .", "it is the {w} for {c} ."]


# --- word lists and the split -------------------------------------------------------------------


def read_pos_words(path=HERE / "pos_words.tsv") -> dict[str, list[tuple[str, str]]]:
    """{pos: [(word, "auto"|"heldout")]} in file order."""
    table: dict[str, list[tuple[str, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            word, pos, split = line.split("\t")
            table.setdefault(pos, []).append((word, split))
    return table


def split_words(table, seed=SEED) -> dict[str, dict[str, list[str]]]:
    """{pos: {"train": [...], "heldout": [...]}}: a seeded share of each list held out, except
    the words marked "train" or "heldout" by hand."""
    rng = np.random.default_rng(seed)
    out = {}
    for pos, rows in table.items():
        forced = [w for w, s in rows if s == "heldout"]
        free = [w for w, s in rows if s == "auto"]
        order = rng.permutation(len(free))
        n_held = max(0, round(HELDOUT_SHARE * len(rows)) - len(forced))
        held = forced + [free[i] for i in sorted(order[:n_held])]
        out[pos] = {"train": [w for w, _ in rows if w not in held], "heldout": held}
    return out


# --- adjective sentences ------------------------------------------------------------------------


def suitable_adjectives(words, vectors, share=FITTING_SHARE) -> dict[str, list[str]]:
    """For each noun, the adjectives (of the same split) that suit it best: the top `share` of
    them by cosine in the vectors, a stand-in for which adjectives real text puts before it."""
    adjectives = words["adj"]
    a = np.array([vectors.get_vector(w) for w in adjectives])
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    keep = max(3, round(share * len(adjectives)))
    out = {}
    for noun in words["noun"]:
        x = vectors.get_vector(noun)
        order = np.argsort(-(a @ x), kind="stable")[:keep]
        out[noun] = [adjectives[i] for i in sorted(order)]
    return out


def noun_phrase(rng, words, used):
    """A determiner, 0-3 distinct adjectives that suit the noun, the noun: the words, and (noun, adjectives)."""
    n_adj = rng.choice([1, 1, 2, 2, 3])
    noun = next(w for w in rng.permutation(words["noun"]) if w not in used)
    adjectives = [a for a in rng.permutation(words["fits"][noun]) if a not in used][:n_adj]
    used.update(adjectives, [noun])
    phrase = [str(rng.choice(DETERMINERS))]
    if len(adjectives) == 2 and rng.random() < 0.2:
        phrase += [adjectives[0], "and", adjectives[1]]
    else:
        phrase += adjectives
    return phrase + [noun], (noun, adjectives)


def adjective_sentence(rng, words):
    used: set[str] = set()
    shape = rng.integers(5)
    np1, l1 = noun_phrase(rng, words, used)
    np2, l2 = noun_phrase(rng, words, used)
    verb, iverb = str(rng.choice(words["verb"])), str(rng.choice(words["iverb"]))
    if shape == 0:
        tokens, labels = np1 + [verb] + np2 + ["."], [l1, l2]
    elif shape == 1:
        tokens, labels = np1 + [iverb, "near"] + np2 + ["."], [l1, l2]
    elif shape == 2:
        tokens, labels = np1 + [iverb, "."], [l1]
    elif shape == 3:
        tokens, labels = np1 + ["and"] + np2 + [iverb, "."], [l1, l2]
    else:
        np3, l3 = noun_phrase(rng, words, used)
        tokens, labels = np1 + [verb] + np2 + ["in"] + np3 + ["."], [l1, l2, l3]
    return " ".join(tokens), [(noun, adj) for noun, adjs in labels for adj in adjs]


def adjective_links(words, count, seed) -> list[tuple[str, str, str]]:
    """Sentences with at least one noun-adjective link, as (sentence, noun, adjective) rows."""
    rng = np.random.default_rng(seed)
    rows, seen = [], set()
    while len(seen) < count:
        sentence, pairs = adjective_sentence(rng, words)
        if pairs and sentence not in seen:
            seen.add(sentence)
            rows += [(sentence, noun, adj) for noun, adj in pairs]
    return rows


# --- context sentences --------------------------------------------------------------------------


def senses_split(senses):
    """Train / held-out sense tables; held-out rows lose any probe or context word seen in training."""
    train = {w: s for w, s in senses.items() if all(v["split"] == "train" for v in s.values())}
    held = {w: s for w, s in senses.items() if w not in train}
    seen = set(train)
    for table in train.values():
        for info in table.values():
            seen.update(info["probes"], info["context"])
    clash = sorted(set(held) & seen)
    if clash:
        raise SystemExit(f"held-out ambiguous words used in training rows: {clash}")
    clean = {
        w: {s: {**info, "probes": [p for p in info["probes"] if p not in seen],
                "context": [c for c in info["context"] if c not in seen]} for s, info in table.items()}
        for w, table in held.items()
    }
    return train, clean


def context_sentences(senses, per_template, seed):
    """(sentence, word, sense, before|after, content tokens) for every word, sense and template."""
    rng = np.random.default_rng(seed)
    out = []
    for word in sorted(senses):
        for sense, info in senses[word].items():
            for where, templates in (("before", BEFORE), ("after", AFTER)):
                for template in templates:
                    for _ in range(per_template):
                        picks = iter(rng.permutation(info["context"]))
                        sentence = template.replace("{w}", word)
                        while "{c}" in sentence:
                            sentence = sentence.replace("{c}", str(next(picks)), 1)
                        content = [word] + [t for t in tokenize(sentence) if t in info["context"]]
                        out.append((sentence, word, sense, where, content))
    return out


def generic_context_sentences(count, seed, banned):
    """The context templates filled with random training nouns ({w}) and nouns or adjectives ({c}):
    which tokens are content words, over many more words than senses.tsv has. `banned`: words to avoid."""
    words = split_words(read_pos_words())
    nouns = [w for w in words["noun"]["train"] if w not in banned]
    content = [w for w in words["noun"]["train"] + words["adj"]["train"] if w not in banned]
    rng = np.random.default_rng(seed)
    templates = BEFORE + AFTER
    out = []
    for _ in range(count):
        template = templates[rng.integers(len(templates))]
        word = str(rng.choice(nouns))
        picks = iter(rng.permutation([c for c in content if c != word]))
        sentence, used = template.replace("{w}", word), []
        while "{c}" in sentence:
            used.append(str(next(picks)))
            sentence = sentence.replace("{c}", used[-1], 1)
        out.append((sentence, word, "-", "-", [word] + [t for t in tokenize(sentence) if t in used]))
    return out


def context_links(sentences) -> list[tuple[str, str, str]]:
    """Every content word links to every content word of its sentence, itself included (either side)."""
    rows = []
    for sentence, *_, content in dict((s[0], s) for s in sentences).values():
        rows += [(sentence, q, k) for q in content for k in content]
    return rows


# --- training -----------------------------------------------------------------------------------


def examples_from_rows(rows, vectors, masks, self_links=False):
    links = [training.Link(s, q, k, i + 1) for i, (s, q, k) in enumerate(rows)]
    return [ex for m in masks for ex in training.links_to_examples(links, vectors, m, strict=False, self_links=self_links)]


def context_value_rows(sentences, senses, vectors, w_q, w_k):
    """Rows for the context head's value map: the ambiguous word's attention-weighted input
    should become a move of |E| toward its sense, away from the others (scaled later).
    Returns inputs [m, d], targets [m, d] and the ambiguous word of each row."""
    inputs, targets, owners = [], [], []
    for sentence, word, sense, where, _ in sentences:
        tokens = tokenize(sentence)
        words = np.array([vectors.get_vector(t) for t in tokens])
        e = input_embeddings(words, position=True)
        i = tokens.index(word)
        centroids = {s: training.sense_centroid(vectors, info["probes"]) for s, info in senses[word].items()}
        away = centroids[sense] - np.mean(list(centroids.values()), axis=0)  # [d]
        goal = np.linalg.norm(e[i]) * away / np.linalg.norm(away)
        for mask in ("causal", "none") if where == "before" else ("none",):
            a = training.attended(e, w_q, w_k, mask)  # [n, n]
            inputs.append(a[i] @ e)
            targets.append(goal)
            owners.append(word)
    return np.array(inputs), np.array(targets), np.array(owners)


def value_prior(kind, vectors, scale):
    """s*I, or s*(I - mu mu^T) with mu the unit mean of the 20,000 most frequent word vectors:
    a move along the direction every word shares says nothing about a sense."""
    d = vectors.vector_size
    if kind == "identity":
        return scale * np.eye(d)
    mu = np.asarray(vectors.vectors[:20000], dtype=np.float64).mean(axis=0)
    mu /= np.linalg.norm(mu)
    return scale * (np.eye(d) - np.outer(mu, mu))


def fit_or_prior(inputs, targets, prior, ridge):
    """W_V by ridge regression toward the targets; ridge inf: the prior itself."""
    return prior if np.isinf(ridge) else training.fit_value_map(inputs, targets, np.ones(len(inputs)), prior, ridge)


def choose_value_map(sentences, senses, vectors, w_q, w_k, ridges=CONTEXT_RIDGES, priors=CONTEXT_PRIORS,
                     scales=CONTEXT_VALUE_SCALES):
    """Pick the scale, prior and ridge by 2-fold validation over the *training* ambiguous words
    (the held-out words play no part), then fit W_V on all training rows with that choice."""
    inputs, targets, owners = context_value_rows(sentences, senses, vectors, w_q, w_k)
    words = sorted(senses)
    folds = [set(words[0::2]), set(words[1::2])]
    scores = {}
    for scale in scales:
        for prior_kind in priors:
            prior = value_prior(prior_kind, vectors, scale)
            for ridge in ridges:
                accuracy = []
                for fold in folds:
                    fit = ~np.isin(owners, list(fold))
                    w_v = fit_or_prior(inputs[fit], scale * targets[fit], prior, ridge)
                    cases = [training.SenseCase(s, w, sense, where == "before") for s, w, sense, where, _ in sentences if w in fold]
                    head = Head("context", w_q, w_k, w_v)
                    accuracy += [training.sense_shift_metrics([head], cases, senses, vectors, m)["accuracy"] for m in ("causal", "none")]
                scores[(scale, prior_kind, ridge)] = float(np.mean(accuracy))
    best = max(scores, key=lambda k: (round(scores[k], 6), k[2], -k[0]))
    scale, prior_kind, ridge = best
    w_v = fit_or_prior(inputs, scale * targets, value_prior(prior_kind, vectors, scale), ridge)
    validation = {f"scale {a:g}, {p}, ridge {r:g}": round(acc, 4) for (a, p, r), acc in scores.items()}
    return w_v, {"scale": scale, "prior": prior_kind, "ridge": None if np.isinf(ridge) else ridge, "validation": validation}  # JSON: no inf


def competing(example, query) -> bool:
    """Does another noun's adjective come before this noun's first adjective (the hard case)?"""
    first = min(example.links[query])
    return any(k < first for q, keys in example.links.items() if q != query for k in keys)


def adjective_metrics(head, examples) -> dict:
    metrics = training.link_metrics(head, examples)
    for label, want in (("no_earlier_adjectives", False), ("earlier_adjectives", True)):
        part = [replace(ex, links={q: k for q, k in ex.links.items() if competing(ex, q) == want}) for ex in examples]
        sub = training.link_metrics(head, [ex for ex in part if ex.links])
        metrics[label] = {k: sub[k] for k in ("queries", "top_on_key", "key_weight")}
    return metrics


def build_adjective(vectors, n_train=ADJECTIVE_SENTENCES, steps=None, progress=None):
    words = split_words(read_pos_words())
    train_words = {pos: w["train"] for pos, w in words.items()}
    held_words = {pos: w["heldout"] for pos, w in words.items()}
    train_words["fits"] = suitable_adjectives(train_words, vectors)
    held_words["fits"] = suitable_adjectives(held_words, vectors)
    train_rows = adjective_links(train_words, n_train, SEED)
    held_rows = adjective_links(held_words, 300, SEED + 1)
    any_adjective = {**held_words, "fits": {noun: held_words["adj"] for noun in held_words["noun"]}}
    random_rows = adjective_links(any_adjective, 300, SEED + 2)  # stress test: adjectives that need not suit the noun
    config = replace(ADJECTIVE_CONFIG, steps=steps or ADJECTIVE_CONFIG.steps)
    train_ex = examples_from_rows(train_rows, vectors, ["causal"])
    head = training.train_link_head("adjective", train_ex, config, progress)
    metrics = adjective_metrics(head, examples_from_rows(held_rows, vectors, ["causal"]))
    random_metrics = training.link_metrics(head, examples_from_rows(random_rows, vectors, ["causal"]))
    metrics["any_adjectives"] = {k: random_metrics[k] for k in ("queries", "top_on_key", "key_weight")}
    return head, metrics, {"train": train_rows, "heldout": held_rows, "words": words, "config": config}


def even_attention_reference(sentences, senses, vectors, scale, mask) -> float:
    """The sense-shift share when attention is spread evenly over exactly the selecting context
    words, no more and no less, and Delta E = scale * their mean: a reference point for the metric
    on this set with a value map of that size."""
    wins = []
    for sentence, word, sense, where, content in sentences:
        if mask == "causal" and where != "before":
            continue
        tokens = tokenize(sentence)
        e = input_embeddings(np.array([vectors.get_vector(t) for t in tokens]), position=True)
        i = tokens.index(word)
        context = [j for j, t in enumerate(tokens) if t in content and t != word and (mask == "none" or j < i)]
        moved = e[i] + scale * e[context].mean(axis=0)
        gain = {}
        for name, info in senses[word].items():
            c = training.sense_centroid(vectors, info["probes"])
            gain[name] = moved @ c / np.linalg.norm(moved) - e[i] @ c / np.linalg.norm(e[i])
        wins.append(gain[sense] > max(g for name, g in gain.items() if name != sense))
    return float(np.mean(wins))


def build_context(vectors, per_template=CONTEXT_PER_TEMPLATE, steps=None, progress=None, ridges=CONTEXT_RIDGES,
                  priors=CONTEXT_PRIORS, held_per_template=2, scales=CONTEXT_VALUE_SCALES):
    senses = training.read_senses(HERE / "senses.tsv")
    train_senses, held_senses = senses_split(senses)
    train_sent = context_sentences(train_senses, per_template, SEED)
    held_sent = context_sentences(held_senses, held_per_template, SEED + 1)
    config = replace(CONTEXT_CONFIG, steps=steps or CONTEXT_CONFIG.steps)
    banned = set(held_senses) | {x for w in held_senses for info in senses[w].values() for x in info["probes"] + info["context"]}
    generic = generic_context_sentences(CONTEXT_GENERIC, SEED + 7, banned)  # held-out words, probes, context: never
    train_ex = examples_from_rows(context_links(train_sent + generic), vectors, ["causal", "none"], self_links=True)
    w_q, w_k, _ = training.train_query_key(train_ex, config, progress)
    w_v, choice = choose_value_map(train_sent, train_senses, vectors, w_q, w_k, ridges, priors, scales)
    head = Head("context", w_q, w_k, w_v)
    cases = [training.SenseCase(s, w, sense, where == "before") for s, w, sense, where, _ in held_sent]
    d = vectors.vector_size
    identity = Head("identity", np.eye(d), np.eye(d), np.eye(d))
    metrics = {}
    for name, h in (("context", head), ("identity", identity)):
        for mask in ("causal", "none"):
            metrics[f"{name}_{mask}"] = training.sense_shift_metrics([h], cases, held_senses, vectors, mask)
    for mask in ("causal", "none"):  # identity with its update shrunk to the context head's mean |Delta E| / |E|
        shrink = metrics[f"context_{mask}"]["delta_ratio"] / metrics[f"identity_{mask}"]["delta_ratio"]
        matched = Head("identity", np.eye(d), np.eye(d), shrink * np.eye(d))
        metrics[f"identity_matched_{mask}"] = training.sense_shift_metrics([matched], cases, held_senses, vectors, mask)
    held_links = examples_from_rows(context_links(held_sent), vectors, ["causal"])  # metric: other content words
    metrics["content_attention"] = training.link_metrics(head, held_links)
    metrics["value_map"] = choice
    for mask in ("causal", "none"):
        metrics[f"even_attention_{mask}"] = even_attention_reference(held_sent, held_senses, vectors, choice["scale"], mask)
    return head, metrics, {"train": train_sent, "heldout": held_sent, "senses": (train_senses, held_senses), "config": config}


# --- files ---------------------------------------------------------------------------------------


def write_tsv(path, header, rows):
    lines = [header] + ["\t".join(map(str, row)) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def adjective_summary(m) -> str:
    return (f"held-out: largest non-self weight on an own adjective {m['top_on_key']:.3f}, "
            f"mean weight on own adjectives {m['key_weight']:.3f}")


def context_summary(m) -> str:
    c, n, ic, inn = (m[k]["accuracy"] for k in ("context_causal", "context_none", "identity_causal", "identity_none"))
    return f"held-out sense shift: causal {c:.3f}, mask none {n:.3f} (identity head: {ic:.3f}, {inn:.3f})"


def head_meta(name, description, metrics, summary, config) -> dict:
    return {"name": name, "description": description, "d_k": config.d_k, "trained": True, "metrics": metrics,
            "summary": summary, "seed": config.seed, "steps": config.steps, "built_by": "data/heads/build_heads.py"}


ADJECTIVE_DESCRIPTION = "nouns attend to the adjectives before them; other tokens mostly to themselves"
CONTEXT_DESCRIPTION = "content words attend to the content words around them, moving toward the sense the context selects"


def adjective_card(meta, data) -> str:
    m, c = meta["metrics"], data["config"]
    words = data["words"]
    return f"""# `adjective` head

Nouns attend to the adjectives before them; other tokens attend mostly to themselves. Its value
map then moves each noun toward its adjectives' meaning. A small head trained on static GloVe
6B 50d vectors (plus the positional encoding `inspect` adds) to illustrate the mechanism of the
lesson: it is **not** a head taken from a trained transformer.

- Shapes: W_Q, W_K [50, {c.d_k}], W_V [50, 50] (no W_O). Causal mask. Seed {c.seed}.
- Built by `python data/heads/build_heads.py` (rebuilds this file; `--check` compares).
- Data: hand-written word lists (`pos_words.tsv`), split by word with a fixed seed
  ({len(words['adj']['train'])} adjectives and {len(words['noun']['train'])} nouns for training,
  {len(words['adj']['heldout'])} and {len(words['noun']['heldout'])} held out; `pos_split.tsv`),
  put into template sentences such as "the ADJ ADJ NOUN VERB the ADJ NOUN ." ({len({r[0] for r in data['train']})}
  training sentences in `adjective_train.tsv`, {len({r[0] for r in data['heldout']})} held-out ones in
  `adjective_heldout.tsv`, both in the links format of `attn heads train`). A noun's adjectives are
  drawn from the quarter of the adjectives closest to it in the vectors, a stand-in for the
  adjectives real text puts before a noun. The lesson's words (fluffy, blue, verdant, creature,
  forest, roamed) are training words, so its sentence is a training-set example; every figure
  below is on held-out sentences whose adjectives and nouns never occur in training.
- Training: W_Q, W_K by Adam ({c.steps} steps) on the cross-entropy between each noun's attention row
  and the uniform distribution over its adjectives (other tokens: themselves, weight
  {c.self_weight}); W_V by ridge regression so a noun's update is about {c.value_scale} times the mean of
  its adjectives' vectors.

## Measured on held-out sentences (causal mask)

| figure | value |
| --- | --- |
| nouns whose largest non-self weight is on one of their adjectives | {m['top_on_key']:.3f} ({m['queries']} nouns) |
| mean total weight of a noun on its adjectives | {m['key_weight']:.3f} |
| ... nouns with no other noun's adjectives before them | {m['no_earlier_adjectives']['top_on_key']:.3f}, weight {m['no_earlier_adjectives']['key_weight']:.3f} ({m['no_earlier_adjectives']['queries']} nouns) |
| ... nouns preceded by another noun's adjectives | {m['earlier_adjectives']['top_on_key']:.3f}, weight {m['earlier_adjectives']['key_weight']:.3f} ({m['earlier_adjectives']['queries']} nouns) |
| adjectives drawn at random instead (stress test) | {m['any_adjectives']['top_on_key']:.3f}, weight {m['any_adjectives']['key_weight']:.3f} |
| other tokens: mean weight on themselves | {m['self_weight_other']:.3f} |
| (noun, adjective) pairs with cos(E'(noun), E(adj)) > cos(E(noun), E(adj)) | {m['moved_toward_key']:.3f} |

The bar for this head is 0.95 on the first figure; it reaches {m['top_on_key']:.3f}. Nouns
preceded by another noun's adjectives are the harder case ({m['earlier_adjectives']['top_on_key']:.3f}
against {m['no_earlier_adjectives']['top_on_key']:.3f}): there only the positional encoding tells the
nearest adjectives from earlier ones.
"""


def context_card(meta, data) -> str:
    m, c = meta["metrics"], data["config"]
    train, held = data["senses"]
    v = m["value_map"]
    if v["ridge"] is None:
        value_text = f"W_V = {v['scale']:g} I: with W_Q, W_K retrained per fold, 2-fold validation over the training words\n  preferred it to ridge fits toward the sense moves."
    else:
        value_text = (f"W_V by ridge regression toward a move of {v['scale']:g} |E| from the word to its sense's probes, pulled toward\n"
                      f"  {v['scale']:g} I (prior \"{v['prior']}\", ridge {v['ridge']:g}; chosen by 2-fold validation over the training words).")
    row = lambda key: f"{m[key]['accuracy']:.3f} | {m[key]['mean_margin']:.3f} | {m[key]['delta_ratio']:.2f} | {m[key]['cases']}"  # noqa: E731
    return f"""# `context` head

Content words attend to the content words around them (not to "the", "of", punctuation), so an
ambiguous word's E' moves toward the sense its context selects ("american shrew mole" -> animal,
"a biopsy of the mole" -> skin; "one mole of carbon dioxide" -> chemistry only with `--mask none`,
where the word can see what follows it). A small head trained on static GloVe 6B 50d vectors to
illustrate the mechanism: it is **not** a head taken from a trained transformer.

- Shapes: W_Q, W_K [50, {c.d_k}], W_V [50, 50] (no W_O). Trained under both masks. Seed {c.seed}.
- Built by `python data/heads/build_heads.py` (rebuilds this file; `--check` compares).
- Data: `senses.tsv`, written by hand: {len(train)} ambiguous words for training, {len(held)} held out
  ({', '.join(sorted(held))}), each with 2-3 senses, probe words that stand for each sense and
  context words that select it. Held-out rows lose every probe or context word that occurs in
  training. Sentences come from templates with the context before the word ("the {{c}} {{c}} of the {{w}} .")
  or after it ("the {{w}} of the {{c}} {{c}} ."): `context_train.tsv` and `context_heldout.tsv`; in
  training, each content word is linked to every content word of its sentence; W_Q, W_K also see
  {CONTEXT_GENERIC} sentences of the same templates filled with random training nouns and adjectives of
  `pos_words.tsv` (none of them a held-out word, probe or context word).
- Training: W_Q, W_K by Adam ({c.steps} steps) on the cross-entropy between each content word's row
  and the uniform distribution over the content words it can see (itself included), plus
  {c.set_weight:g} times -log of the row's total weight on those words (weight on "the", "of", "."
  only adds a generic direction); function words' rows: themselves, weight {c.self_weight}.
  {value_text}

## Measured on held-out ambiguous words

A case counts when E' gains more mean cosine with the intended sense's probes than with every
other sense's. "causal" uses the sentences whose context precedes the word; "none" all of them.

| head | mask | share of cases | mean margin | mean \\|Delta E\\| / \\|E\\| | cases |
| --- | --- | --- | --- | --- | --- |
| context | causal | {row('context_causal')} |
| context | none | {row('context_none')} |
| identity (W_Q = W_K = W_V = I) | causal | {row('identity_causal')} |
| identity | none | {row('identity_none')} |
| identity, update shrunk to the context head's size | causal | {row('identity_matched_causal')} |
| identity, update shrunk | none | {row('identity_matched_none')} |

The learned head beats plain similarity while its update is
{m['context_causal']['delta_ratio'] / m['identity_causal']['delta_ratio']:.2f} times the size of identity's. The bar for this head
is 0.95 in both modes; it reaches {m['context_causal']['accuracy']:.3f} and {m['context_none']['accuracy']:.3f}. Misses
are mostly words whose vector already leans to the intended sense (temple -> religious, mole -> animal):
adding context, less specific than the word itself, lowers that cosine a little. For
reference, attention spread evenly over exactly the selecting context words, with an update of
the same scale, reaches {m['even_attention_causal']:.3f} (causal) and {m['even_attention_none']:.3f} (none) on this set.

Attention on held-out sentences: a content word's largest weight on another content word
{m['content_attention']['top_on_key']:.3f} of the time; mean weight on them {m['content_attention']['key_weight']:.3f}.
"""


def build_all(vectors):
    adjective, adj_metrics, adj_data = build_adjective(vectors)
    context, ctx_metrics, ctx_data = build_context(vectors)
    return {
        "adjective": (adjective, head_meta("adjective", ADJECTIVE_DESCRIPTION, adj_metrics, adjective_summary(adj_metrics), adj_data["config"]), adj_data),
        "context": (context, head_meta("context", CONTEXT_DESCRIPTION, ctx_metrics, context_summary(ctx_metrics), ctx_data["config"]), ctx_data),
    }


def write_data(built):
    adj_data, ctx_data = built["adjective"][2], built["context"][2]
    header = "# sentence\tquery\tkey  (generated by build_heads.py; the format of `attn heads train`)"
    write_tsv(HERE / "adjective_train.tsv", header, adj_data["train"])
    write_tsv(HERE / "adjective_heldout.tsv", header, adj_data["heldout"])
    case_header = "# sentence\tword\tsense\twhere the context is (before|after the word)  (generated by build_heads.py)"
    write_tsv(HERE / "context_train.tsv", case_header, [row[:4] for row in ctx_data["train"]])  # links: every content-word pair
    write_tsv(HERE / "context_heldout.tsv", case_header, [row[:4] for row in ctx_data["heldout"]])
    split_rows = [(w, pos, split) for pos, table in adj_data["words"].items() for split, ws in table.items() for w in ws]
    write_tsv(HERE / "pos_split.tsv", "# word\tpos\tsplit  (generated by build_heads.py with a fixed seed)", split_rows)


def check(built) -> bool:
    """Compare a rebuild with the shipped files: every array within 1e-6."""
    from attn_cli.heads import load_head

    ok = True
    for name, (head, _, _) in built.items():
        shipped = load_head(HERE / f"{name}.npz", head.w_q.shape[0])
        for key in ("w_q", "w_k", "w_v"):
            diff = float(np.max(np.abs(getattr(head, key) - getattr(shipped, key))))
            print(f"{name} {key}: max |rebuilt - shipped| = {diff:.2e}")
            ok &= diff <= 1e-6
    return ok


if __name__ == "__main__":
    from attn_cli.heads import save_head
    from attn_cli.vectors import load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="rebuild in memory and compare with the shipped files")
    args = parser.parse_args()
    built = build_all(load())
    for name, (_, meta, _) in built.items():
        print(f"{name}: {meta['summary']}")
    if args.check:
        sys.exit(0 if check(built) else 1)
    write_data(built)
    for name, (head, meta, _) in built.items():
        save_head(head, HERE / f"{name}.npz", meta)
        (HERE / f"{name}.metrics.json").write_text(json.dumps(meta["metrics"], indent=1) + "\n", encoding="utf-8")
    (HERE / "adjective.md").write_text(adjective_card(built["adjective"][1], built["adjective"][2]), encoding="utf-8")
    (HERE / "context.md").write_text(context_card(built["context"][1], built["context"][2]), encoding="utf-8")
    print("wrote", ", ".join(f"{name}.npz" for name in built))
