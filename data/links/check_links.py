"""Check the links sets (every .tsv in data/links, and data/heads/eval/adjectives_natural.tsv).

    python data/links/check_links.py

A links file: '#' comment lines, the header line 'sentence<TAB>query<TAB>key', then one link a
line with exactly 3 tab-separated fields. Words are runs of letters, digits, apostrophes and
hyphens, compared case-insensitively. For each link: the query word and the key word are whole
words of the sentence; the query word occurs exactly once; the occurrence of the key nearest to
the query (in word positions, an earlier one winning a tie) is unique (no other occurrence at the
same distance) and is not the query itself. Prints sentence and link counts per file; exits 1 on
any problem.
"""

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = sorted(HERE.glob("*.tsv")) + [HERE.parent / "heads" / "eval" / "adjectives_natural.tsv"]
HEADER = ["sentence", "query", "key"]
WORD = re.compile(r"(?:[^\W_]|['\u2019-])+")


def check_file(path: Path, problems: list[str]) -> tuple[int, int]:
    def bad(number: int, why: str):
        problems.append(f"{path.name}:{number}: {why}")

    seen_header = False
    sentences: set[str] = set()
    seen: set[tuple[str, ...]] = set()
    links = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not seen_header:
            if line.startswith("#") or not line.strip():
                continue
            if line.split("\t") != HEADER:
                bad(number, f"expected the header line {chr(9).join(HEADER)!r} before any data")
                return 0, 0
            seen_header = True
            continue
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not all(f.strip() for f in fields):
            bad(number, f"expected 3 non-empty tab-separated fields, got {len(fields)}")
            continue
        if tuple(fields) in seen:
            bad(number, "duplicate line")
        seen.add(tuple(fields))
        sentence, query, key = (f.strip() for f in fields)
        words = [w.lower() for w in WORD.findall(sentence)]
        query, key = query.lower(), key.lower()
        links += 1
        sentences.add(sentence)
        for role, word in (("query", query), ("key", key)):
            if word not in words:
                bad(number, f"{role} word {word!r} is not a whole word of the sentence")
        if query not in words or key not in words:
            continue
        if words.count(query) != 1:
            bad(number, f"query word {query!r} occurs {words.count(query)} times")
        q = words.index(query)
        places = [i for i, w in enumerate(words) if w == key]
        k = min(places, key=lambda i: (abs(i - q), i > q))
        if sum(abs(i - q) == abs(k - q) for i in places) > 1:
            bad(number, f"key word {key!r} has two occurrences equally near the query {query!r}")
        if k == q:
            bad(number, f"the key resolves to the query word {query!r} itself")
    if not seen_header:
        bad(0, "no header line")
    return len(sentences), links


def main() -> int:
    problems: list[str] = []
    for path in FILES:
        if not path.exists():
            problems.append(f"{path}: missing")
            continue
        n_sentences, n_links = check_file(path, problems)
        print(f"{path.relative_to(HERE.parent.parent)}: {n_sentences} sentences, {n_links} links")
    for p in problems:
        print("ERROR", p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 1
    print("all links files OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
