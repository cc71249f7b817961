"""Validate the hand-written development sets in this folder and print their counts.

    python data/heads/dev/check_dev.py

adjectives.tsv  links format ("sentence<TAB>query<TAB>key"): one line per (noun, attributive adjective).
sense_words.tsv "word<TAB>sense<TAB>probes" (5 probe words a sense).
senses.tsv      "sentence<TAB>word<TAB>sense<TAB>context" (context: before | after).

Errors break a rule and make the exit status 1; warnings are printed but do not.
"""

import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent))

from attn_cli.vectors.tokens import tokenize  # noqa: E402
from attn_cli.vectors.loading import load  # noqa: E402

ADJ_HEADER = ["sentence", "query", "key"]
WORDS_HEADER = ["word", "sense", "probes"]
SENSES_HEADER = ["sentence", "word", "sense", "context"]
PROBES_PER_SENSE = 5

# May stand between a labelled adjective and its noun (besides the noun's other labelled adjectives).
ADVERBS = set("very rather quite really fairly extremely incredibly terribly awfully ridiculously so too slightly pretty most more "
              "surprisingly unusually remarkably somewhat".split())
CONNECTORS = {",", "and", "or", "but"}
# Words that are not mainly adjectives (nouns, verbs, adverbs too often): never labelled as adjectives.
NOT_MAINLY_ADJECTIVES = set(
    "orange gold golden light silver fast fine hard kind pretty cool plain round square still open well right left "
    "close present iron stone glass paper leather cotton silk plastic metal steel brass copper chocolate cherry olive "
    "navy ivory amber coral violet peach salmon tan cream rose lime mint key chief major general top prime live "
    "content fancy back front side fun".split())
COPULAS = set("is was were are be been being seems seemed looks looked feels felt tastes tasted smells smelled sounds "
              "sounded became become got stayed remained 's".split())
IRREGULAR_PLURALS = set("people children men women feet teeth mice geese".split())

errors: list[str] = []
warnings: list[str] = []


def error(where: str, message: str) -> None:
    errors.append(f"{where}: {message}")


def warn(where: str, message: str) -> None:
    warnings.append(f"{where}: {message}")


def read_table(path: Path, header: list[str], comment_first: bool) -> list[tuple[int, list[str]]]:
    """(line number, fields) rows after the header; checks the comment line, header and field count."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows, seen_header = [], False
    if comment_first and (not lines or not lines[0].startswith("#")):
        error(f"{path.name}:1", "the first line must be a '#' comment")
    for number, line in enumerate(lines, start=1):
        where = f"{path.name}:{number}"
        if line.startswith("#"):
            if seen_header:
                error(where, "comment after the header")
            continue
        if not line.strip():
            error(where, "blank line")
            continue
        fields = line.split("\t")
        if not seen_header:
            if fields != header:
                error(where, f"expected the header {header!r}, found {fields!r}")
            seen_header = True
            continue
        if len(fields) != len(header) or any(f != f.strip() or not f for f in fields):
            error(where, f"expected {len(header)} non-empty tab-separated fields without outer spaces")
            continue
        rows.append((number, fields))
    if not seen_header:
        error(path.name, "no header")
    return rows


def check_tokens(where: str, tokens: list[str], vectors, low: int, high: int) -> None:
    unknown = sorted({t for t in tokens if not vectors.has_vector(t)})
    if unknown:
        error(where, f"no vector for {', '.join(unknown)}")
    if not low <= len(tokens) <= high:
        error(where, f"{len(tokens)} tokens, expected {low}-{high}")


def is_plural(noun: str) -> bool:
    return noun in IRREGULAR_PLURALS or (noun.endswith("s") and not noun.endswith("ss"))


# --- adjectives.tsv -------------------------------------------------------------------------------


def check_adjectives(vectors) -> None:
    path = HERE / "adjectives.tsv"
    rows = read_table(path, ADJ_HEADER, comment_first=True)
    groups: dict[str, list[tuple[int, str, str]]] = {}
    order: list[str] = []
    for number, (sentence, query, key) in rows:
        if sentence not in groups:
            order.append(sentence)
        elif order[-1] != sentence:
            error(f"{path.name}:{number}", "the lines of a sentence must be consecutive")
        groups.setdefault(sentence, []).append((number, query, key))
    all_keys = {key for g in groups.values() for _, _, key in g}
    all_nouns = {query for g in groups.values() for _, query, _ in g}

    stats = Counter()
    per_noun = Counter()
    for sentence in order:
        group = groups[sentence]
        first = group[0][0]
        where = f"{path.name}:{first}"
        tokens = tokenize(sentence)
        check_tokens(where, tokens, vectors, 8, 40)
        pairs = Counter((q, k) for _, q, k in group)
        for (q, k), n in pairs.items():
            if n > 1:
                error(where, f"link {q} <- {k} listed {n} times")
        labels: dict[str, list[str]] = defaultdict(list)
        for number, query, key in group:
            w = f"{path.name}:{number}"
            if query != query.lower() or key != key.lower():
                error(w, "query and key are written lower-case")
            if tokenize(query) != [query] or tokenize(key) != [key]:
                error(w, "query and key must each be one token")
            if query == key:
                error(w, "a word linked to itself")
            if key in NOT_MAINLY_ADJECTIVES:
                error(w, f"{key!r} is not mainly an adjective")
            if key in all_nouns:
                error(w, f"{key!r} is also labelled as a noun")
            labels[query].append(key)
        phrases = []  # (first key position, noun position, noun)
        for query, keys in labels.items():
            n_query = tokens.count(query)
            if n_query != 1:
                error(where, f"noun {query!r} occurs {n_query} times (must be once)")
                continue
            q = tokens.index(query)
            positions = []
            for key in keys:
                n_key = tokens.count(key)
                if n_key == 0:
                    error(where, f"adjective {key!r} is not a token")
                    continue
                if n_key > 1:
                    warn(where, f"adjective {key!r} occurs {n_key} times")
                k = max((i for i, t in enumerate(tokens) if t == key and i < q), default=None)
                if k is None:
                    error(where, f"adjective {key!r} does not come before {query!r}")
                    continue
                positions.append(k)
            if not positions:
                continue
            start = min(positions)
            inside = tokens[start:q]
            for t in inside:
                if t not in keys and t not in ADVERBS and t not in CONNECTORS:
                    error(where, f"{t!r} stands between {query!r} and its adjectives: not attributive in its own phrase, "
                                 "or an unlabelled word (noun modifier?) in a labelled phrase")
            if start > 0 and tokens[start - 1] in all_keys and tokens[start - 1] not in keys:
                error(where, f"{tokens[start - 1]!r} right before {query!r}'s adjectives looks like an unlabelled adjective")
            if q + 1 < len(tokens) and tokens[q + 1] in all_nouns:
                warn(where, f"{query!r} is followed by {tokens[q + 1]!r}: a noun modifier?")
            phrases.append((start, q, query))
            # counts
            per_noun[len(keys)] += 1
            stats["labelled nouns"] += 1
            stats["plural nouns"] += is_plural(query)
            stats["phrases with an adverb"] += any(t in ADVERBS for t in inside)
            stats["phrases with a comma"] += "," in inside
            stats["phrases with 'and'"] += "and" in inside
        stats["sentences"] += 1
        stats["links"] += len(group)
        phrases.sort()
        if len(phrases) >= 2:
            stats["sentences with 2+ labelled phrases"] += 1
            gaps = [b[0] - a[1] for a, b in zip(phrases, phrases[1:])]
            stats["... of which a later phrase starts <= 6 tokens after an earlier noun"] += min(gaps) <= 6
        if len(phrases) >= 3 and 25 <= len(tokens) <= 40:
            stats["long sentences (25-40 tokens, 3+ labelled phrases)"] += 1
        predicative = any(t in COPULAS and any(u in all_keys or u in PREDICATIVE_EXTRA for u in tokens[i + 1:i + 4])
                          for i, t in enumerate(tokens))
        stats["sentences with a predicative adjective (heuristic)"] += predicative

    print(f"{path.relative_to(HERE.parent.parent.parent)}")
    for name, n in stats.items():
        print(f"  {name:<58} {n}")
    print(f"  {'adjectives per labelled noun':<58} " + ", ".join(f"{k}: {per_noun[k]}" for k in sorted(per_noun)))
    lengths = [len(tokenize(s)) for s in order]
    if lengths:
        print(f"  {'tokens per sentence (min / mean / max)':<58} {min(lengths)} / {sum(lengths) / len(lengths):.1f} / {max(lengths)}")


PREDICATIVE_EXTRA = set("cold delicious stunning terrible unsafe empty awful nice strange bland overpriced small warm cozy "
                        "easy tricky dull messy comfortable bright spacious grumpy gray gloomy sweet lovely clean modern "
                        "weak uncomfortable brutal long".split())


# --- sense_words.tsv and senses.tsv ---------------------------------------------------------------


def check_senses(vectors) -> None:
    words_path, senses_path = HERE / "sense_words.tsv", HERE / "senses.tsv"
    probes: dict[tuple[str, str], list[str]] = {}
    for number, (word, sense, probe_text) in read_table(words_path, WORDS_HEADER, comment_first=False):
        where = f"{words_path.name}:{number}"
        if (word, sense) in probes:
            error(where, f"{word}/{sense} listed twice")
        plist = probe_text.split(" ")
        if len(plist) != PROBES_PER_SENSE or len(set(plist)) != len(plist):
            error(where, f"expected {PROBES_PER_SENSE} distinct probe words separated by single spaces")
        for p in plist + [word]:
            if tokenize(p) != [p]:
                error(where, f"{p!r} is not one lower-case token")
            elif not vectors.has_vector(p):
                error(where, f"no vector for {p!r}")
        if word in plist:
            error(where, "the word is its own probe")
        probes[(word, sense)] = plist
    senses_of: dict[str, list[str]] = defaultdict(list)
    for word, sense in probes:
        senses_of[word].append(sense)
    for word, senses in senses_of.items():
        if len(senses) < 2:
            error(words_path.name, f"{word!r} has only one sense")
        seen: dict[str, str] = {}
        for sense in senses:
            for p in probes[(word, sense)]:
                if p in seen:
                    error(words_path.name, f"probe {p!r} of {word!r} stands for both {seen[p]} and {sense}")
                seen[p] = sense
    forbidden = {word: {p for s in senses for p in probes[(word, s)]} for word, senses in senses_of.items()}

    cases: Counter = Counter()
    sentences_seen: dict[str, int] = {}
    for number, (sentence, word, sense, context) in read_table(senses_path, SENSES_HEADER, comment_first=False):
        where = f"{senses_path.name}:{number}"
        tokens = tokenize(sentence)
        check_tokens(where, tokens, vectors, 6, 25)
        if sentence in sentences_seen:
            error(where, f"the same sentence as line {sentences_seen[sentence]}")
        sentences_seen[sentence] = number
        if (word, sense) not in probes:
            error(where, f"{word}/{sense} is not in {words_path.name}")
            continue
        if context not in ("before", "after"):
            error(where, f"context must be 'before' or 'after', not {context!r}")
        n = tokens.count(word)
        if n != 1:
            error(where, f"{word!r} occurs {n} times (must be once)")
        bad = sorted({t for t in tokens if t in forbidden[word]})
        if bad:
            error(where, f"contains probe words of {word!r}: {', '.join(bad)}")
        for other in senses_of:
            if other != word and other in tokens:
                warn(where, f"also contains the ambiguous word {other!r}")
        cases[(word, sense, context)] += 1

    print(f"{words_path.relative_to(HERE.parent.parent.parent)}")
    print(f"  {'ambiguous words':<58} {len(senses_of)}")
    print(f"  {'word senses':<58} {len(probes)}")
    print(f"{senses_path.relative_to(HERE.parent.parent.parent)}")
    print(f"  {'cases':<58} {sum(cases.values())}")
    print(f"  {'context before / after':<58} {sum(n for (_, _, c), n in cases.items() if c == 'before')} / "
          f"{sum(n for (_, _, c), n in cases.items() if c == 'after')}")
    lengths = [len(tokenize(s)) for s in sentences_seen]
    if lengths:
        print(f"  {'tokens per sentence (min / mean / max)':<58} {min(lengths)} / {sum(lengths) / len(lengths):.1f} / {max(lengths)}")
    for word, senses in senses_of.items():
        parts = []
        for sense in senses:
            b, a = cases[(word, sense, "before")], cases[(word, sense, "after")]
            parts.append(f"{sense} {b}+{a}")
            if not 4 <= a + b <= 6:
                error(senses_path.name, f"{word}/{sense}: {a + b} cases, expected 4-6")
            if abs(a - b) > 1:
                error(senses_path.name, f"{word}/{sense}: {b} before, {a} after; expected half and half")
        print(f"  {word:<12} " + ", ".join(parts))


def main() -> int:
    vectors = load()
    check_adjectives(vectors)
    check_senses(vectors)
    for w in warnings:
        print(f"warning: {w}")
    for e in errors:
        print(f"error: {e}")
    print(f"{len(errors)} errors, {len(warnings)} warnings")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
