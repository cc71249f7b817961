"""Check the hand-written held-out evaluation sets in this folder and print their counts.

    python data/heads/eval/check_eval.py

Errors (exit status 1) for: bad format, tokens without a vector, labelled words missing or in the
wrong place, or breaking the labelling rules written at the top of each file; warnings for softer issues.
"""

import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

from attn_cli.vectors.tokens import tokenize
from attn_cli.vectors.loading import load

HERE = Path(__file__).resolve().parent
REQUIRED_WORDS = "mole bank bass crane seal spring plant club bat mouse palm pitch organ star".split()
SECOND_WORDS = "pen nail trunk pupil temple bark port mint pool pitcher bolt date".split()  # senses_natural2.tsv: words of no other set

# Words never to label as adjectives: determiners, numbers, intensifiers, noun-like colours/materials.
NOT_ADJECTIVES = set(
    """a an the this that these those my your his her its our their some any every each no several
    many few much more most very really quite too so extremely rather first second third last next
    one two three four five six seven eight nine ten orange gold silver light stone plastic glass""".split()
)
ADVERBS = set("very really quite so extremely rather too incredibly fairly pretty most".split())

errors: list[str] = []
warnings: list[str] = []


def err(msg):
    errors.append(msg)


def warn(msg):
    warnings.append(msg)


def rows(path: Path, ncols: int, header: list[str]):
    """(line number, fields) of the data lines; checks the header and the field count."""
    seen_header = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if fields == header:
            seen_header = True
            continue
        if not seen_header:
            err(f"{path.name}:{number}: data before the header line {header}")
        if len(fields) != ncols or not all(f.strip() for f in fields) or any(f != f.strip() for f in fields):
            err(f"{path.name}:{number}: expected {ncols} non-empty tab-separated fields without stray spaces")
            continue
        if '"' in line:
            err(f"{path.name}:{number}: double quote in line (csv readers would mangle it)")
        yield number, fields
    if not seen_header:
        err(f"{path.name}: no header line {header}")


def unknown_tokens(tokens, v):
    return [t for t in tokens if t not in v.key_to_index]


def check_adjectives(path: Path, v, min_tok, max_tok, min_sent, min_links, long=False, min_adjs=0, min_nouns=0):
    links = list(rows(path, 3, ["sentence", "query", "key"]))
    by_sentence: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for number, (sentence, noun, adj) in links:
        by_sentence[sentence].append((number, noun, adj))
    if len(set(tuple(f) for _, f in links)) != len(links):
        err(f"{path.name}: duplicate lines")
    lengths = []
    for sentence, group in by_sentence.items():
        tokens = tokenize(sentence)
        lengths.append(len(tokens))
        where = f"{path.name}:{group[0][0]}"
        if bad := unknown_tokens(tokens, v):
            err(f"{where}: no vector for {bad}")
        if not min_tok <= len(tokens) <= max_tok:
            err(f"{where}: {len(tokens)} tokens, want {min_tok}-{max_tok}")
        labelled: dict[str, list[str]] = defaultdict(list)
        for number, noun, adj in group:
            labelled[noun].append(adj)
            where = f"{path.name}:{number}"
            if noun != noun.lower() or adj != adj.lower():
                err(f"{where}: labels must be lower-case tokens")
            if tokens.count(noun) != 1:
                err(f"{where}: noun {noun!r} occurs {tokens.count(noun)} times (want exactly 1)")
                continue
            if adj in NOT_ADJECTIVES:
                err(f"{where}: {adj!r} must not be labelled as an adjective")
            if adj not in tokens:
                err(f"{where}: adjective {adj!r} is not a token")
                continue
            if tokens.count(adj) > 1:
                warn(f"{where}: adjective {adj!r} occurs {tokens.count(adj)} times")
            q = tokens.index(noun)
            places = [i for i, t in enumerate(tokens) if t == adj]
            k = min(places, key=lambda i: (abs(i - q), i > q))  # as attn_cli.heads.links._nearest
            if not k < q:
                err(f"{where}: nearest {adj!r} is not before {noun!r}")
            elif q - k > 7:
                err(f"{where}: {adj!r} is {q - k} tokens before {noun!r}; not in its noun phrase?")
        # The stretch from a noun's first labelled adjective to the noun holds only its labelled
        # adjectives, commas, 'and' and adverbs (no unlabelled adjective or compound noun), and the
        # word right before the noun is one of its labelled adjectives.
        for noun, adjs in labelled.items():
            if tokens.count(noun) != 1 or not all(a in tokens for a in adjs):
                continue
            q = tokens.index(noun)
            ks = [max(i for i, t in enumerate(tokens[:q]) if t == a) for a in adjs if a in tokens[:q]]
            if not ks:
                continue
            if len(adjs) != len(set(adjs)):
                err(f"{path.name}:{group[0][0]}: {noun!r} has a repeated adjective")
            if not 1 <= len(adjs) <= 3:
                err(f"{path.name}:{group[0][0]}: {noun!r} has {len(adjs)} adjectives (want 1-3)")
            if tokens[q - 1] not in adjs:
                err(f"{path.name}:{group[0][0]}: word before {noun!r} is {tokens[q - 1]!r}, not a labelled adjective")
            for t in tokens[min(ks):q]:
                if t not in adjs and t not in {",", "and"} and t not in ADVERBS:
                    err(f"{path.name}:{group[0][0]}: {t!r} inside the labelled phrase of {noun!r}")
        if long and len(labelled) < 3:
            err(f"{path.name}:{group[0][0]}: only {len(labelled)} noun phrases with adjectives (want 3+)")

    adjs = Counter(adj for _, (_, _, adj) in links)
    nouns = Counter(noun for _, (_, noun, _) in links)
    per_np = Counter(len(set(a for _, n2, a in g if n2 == n)) for g in by_sentence.values() for n in {n for _, n, _ in g})
    multi = sum(c for k, c in per_np.items() if k >= 2) / max(1, sum(per_np.values()))
    print(f"{path.relative_to(HERE.parent.parent.parent)}")
    print(f"  sentences {len(by_sentence)}, links {len(links)}, labelled noun phrases {sum(per_np.values())}"
          f" (with 1/2/3 adjectives: {per_np[1]}/{per_np[2]}/{per_np[3]}, share with 2-3: {multi:.0%})")
    print(f"  distinct adjectives {len(adjs)}, distinct nouns {len(nouns)}")
    print(f"  tokens per sentence min {min(lengths)} median {statistics.median(lengths):g} max {max(lengths)}")
    if len(by_sentence) < min_sent:
        err(f"{path.name}: {len(by_sentence)} sentences, want at least {min_sent}")
    if len(links) < min_links:
        err(f"{path.name}: {len(links)} links, want at least {min_links}")
    if len(adjs) < min_adjs:
        err(f"{path.name}: {len(adjs)} distinct adjectives, want at least {min_adjs}")
    if len(nouns) < min_nouns:
        err(f"{path.name}: {len(nouns)} distinct nouns, want at least {min_nouns}")
    return adjs, nouns


def check_sense_words(path: Path, v):
    table: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for number, (word, sense, probes) in rows(path, 3, ["word", "sense", "probes"]):
        where = f"{path.name}:{number}"
        ps = probes.split(" ")
        if "" in ps:
            err(f"{where}: probes must be separated by single spaces")
        if not 5 <= len(ps) <= 6:
            err(f"{where}: {len(ps)} probes (want 5-6)")
        if bad := unknown_tokens(ps + [word], v):
            err(f"{where}: no vector for {bad}")
        if sense in table[word]:
            err(f"{where}: sense {word}/{sense} listed twice")
        table[word][sense] = ps
    for word, senses in table.items():
        want = 3 if word == "mole" else 2
        if len(senses) != want:
            err(f"{path.name}: {word} has {len(senses)} senses (want {want})")
    if table.get("mole") and set(table["mole"]) != {"animal", "chemistry", "skin"}:
        err(f"{path.name}: mole's senses should be animal, chemistry, skin")
    return table


def variants(word: str) -> set[str]:
    """A probe word and its plain plural/singular, so that 'fish' also rules out 'fishes'."""
    out = {word, word + "s", word + "es"}
    if word.endswith("s"):
        out.add(word[:-1])
    if word.endswith("es"):
        out.add(word[:-2])
    return out


def check_senses(path: Path, v, table, required=REQUIRED_WORDS, min_words=24, min_cases=240, max_tokens=25):
    cases = list(rows(path, 4, ["sentence", "word", "sense", "context"]))
    if len({f[0] for _, f in cases}) != len(cases):
        err(f"{path.name}: a sentence is used twice")
    lengths, per_pair, per_word, split = [], Counter(), Counter(), Counter()
    pair_split: dict[tuple[str, str], Counter] = defaultdict(Counter)
    frames = Counter()
    for number, (sentence, word, sense, context) in cases:
        where = f"{path.name}:{number}"
        tokens = tokenize(sentence)
        lengths.append(len(tokens))
        if bad := unknown_tokens(tokens, v):
            err(f"{where}: no vector for {bad}")
        if word not in table or sense not in table.get(word, {}):
            err(f"{where}: {word}/{sense} is not in sense_words.tsv")
            continue
        if context not in ("before", "after"):
            err(f"{where}: context must be before or after, not {context!r}")
        if tokens.count(word) != 1:
            err(f"{where}: {word!r} occurs {tokens.count(word)} times (want exactly 1)")
        if not 6 <= len(tokens) <= max_tokens:
            err(f"{where}: {len(tokens)} tokens, want 6-{max_tokens}")
        probes = {p for ps in table[word].values() for p in ps}
        hits = [t for t in tokens if t != word and any(t in variants(p) for p in probes)]
        if hits:
            err(f"{where}: contains probe words of {word!r}: {hits}")
        frames[" ".join("_" if t == word else t for t in tokens)] += 1
        per_pair[word, sense] += 1
        per_word[word] += 1
        split[context] += 1
        pair_split[word, sense][context] += 1
    for frame, n in frames.items():
        if n > 1:
            err(f"{path.name}: the same frame is used {n} times: {frame}")
    for word, senses in table.items():
        for sense in senses:
            if per_pair[word, sense] < 4:
                err(f"{path.name}: {word}/{sense} has {per_pair[word, sense]} cases (want 4+)")
    missing = [w for w in required if w not in table]
    if missing:
        err(f"{path.name}: missing required words {missing}")
    if len(table) < min_words:
        err(f"{path.name}: {len(table)} words, want {min_words}+")
    if len(cases) < min_cases:
        err(f"{path.name}: {len(cases)} cases, want {min_cases}+")

    print(f"{path.relative_to(HERE.parent.parent.parent)}")
    print(f"  cases {len(cases)}: before {split['before']}, after {split['after']};"
          f" tokens per sentence min {min(lengths)} median {statistics.median(lengths):g} max {max(lengths)}")
    print(f"  words {len(table)}: {' '.join(table)}")
    for word, senses in table.items():
        parts = [f"{s} {per_pair[word, s]} ({pair_split[word, s]['before']}b/{pair_split[word, s]['after']}a)" for s in senses]
        print(f"    {word:8s} {per_word[word]:3d}: " + ", ".join(parts))


def main():
    v = load()
    check_adjectives(HERE / "adjectives_natural.tsv", v, 8, 24, 120, 280, min_adjs=100, min_nouns=150)
    check_adjectives(HERE / "adjectives_long.tsv", v, 25, 40, 45, 150, long=True)
    check_adjectives(HERE / "adjectives_natural3.tsv", v, 8, 40, 80, 220, min_adjs=120, min_nouns=160)
    table = check_sense_words(HERE / "sense_words.tsv", v)
    check_senses(HERE / "senses_natural.tsv", v, table)
    second = check_sense_words(HERE / "sense_words2.tsv", v)
    if clash := sorted(set(second) & (set(table) | set(check_sense_words(HERE.parent / "dev" / "sense_words.tsv", v)))):
        err(f"sense_words2.tsv: {clash} are also in another sense set")
    check_senses(HERE / "senses_natural2.tsv", v, second, SECOND_WORDS, 12, 120)
    third = check_sense_words(HERE / "sense_words3.tsv", v)
    if clash := sorted(set(third) & (set(table) | set(second) | set(check_sense_words(HERE.parent / "dev" / "sense_words.tsv", v)))):
        err(f"sense_words3.tsv: {clash} are also in another sense set")
    check_senses(HERE / "senses_natural3.tsv", v, third, (), 12, 120, max_tokens=40)
    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("ERROR:", e)
    print(f"{len(errors)} errors, {len(warnings)} warnings")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
