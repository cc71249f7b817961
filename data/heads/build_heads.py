"""Build the shipped heads `adjective` and `context`, and measure them, reproducibly.

    python data/heads/build_heads.py            # adjective.npz, context.npz, *.metrics.json, *.md, training samples
    python data/heads/build_heads.py --check    # rebuild in memory, compare with the shipped files

Training data: sentences from the grammar in sentences.py, over the words of pos_words.tsv
(hand-written) and lexicon.tsv (from lemminflect, see build_lexicon.py), with fixed seeds. A
seeded share of the words is held out of training altogether.

Measured on sets that are *not* the training distribution, all written by hand:
- eval/adjectives_natural.tsv, eval/adjectives_long.tsv (links: noun -> its own adjectives) and
  eval/senses_natural.tsv with eval/sense_words.tsv (ambiguous words in natural sentences):
  the held-out sets, never used to choose anything;
- dev/adjectives.tsv, dev/senses.tsv, dev/sense_words.tsv: the development set, on which the one
  choice made from data (the context head's value scale) is made; its figures are reported apart.
Every figure stands beside the same figure for baselines (previous token, even attention, the
identity head, even attention over the content words), computed by attn_cli.evaluation, the
code behind `attn heads eval`.
"""

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import sentences as grammar  # noqa: E402
from attn_cli import evaluation, training  # noqa: E402
from attn_cli.attention import Head, input_embeddings  # noqa: E402
from attn_cli.senses import read_sense_set  # noqa: E402

SEED = 2024
HELDOUT_SHARE = 0.2  # of the lexicon's adjectives and nouns, never in a training sentence

ADJECTIVE_CONFIG = training.TrainConfig(d_k=32, steps=600, lr=0.05, seed=SEED, self_weight=0.05, l2=1e-4, set_weight=5.0)
ADJECTIVE_SENTENCES = 1500  # training sentences, each seen under both masks
CONTEXT_CONFIG = training.TrainConfig(d_k=16, steps=300, lr=0.05, seed=SEED, self_weight=0.05, l2=1e-4, set_weight=10.0)
CONTEXT_SENTENCES = 1500
CONTEXT_VALUE_SCALES = (2.0, 4.0, 6.0, 8.0, 10.0)  # candidates for s in W_V = s (I - m m^T); chosen on the dev set
MIN_COSINE = 0.6  # the chosen s keeps the dev set's mean cos(E, E') of the ambiguous word at least this
MEAN_WORDS = 20_000  # m: the unit mean of the most frequent word vectors, a direction every word shares

SETS = {  # name -> (file, sense words or None); dev is the tuning set
    "natural": (HERE / "eval" / "adjectives_natural.tsv", None),
    "long": (HERE / "eval" / "adjectives_long.tsv", None),
    "dev": (HERE / "dev" / "adjectives.tsv", None),
    "senses": (HERE / "eval" / "senses_natural.tsv", HERE / "eval" / "sense_words.tsv"),
    "senses_dev": (HERE / "dev" / "senses.tsv", HERE / "dev" / "sense_words.tsv"),
}


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


def examples(sentences, vectors, links_of) -> list[training.Example]:
    """Each sentence under both masks; `links_of(sentence)` gives {query: [keys]}; under the causal
    mask keys after their query are dropped (a query left without keys attends to itself)."""
    out = []
    for s in sentences:
        words = np.array([vectors.get_vector(t) for t in s.tokens], dtype=np.float64)  # [n, d]
        e = input_embeddings(words, position=True)
        links = links_of(s)
        for mask in ("causal", "none"):
            kept = {q: [k for k in ks if mask == "none" or k < q] for q, ks in links.items()}
            out.append(training.Example(s.tokens, e, words, {q: ks for q, ks in kept.items() if ks}, mask))
    return out


def context_links(s: grammar.Sentence) -> dict[int, list[int]]:
    """Every content word attends to the other content words of its sentence."""
    return {q: [k for k in s.content if k != q] for q in s.content}


# --- measuring ----------------------------------------------------------------------------------


def link_figures(heads, links_file, vectors) -> dict:
    """{mask: {row name: figures}} for the heads and the baselines, as `attn heads eval` reports them."""
    links = training.read_links(links_file) if isinstance(links_file, Path) else links_file
    exs = training.links_to_examples(links, vectors, "none", str(links_file), strict=False)
    return {mask: {row.pop("name"): row for row in evaluation.link_rows(heads, exs, mask, vectors.vector_size)}
            for mask in ("causal", "none")}


def sense_figures(heads, cases_file, words_file, vectors) -> dict:
    cases = evaluation.parse_sense_cases(cases_file.read_text(encoding="utf-8").splitlines(), str(cases_file))
    sense_set = read_sense_set(words_file)
    return {mask: evaluation.sense_metrics(heads, cases, sense_set, vectors, mask) for mask in ("causal", "none")}


def unambiguous(s: grammar.Sentence) -> bool:
    """Every labelled noun and adjective occurs once: a links file names words, not positions."""
    labelled = [s.tokens[i] for q, ks in s.adjectives.items() for i in (q, *ks)]
    return all(s.tokens.count(w) == 1 for w in labelled)


def sentence_links(sentences) -> list[training.Link]:
    """The sentences' noun -> adjective links as a links file would give them (sentences whose
    labelled words repeat are left out)."""
    return [training.Link(s.text, s.tokens[q], s.tokens[k], 0) for s in sentences if unambiguous(s)
            for q, ks in s.adjectives.items() for k in ks]


# --- the heads ----------------------------------------------------------------------------------


def build_adjective(vectors, n_train=ADJECTIVE_SENTENCES, steps=None, progress=None):
    train_words, held_words = word_pools(vectors)
    train = grammar.generate(train_words, n_train, SEED)
    config = replace(ADJECTIVE_CONFIG, steps=steps or ADJECTIVE_CONFIG.steps)
    head = training.train_link_head("adjective", examples(train, vectors, lambda s: s.adjectives), config, progress)
    unseen = grammar.generate(held_words, 300, SEED + 1)  # the grammar, over words never trained on
    return head, {"train": train, "unseen": unseen, "config": config}


def value_map(scale: float, vectors) -> np.ndarray:  # -> [d, d]
    """W_V = s (I - m m^T): a key's vector without the direction every word shares, scaled by s."""
    m = np.asarray(vectors.vectors[:MEAN_WORDS], dtype=np.float64).mean(axis=0)
    m /= np.linalg.norm(m)
    return scale * (np.eye(len(m)) - np.outer(m, m))


def build_context(vectors, adjective, n_train=CONTEXT_SENTENCES, steps=None, progress=None, scales=CONTEXT_VALUE_SCALES):
    """W_Q, W_K from the grammar's content words; the value scale s chosen on the dev sense set:
    the most cases resolved (both masks) among the scales that keep mean cos(E, E') >= MIN_COSINE."""
    train_words, _ = word_pools(vectors)
    train = grammar.generate(train_words, n_train, SEED + 2, need_adjectives=False)
    config = replace(CONTEXT_CONFIG, steps=steps or CONTEXT_CONFIG.steps)
    w_q, w_k, _ = training.train_query_key(examples(train, vectors, context_links), config, progress)
    cases_file, words_file = SETS["senses_dev"]
    tried = {}
    for s in scales:
        head = Head("context", w_q, w_k, value_map(s, vectors))
        figures = sense_figures([adjective, head], cases_file, words_file, vectors)
        tried[s] = {"after": float(np.mean([figures[m]["heads"]["after"] for m in figures])),
                    "mean_cos": float(min(figures[m]["heads"]["mean_cos"] for m in figures))}
    allowed = [s for s in scales if tried[s]["mean_cos"] >= MIN_COSINE] or [min(scales)]
    scale = max(allowed, key=lambda s: (round(tried[s]["after"], 6), -s))
    choice = {"scale": scale, "min_cosine": MIN_COSINE, "tried": {f"{s:g}": v for s, v in tried.items()}}
    return Head("context", w_q, w_k, value_map(scale, vectors)), {"train": train, "config": config, "value_choice": choice}


def measure(adjective, context, data, vectors) -> dict:
    """Every shipped figure: the adjective head on the link sets, both heads on the sense sets."""
    adjective_metrics = {name: link_figures([adjective], SETS[name][0], vectors) for name in ("natural", "long", "dev")}
    adjective_metrics["unseen_words"] = link_figures([adjective], sentence_links(data["adjective"]["unseen"]), vectors)
    context_metrics = {name: sense_figures([adjective, context], *SETS[name], vectors) for name in ("senses", "senses_dev")}
    context_metrics["value_choice"] = data["context"]["value_choice"]
    return {"adjective": adjective_metrics, "context": context_metrics}


# --- files --------------------------------------------------------------------------------------


ADJECTIVE_DESCRIPTION = "nouns attend to their own adjectives; other tokens are trained only weakly to attend to themselves"
CONTEXT_DESCRIPTION = "content words attend to the other content words, moving toward the sense the context selects"


def adjective_summary(m) -> str:
    n, long = m["natural"]["causal"]["adjective"], m["long"]["causal"]["adjective"]
    return (f"hand-written held-out sentences: top non-self key an own adjective {n['top_on_key']:.3f} "
            f"(long sentences {long['top_on_key']:.3f}), mean weight on own adjectives {n['key_weight']:.3f}")


def context_summary(m) -> str:
    c, n = m["senses"]["causal"]["heads"], m["senses"]["none"]["heads"]
    return (f"hand-written held-out sense cases: E' nearer the intended sense {c['after']:.3f} causal, "
            f"{n['after']:.3f} mask none (E before: {c['before']:.3f}, {n['before']:.3f})")


def head_meta(name, description, metrics, summary, config) -> dict:
    return {"name": name, "description": description, "d_k": config.d_k, "trained": True, "metrics": metrics,
            "summary": summary, "seed": config.seed, "steps": config.steps, "built_by": "data/heads/build_heads.py"}


def link_table(m, sets=("natural", "long", "unseen_words", "dev")) -> str:
    labels = {"natural": "natural sentences", "long": "long sentences (25-40 tokens)",
              "unseen_words": "grammar sentences, words never trained on", "dev": "dev set (tuning)"}
    lines = ["| set | mask | pattern | top non-self key is an own adjective | own adjectives exactly the top keys | mean weight on own adjectives | other tokens' weight on themselves | nouns |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in sets:
        for mask in ("causal", "none"):
            for name, r in m[s][mask].items():
                bold = "**" if r["kind"] == "head" else ""
                lines.append(f"| {labels[s]} | {mask} | {bold}{name}{bold} | {bold}{r['top_on_key']:.3f}{bold} | "
                             f"{r['exact_top']:.3f} | {r['key_weight']:.3f} | {r['others_on_self']:.3f} | {r['queries']} |")
    return "\n".join(lines)


def sense_table(m, sets=("senses", "senses_dev")) -> str:
    labels = {"senses": "held-out", "senses_dev": "dev (tuning)"}
    lines = ["| set | mask | pattern | nearer the intended sense: E | E' | mean cos(E, E') | mean \\|ΔE\\|/\\|E\\| | cases |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in sets:
        for mask in ("causal", "none"):
            f = m[s][mask]
            for name in ("heads", "identity", "even_content", "even_all"):
                r = f[name]
                label = {"heads": "**adjective + context**", "identity": "identity head",
                         "even_content": "even over other content words", "even_all": "even over all other tokens"}[name]
                after = f"**{r['after']:.3f}**" if name == "heads" else f"{r['after']:.3f}"
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
            f"{long['previous']['exact_top']:.3f}, where most nouns have one adjective), and other tokens keep more weight "
            f"on themselves ({head['others_on_self']:.3f} against {prev['others_on_self']:.3f}). A single head over static "
            "vectors sees each key's own word and position, not the words in between, so an earlier noun phrase's "
            "adjective at the same distance as an own one looks the same to it.")


def adjective_card(meta, data) -> str:
    m, c = meta["metrics"], data["config"]
    return f"""# `adjective` head

Each noun is trained to attend to its own adjectives, the ones of its noun phrase before it
("creature" to "fluffy" and "blue", "forest" to "verdant", not "creature"'s adjectives); other
tokens are trained only weakly to attend to themselves, and often do not. Its value map moves
the noun toward its adjectives' meaning. How far it gets on sentences unlike its training data
is below, beside patterns that know nothing of adjectives. A small head
trained on static GloVe 6B 50d vectors (plus the positional encoding `inspect` adds) to show the
lesson's mechanism: it is **not** a head taken from a trained transformer.

- Shapes: W_Q, W_K [50, {c.d_k}], W_V [50, 50] (no W_O). Trained under both masks. Seed {c.seed}.
- Built by `python data/heads/build_heads.py` (rebuilds this file; `--check` compares).
- Training data: {len(data['train'])} sentences from the grammar in `sentences.py` (noun phrases
  with 0-3 adjectives joined by commas and "and", adverbs, plurals, noun modifiers, prepositional
  phrases, relative and subordinate clauses, predicative adjectives after the noun, 4-40 tokens),
  over the words of `pos_words.tsv` and `lexicon.tsv`; `adjective_train.tsv` holds them in the
  links format of `attn heads train`. {HELDOUT_SHARE:.0%} of the lexicon's adjectives and nouns never occur in training.
- Training: W_Q, W_K by Adam ({c.steps} steps) on the cross-entropy between each noun's attention row
  and the uniform distribution over its adjectives (other tokens: themselves, weight {c.self_weight}),
  plus {c.set_weight:g} times -log of the noun's total weight on its adjectives; W_V by ridge
  regression so a noun's update is about {c.value_scale} times the mean of its adjectives' vectors.

## Measured

Held-out sets written by hand, unlike the grammar: `eval/adjectives_natural.tsv` and
`eval/adjectives_long.tsv`. Nothing was chosen on them. `dev/adjectives.tsv` is the development
set. Beside the head, the same figures for three patterns that know nothing of adjectives:
all weight on the previous token, even weight over the visible tokens, and the identity head.
Recompute any row with `attn heads eval FILE --head adjective [--mask none]`.

{link_table(m)}

{adjective_reading(m)}
"""


def context_reading(m) -> str:
    """What the table says, in words, from the figures themselves."""
    c, n = m["senses"]["causal"], m["senses"]["none"]
    return (f"Before the heads, the ambiguous word is nearer its intended sense in {c['heads']['before']:.3f} of the cases "
            f"(its vector leans to one sense whatever the sentence); after them in {c['heads']['after']:.3f} (causal) and "
            f"{n['heads']['after']:.3f} (`--mask none`). Even attention over the other content words, with an update of "
            f"the same size, reaches {c['even_content']['after']:.3f} and {n['even_content']['after']:.3f}; over all other "
            f"tokens {c['even_all']['after']:.3f} and {n['even_all']['after']:.3f}; the identity head {c['identity']['after']:.3f} "
            f"and {n['identity']['after']:.3f}. The update is large (mean |ΔE|/|E| {c['heads']['mean_delta_ratio']:.1f}), "
            f"and the word keeps its identity only as far as a mean cos(E, E') of {c['heads']['mean_cos']:.2f} says.")


def context_card(meta, data) -> str:
    m, c = meta["metrics"], data["config"]
    choice = m["value_choice"]
    tried = ", ".join(f"s = {s}: {v['after']:.3f} (cos {v['mean_cos']:.2f})" for s, v in choice["tried"].items())
    return f"""# `context` head

Content words attend to the other content words of the sentence (not to "the", "of" or
punctuation), and the value map writes what they mean into the word: an ambiguous word's E'
moves toward the sense its context selects ("take a biopsy of the mole" -> skin; "one mole of
carbon dioxide" -> chemistry with `--mask none`, where the word sees what follows it). A small
head trained on static GloVe 6B 50d vectors to show the mechanism: it is **not** a head taken
from a trained transformer.

- Shapes: W_Q, W_K [50, {c.d_k}], W_V [50, 50] (no W_O). Trained under both masks. Seed {c.seed}.
- Built by `python data/heads/build_heads.py` (rebuilds this file; `--check` compares).
- W_Q, W_K: Adam ({c.steps} steps) on {len(data['train'])} grammar sentences (`sentences.py`): each content
  word's row should spread evenly over the other content words it can see, plus {c.set_weight:g} times
  -log of its total weight on them; function words' rows: themselves (weight {c.self_weight}).
- W_V = s (I - m m^T), where m is the unit mean of the {MEAN_WORDS:,} most frequent word vectors: a
  context word's vector without the direction that every GloVe vector shares, which says nothing
  about a sense. s = {choice['scale']:g}, chosen on the dev set as the scale that resolves most dev cases
  while the mean cos(E, E') of the ambiguous word stays >= {choice['min_cosine']} ({tried}).
  The update is large: the word keeps its identity (cos(E, E') above 0.5) but leans strongly on its
  context. A function word that attends to itself gets a large update along its own direction (the
  "self" part in `inspect`'s shift table), which moves it little in angle.

## Measured

A case counts when the ambiguous word is nearer (mean cosine with the probe words of
`sense_words.tsv`) to the intended sense than to every other, before the heads (E) and after
them (E'), with both default heads running as `inspect` runs them. "causal" uses the sentences
whose selecting words come before the word; "none" all of them. The held-out set,
`eval/senses_natural.tsv`, is written by hand, its sentences contain none of the probe words, and
nothing was chosen on it. The even-attention references get an update scaled to the same mean
size as the heads'. Recompute with `attn heads eval data/heads/eval/senses_natural.tsv
--sense-set data/heads/eval/sense_words.tsv [--mask none]`.

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
    adj_meta = head_meta("adjective", ADJECTIVE_DESCRIPTION, metrics["adjective"], adjective_summary(metrics["adjective"]), adj_data["config"])
    ctx_meta = head_meta("context", CONTEXT_DESCRIPTION, metrics["context"], context_summary(metrics["context"]), ctx_data["config"])
    return {"adjective": (adjective, adj_meta, adj_data), "context": (context, ctx_meta, ctx_data)}


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


def main():
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
