"""Write previous.tsv, the previous-word links set, from the sentences below.

    python data/links/build_previous.py

Every word from the second on is labelled: query = the word, key = the word right before it.
The sentences were hand-written for this project. The script checks its own conditions (8-20
words, only letters, every word once per sentence, a single final period and no other
punctuation) and exits with an error naming the sentence otherwise. Running it again gives the
same bytes.
"""

import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "previous.tsv"

SENTENCES = [
    "The old fisherman mended his nets on a quiet grey morning near our harbor.",
    "My little brother refuses to eat anything green at dinner.",
    "We walked along the beach until sunset turned everything orange.",
    "She keeps an old diary hidden under loose floorboards in her bedroom.",
    "Every summer our family drives north to visit cousins who live beside a lake.",
    "The bakery on Main Street sells warm bread each morning.",
    "He forgot his umbrella so rain soaked him completely during the walk home.",
    "Two cats sat by the window watching birds in our garden.",
    "Our teacher explained fractions using slices of a chocolate cake.",
    "I usually drink coffee before work but today tea seemed better.",
    "The train was late because snow covered several tracks outside town.",
    "After lunch the children played football until their parents called them inside.",
    "Grandpa tells funny stories about growing up on a small farm.",
    "Please close that door quietly when you leave tonight.",
    "A gentle breeze carried the smell of fresh pine through open windows.",
    "They painted their kitchen yellow and hung new curtains last weekend.",
    "Most shops in this village close early on Sunday afternoons.",
    "My neighbor grows huge pumpkins every autumn for a local competition.",
    "The museum guide showed us ancient coins found near old Roman roads.",
    "You should water these plants twice a week during hot weather.",
    "He practiced piano for hours because his recital was next Friday.",
    "Our dog barks loudly whenever someone knocks at night.",
    "She wrote a long letter to her best friend living abroad.",
    "The small boat drifted slowly toward rocky cliffs under dark clouds.",
    "We still need fresh milk and butter from the corner store before dinner.",
    "That bridge was built by skilled workers almost two centuries ago.",
    "Quiet students sometimes have brilliant ideas nobody expects.",
    "The pilot calmly announced a short delay caused by strong winds.",
    "Her favorite sweater shrank after one wash in hot water.",
    "Farmers harvest wheat late in summer when fields turn golden.",
    "I lost my keys somewhere between the station and our office.",
    "A friendly waiter brought us bread while we studied the menu.",
    "Heavy traffic made everyone late for this important meeting.",
    "The library stays open until nine on weekdays.",
    "Young foxes sometimes wander into city parks looking for food.",
    "My aunt bakes delicious apple pies whenever relatives come to visit.",
    "He carefully folded each shirt and packed them into his suitcase.",
    "Bright stars filled the sky above our tent that night.",
    "An old clock in our hallway stopped ticking exactly at midnight.",
    "Nobody noticed when the tiny kitten climbed onto my desk.",
    "Several volunteers picked up litter along the river after heavy flooding last spring.",
    "Tom finally finished painting the fence before it got dark.",
]

HEADER = """\
# previous.tsv: the previous-word set, written by build_previous.py (do not edit by hand).
# Hand-written everyday sentences of 8-20 words, letters only, each word once in its sentence.
# One link a line: every word from the second on (query) and the word right before it (key).
sentence\tquery\tkey
"""


def check(sentence: str) -> list[str]:
    """The words of a sentence (lower case), or exit with an error if it breaks the rules."""
    def fail(why: str):
        sys.exit(f"build_previous.py: {why}: {sentence!r}")

    if not sentence.endswith(".") or sentence.count(".") != 1:
        fail("must end in a single period, with no other one")
    words = sentence[:-1].split(" ")
    if not all(re.fullmatch(r"[A-Za-z]+", w) for w in words):
        fail("words must be letters only, separated by single spaces")
    lower = [w.lower() for w in words]
    if len(set(lower)) != len(lower):
        fail(f"repeated word(s) {sorted({w for w in lower if lower.count(w) > 1})}")
    if not 8 <= len(lower) <= 20:
        fail(f"{len(lower)} words, not 8-20")
    return lower


def main() -> None:
    if len(set(SENTENCES)) != len(SENTENCES):
        sys.exit("build_previous.py: duplicate sentences")
    lines = [HEADER]
    for sentence in SENTENCES:
        words = check(sentence)
        lines += [f"{sentence}\t{words[i]}\t{words[i - 1]}\n" for i in range(1, len(words))]
    text = "".join(lines)
    if "--check" in sys.argv[1:]:  # the committed file is what this script writes
        if OUT.read_text(encoding="utf-8") != text:
            sys.exit(f"build_previous.py: {OUT.name} differs from what the script writes; rerun it")
        print(f"{OUT.name} is up to date")
        return
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.name}: {len(SENTENCES)} sentences, {len(lines) - 1} links")


if __name__ == "__main__":
    main()
