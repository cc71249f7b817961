"""The sense meter: how near a token's embedding is to each reading of an ambiguous word,
before the heads (E) and after them (E' = E + Delta E).

A sense is a list of probe words that describe one reading ("mole" as an animal: mammal
burrow rodent ...). The score of a vector x for a sense with probes P is the mean cosine of x
with the probes' word vectors (no position), computed as x . mean(unit probe vectors) / |x|.

A sense set maps words to their senses, {word: {sense: [probe words]}}. It is read from a
TSV file, one sense a line: `word<TAB>sense<TAB>probe words separated by spaces`, with `#`
comments, blank lines and an optional header line `word<TAB>sense<TAB>probes`. Named sets are
files data/senses/NAME.tsv shipped beside the package.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attn_cli.io.files import read_text, tsv_rows, user_path
from attn_cli.errors import InputError
from attn_cli.vectors.store import DATA_DIR, Vectors

SENSES_DIR = DATA_DIR / "senses"
HEADER = ["word", "sense", "probes"]

SenseSet = dict[str, dict[str, list[str]]]  # word -> sense name -> probe words


# --- reading senses -----------------------------------------------------------------------------


def parse_sense_set(lines, source: str = "<senses>") -> SenseSet:
    """A sense set from lines `word<TAB>sense<TAB>probe words` (separated by spaces or commas); bad lines raise InputError naming them.
    A sense given on several lines gathers the probes of all of them."""
    table: SenseSet = {}
    for _, (word, sense, probes) in tsv_rows(lines, HEADER, "word, sense, probe words", source):
        word, probes = word.lower(), probes.lower().replace(",", " ").split()  # spaces or commas, as --sense takes them
        known = table.setdefault(word, {}).setdefault(sense, [])
        known += [p for p in probes if p not in known]
    if not table:
        raise InputError(f"{source}: no senses (lines 'word<TAB>sense<TAB>probe words')")
    return table


def read_sense_set(path: str | Path) -> SenseSet:
    return parse_sense_set(read_text(path, "a sense set").splitlines(), str(path))


def shipped_sense_sets() -> list[str]:
    """Names of the sense sets shipped in data/senses."""
    return sorted(p.stem for p in SENSES_DIR.glob("*.tsv")) if SENSES_DIR.is_dir() else []


def resolve_sense_set(spec: str) -> tuple[SenseSet, str]:
    """(the set, where it came from) for `--sense-set NAME|FILE`: a shipped set's name, or a TSV file."""
    shipped = SENSES_DIR / f"{spec}.tsv"
    if spec and "/" not in spec and "\\" not in spec and shipped.is_file():
        return read_sense_set(shipped), spec
    path = user_path(spec, "--sense-set")
    if spec and (path.exists() or spec.endswith(".tsv") or "/" in spec):
        return read_sense_set(path), str(path)
    names = ", ".join(shipped_sense_sets()) or "none shipped"
    raise InputError(f"unknown sense set {spec!r}: use a shipped set ({names}) or a path to a .tsv file")


def parse_sense_options(specs: list[str]) -> dict[str, list[str]]:
    """`--sense NAME=w1,w2,...` options -> {name: [probe words]}, in the order given."""
    senses: dict[str, list[str]] = {}
    for spec in specs:
        name, eq, words = spec.partition("=")
        probes = [w for w in words.replace(",", " ").lower().split() if w]
        if not eq or not name.strip() or not probes:
            raise InputError(f"--sense {spec!r}: expected NAME=word,word,... (for example animal=mammal,burrow)")
        name = name.strip()
        if name in senses:
            raise InputError(f"--sense {name!r} is given twice")
        senses[name] = list(dict.fromkeys(probes))
    return senses


def _rows(words: list[str], vectors: Vectors) -> list[int | None]:
    from attn_cli.vectors.tokens import key_rows  # one way to find rows: a scan for a few words, the index for many

    return key_rows(words, vectors)


def unknown_probes(senses: dict[str, list[str]], vectors: Vectors) -> list[str]:
    """Probe words without a vector, each once, in order."""
    words = list(dict.fromkeys(w for probes in senses.values() for w in probes))
    return [w for w, row in zip(words, _rows(words, vectors)) if row is None and not (vectors.oov_vector and vectors.has_vector(w))]


def check_probes(senses: dict[str, list[str]], vectors: Vectors, where: str) -> None:
    """Raise InputError naming every probe word that has no vector (and a close spelling where one exists)."""
    unknown = unknown_probes(senses, vectors)
    if unknown:
        noun = "word" if len(unknown) == 1 else "words"
        named = []
        for word in unknown:
            hint = vectors.close_spelling(word)
            named.append(f"{word!r} (did you mean {hint!r}?)" if hint else repr(word))
        raise InputError(f"{where}: unknown probe {noun}: {', '.join(named)}")


def check_sense_set(table: SenseSet, vectors: Vectors, source: str) -> None:
    """Every probe word of the set must have a vector."""
    check_probes({f"{w}/{s}": p for w, senses in table.items() for s, p in senses.items()}, vectors, source)


def probe_matrix(words: list[str], vectors: Vectors) -> np.ndarray:  # -> [p, d]
    """The probes' word vectors (no position)."""
    from attn_cli.vectors.tokens import embed

    return embed(words, vectors).vectors


# --- the measure ------------------------------------------------------------------------------


@dataclass
class SenseTable:
    """Scores of m vectors for s senses, before and after the heads."""

    before: np.ndarray  # [m, s] mean cosine of E_i with each sense's probes
    after: np.ndarray  # [m, s] the same for E'_i

    @property
    def change(self) -> np.ndarray:  # [m, s]
        return self.after - self.before

    @property
    def nearest_before(self) -> np.ndarray:  # [m] index of the highest-scoring sense (first on a tie)
        return np.argmax(self.before, axis=1)

    @property
    def nearest_after(self) -> np.ndarray:  # [m]
        return np.argmax(self.after, axis=1)


def sense_centroids(probes: list[np.ndarray]) -> np.ndarray:  # s x [p_s, d] -> [s, d]
    """Each sense's mean unit probe vector: x . centroid / |x| is the mean cosine of x with its probes."""
    centroids = []
    for p in probes:
        norms = np.linalg.norm(p, axis=1, keepdims=True)  # [p, 1]
        unit = np.divide(p, norms, out=np.zeros_like(p), where=norms > 0)  # [p, d]
        centroids.append(unit.mean(axis=0))  # [d]
    return np.array(centroids).reshape(len(probes), -1)


def sense_scores(x: np.ndarray, centroids: np.ndarray) -> np.ndarray:  # [m, d], [s, d] -> [m, s]
    """Mean cosine of each row of x with each sense's probes (0 for a zero row: it has no direction)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)  # [m, 1]
    dots = x @ centroids.T  # [m, d] x [d, s] -> [m, s]
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def sense_meter(before: np.ndarray, after: np.ndarray, probes: list[np.ndarray]) -> SenseTable:
    """The whole table: rows of E [m, d], rows of E' [m, d], one probe matrix [p_s, d] per sense."""
    centroids = sense_centroids(probes)  # [s, d]
    return SenseTable(sense_scores(before, centroids), sense_scores(after, centroids))


# --- senses of an inspected sentence -----------------------------------------------------------


def measure_senses(tokens: list[str], e, e_prime, vectors: Vectors, *, adhoc: dict[str, list[str]] | None = None,
                   sense_set: SenseSet | None = None, set_name: str = "", focus: int | None = None) -> tuple[list, str | None]:
    """The sense meter's rows (attn_cli.results.SenseRow per measured token) for E and E' [n, d], and a note
    saying why no token was measured (None when some were).

    Ad-hoc senses are measured for every token (or the `focus` token); a sense set, for the
    tokens it has senses for.
    """
    from attn_cli.results.senses import SenseRow

    indices = [focus] if focus is not None else list(range(len(tokens)))
    groups: dict[tuple, list[int]] = {}  # (sense names, probes) -> token indices that use them
    for i in indices:
        senses = adhoc if adhoc is not None else (sense_set or {}).get(tokens[i])
        if senses:
            groups.setdefault(tuple((name, tuple(p)) for name, p in senses.items()), []).append(i)
    rows: dict[int, SenseRow] = {}
    for key, members in groups.items():
        names = [name for name, _ in key]
        table = sense_meter(e[members], e_prime[members], [probe_matrix(list(p), vectors) for _, p in key])
        for r, i in enumerate(members):
            rows[i] = SenseRow(
                index=i, token=tokens[i], names=names, before=table.before[r].tolist(), after=table.after[r].tolist(),
                nearest_before=names[table.nearest_before[r]], nearest_after=names[table.nearest_after[r]],
            )
    found = [rows[i] for i in sorted(rows)]
    note = None
    if not found and sense_set is not None:
        where = f"sense set {set_name}" if set_name else "the sense set"
        note = f"{tokens[focus]!r} has no senses in {where}" if focus is not None else f"none of the tokens has senses in {where}: nothing to measure"
    return found, note


def word_meter(model, rows: list, adhoc: dict[str, list[str]] | None, sense_set: SenseSet | None, focus: int | None):
    """The lesson's heads' meter in the shape every model's takes (results.meter.SenseMeter): the --focus token, else
    the first measured, read at E and E′, and the same token alone as the whole input (None when no token was measured)."""
    from attn_cli.analysis.meter import readings
    from attn_cli.results.meter import SenseMeter

    row = next((r for r in rows if focus is None or r.index == focus), None)
    if row is None:
        return None
    senses = adhoc if adhoc is not None else sense_set[row.token]
    centroids = sense_centroids([probe_matrix(p, model.vectors) for p in senses.values()])  # [s, d]
    alone = model.run(row.token).streams()[:, 0]  # [2, d]: E and E' of the word as the whole input
    labels = ["E", "E′"]
    return SenseMeter(row.token, row.names, "mean cosine with each sense's probe words' vectors",
                      readings(np.array([row.before, row.after]), row.names, labels), readings(sense_scores(alone, centroids), row.names, labels),
                      index=row.index, causal=model.causal)
