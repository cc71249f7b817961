"""The heads' metadata and their cards (adjective.md, context.md), written from the measured figures."""

from attn_cli.analysis.senses import read_sense_set
from builder.settings import ADJECTIVE_D_K, AFTER_FACTOR, HAND_WEIGHT, HELDOUT_SENSES, HELDOUT_SHARE, LONG_TOKENS, MASKS, MEAN_WORDS, MIN_KEY_WEIGHT, POSITION_COPIES, RANK_OFFSET, SEED, SENSE_SETS, SETS


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
