"""The sense meter: sense sets, the measure against a plain loop, and `inspect --sense / --sense-set`."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_cli.analysis import senses
from attn_cli.core.blocks import positional_encoding
from attn_cli.errors import InputError
from conftest import parse_json

LESSON_SET = senses.SENSES_DIR / "lesson.tsv"
WIDE = {"COLUMNS": "120"}


def cosine(a, b) -> float:
    return sum(x * y for x, y in zip(a, b)) / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def loop_score(x, probe_vectors) -> float:
    """Mean over the probes of cos(x, probe), one probe at a time."""
    return sum(cosine(x, p) for p in probe_vectors) / len(probe_vectors)


# --- the shipped lesson set -------------------------------------------------------------------


def test_lesson_set_has_the_lessons_words_and_every_probe_is_a_key(glove):
    table = senses.read_sense_set(LESSON_SET)
    assert {"mole", "tower", "bank", "bass", "crane", "plant", "spring", "creature"} <= set(table)
    assert set(table["mole"]) == {"animal", "chemistry", "skin"}
    for word, word_senses in table.items():
        assert len(word_senses) >= 2, word
        for sense, probes in word_senses.items():
            assert len(probes) >= 3, (word, sense)
            missing = [p for p in probes if p not in glove.key_to_index]
            assert not missing, (word, sense, missing)
    assert senses.resolve_sense_set("lesson") == (table, "lesson")
    assert "lesson" in senses.shipped_sense_sets()


def test_lesson_probes_describe_their_readings(glove):
    """Each sense's probes sit nearer their own reading's centroid than the word's other senses' probes do."""
    table = senses.read_sense_set(LESSON_SET)
    for word, word_senses in table.items():
        centroids = senses.sense_centroids([senses.probe_matrix(p, glove) for p in word_senses.values()])
        for k, probes in enumerate(word_senses.values()):
            scores = senses.sense_scores(senses.probe_matrix(probes, glove), centroids)  # [p, s]
            assert np.argmax(scores.mean(axis=0)) == k, word


# --- reading sense sets -------------------------------------------------------------------------


def test_parse_sense_set_skips_comments_and_header_and_gathers_probes():
    table = senses.parse_sense_set(
        ["# c", "", "word\tsense\tprobes", "Mole\tanimal\tMammal burrow", "mole\tskin\tskin wart", "mole\tanimal\tburrow shrew"]
    )
    assert table == {"mole": {"animal": ["mammal", "burrow", "shrew"], "skin": ["skin", "wart"]}}


@pytest.mark.parametrize(
    "lines, message",
    [
        (["mole\tanimal"], "line 1: expected 3"),
        (["# x", "mole\tanimal\t "], "line 2: an empty field"),
        (["# only a comment"], "no senses"),
    ],
)
def test_parse_sense_set_errors_name_the_line(lines, message):
    with pytest.raises(InputError, match=message):
        senses.parse_sense_set(lines, "f.tsv")


def test_parse_sense_options():
    assert senses.parse_sense_options(["animal=mammal,Burrow", "chem=molecule, atoms"]) == {
        "animal": ["mammal", "burrow"], "chem": ["molecule", "atoms"],
    }
    for bad in (["animal"], ["=mammal"], ["animal="], ["a=x", "a=y"]):
        with pytest.raises(InputError):
            senses.parse_sense_options(bad)


# --- the measure ----------------------------------------------------------------------------------


def test_sense_meter_matches_a_loop_over_probes(glove):
    rng = np.random.default_rng(0)
    probes = [["mammal", "burrow", "rodent"], ["molecule", "atoms"], ["skin", "wart", "melanoma", "biopsy"]]
    matrices = [senses.probe_matrix(p, glove) for p in probes]
    before, after = rng.normal(size=(4, 50)), rng.normal(size=(4, 50))
    table = senses.sense_meter(before, after, matrices)
    for r in range(4):
        for s, m in enumerate(matrices):
            assert table.before[r, s] == pytest.approx(loop_score(before[r], m.tolist()), abs=1e-12)
            assert table.after[r, s] == pytest.approx(loop_score(after[r], m.tolist()), abs=1e-12)
    np.testing.assert_allclose(table.change, table.after - table.before)
    assert table.nearest_before.tolist() == np.argmax(table.before, axis=1).tolist()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.lists(st.integers(1, 6), min_size=1, max_size=4))
def test_sense_meter_is_the_mean_cosine_for_any_vectors(seed, m, probe_counts):
    rng = np.random.default_rng(seed)
    d = 7
    probes = [rng.normal(size=(p, d)) * rng.uniform(0.1, 10, size=(p, 1)) for p in probe_counts]
    x = rng.normal(size=(m, d))
    table = senses.sense_meter(x, 3 * x, probes)
    for r in range(m):
        for s, p in enumerate(probes):
            assert table.before[r, s] == pytest.approx(loop_score(x[r], p.tolist()), abs=1e-12)
    np.testing.assert_allclose(table.after, table.before, atol=1e-12)  # a cosine ignores length


# --- inspect --sense / --sense-set ------------------------------------------------------------------


def embeddings_of(out):
    return np.array(out["embeddings"]["input"]), np.array(out["embeddings"]["output"])


def test_adhoc_senses_for_every_token(run, glove):
    out = parse_json(run("inspect", "one mole of carbon", "--head", "identity", "--mask", "none", "--embeddings",
                         "--sense", "animal=mammal,burrow", "--sense", "chem=molecule,atoms,gram", "--json"))
    e, e_prime = embeddings_of(out)
    rows = out["senses"]
    assert [r["index"] for r in rows] == [0, 1, 2, 3] and [r["token"] for r in rows] == out["tokens"]
    probes = {"animal": ["mammal", "burrow"], "chem": ["molecule", "atoms", "gram"]}
    for row in rows:
        i = row["index"]
        assert [s["name"] for s in row["senses"]] == ["animal", "chem"]
        for s in row["senses"]:
            vectors = [glove.get_vector(p).tolist() for p in probes[s["name"]]]
            assert s["before"] == pytest.approx(loop_score(e[i], vectors), abs=2e-5)
            assert s["after"] == pytest.approx(loop_score(e_prime[i], vectors), abs=2e-5)
            assert s["change"] == pytest.approx(s["after"] - s["before"], abs=2e-6)
        best = max(row["senses"], key=lambda s: s["before"])["name"]
        assert row["nearest_before"] == best
        assert row["nearest_after"] == max(row["senses"], key=lambda s: s["after"])["name"]


def test_adhoc_senses_with_focus_measure_one_token(run):
    out = parse_json(run("inspect", "one mole of carbon", "--head", "identity", "--focus", "mole",
                         "--sense", "animal=mammal,burrow", "--json"))
    assert [r["index"] for r in out["senses"]] == [1]


def test_sense_set_measures_the_words_it_knows(run, glove):
    out = parse_json(run("inspect", "one mole of carbon dioxide", "--mask", "none", "--head", "identity",
                         "--sense-set", "lesson", "--embeddings", "--json"))
    [row] = out["senses"]
    assert row["index"] == 1 and row["token"] == "mole"
    assert {s["name"] for s in row["senses"]} == {"animal", "chemistry", "skin"}
    table = senses.read_sense_set(LESSON_SET)
    e, _ = embeddings_of(out)
    word = glove.get_vector("mole") + positional_encoding(5, 50)[1]  # before = E: word + position, as the heads see it
    np.testing.assert_allclose(e[1], word, atol=1e-5)
    for s in row["senses"]:
        vectors = [glove.get_vector(p).tolist() for p in table["mole"][s["name"]]]
        assert s["before"] == pytest.approx(loop_score(word, vectors), abs=2e-5)


def test_sense_set_from_a_file(run, tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text("word\tsense\tprobes\ncat\tpet\tdog kitten\ncat\tjazz\tmusician saxophone\n")
    out = parse_json(run("inspect", "the cat sat", "--head", "identity", "--sense-set", path, "--json"))
    assert [r["token"] for r in out["senses"]] == ["cat"]


def test_sense_set_without_any_of_the_words_says_so(run):
    out = run("inspect", "the cat sat", "--head", "identity", "--sense-set", "lesson", "--json")
    assert parse_json(out)["senses"] == []
    view = run("inspect", "the cat sat", "--head", "identity", "--sense-set", "lesson", "--neighbors", "0", env=WIDE)
    assert view.exit_code == 0
    assert view.stderr.strip().splitlines() == ["attn: none of the tokens has senses in sense set lesson: nothing to measure"]
    assert "sense meter" not in view.stdout


def test_the_sense_meter_view(run):
    result = run("inspect", "one mole of carbon dioxide", "--mask", "none", "--head", "identity", "--sense-set", "lesson",
                 "--neighbors", "0", env=WIDE)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "sense meter" in out and "chemistry" in out and "before" in out and "change" in out
    assert "1:mole  nearer to" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (("--sense", "animal=mammal,burrowz,qqqzx"), "unknown probe words: 'burrowz' (did you mean 'burrows'?), 'qqqzx'"),
        (("--sense", "animal"), "expected NAME=word"),
        (("--sense", "a=cat", "--sense-set", "lesson"), "exclude each other"),
        (("--sense-set", "nosuchset"), "unknown sense set 'nosuchset'"),
        (("--sense-set", "missing/set.tsv"), "no such file"),
    ],
)
def test_sense_errors_are_exit_2(run, args, message):
    result = run("inspect", "one mole of carbon", "--head", "identity", *args, "--json")
    assert result.exit_code == 2
    assert message in result.stderr and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("attn: ")


def test_a_sense_set_with_an_unknown_probe_word_names_it(run, tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("cat\tpet\tdog kittenz\ncat\tjazz\tmusician\n")
    result = run("inspect", "the cat", "--head", "identity", "--sense-set", path, "--json")
    assert result.exit_code == 2 and "kittenz" in result.stderr and str(path) in result.stderr


def test_lesson_probes_are_not_words_of_the_lesson_sentences():
    """A probe word inside the sentence would make the meter measure the word's own context word."""
    from attn_cli.vectors.tokens import tokenize

    table = senses.read_sense_set(senses.SENSES_DIR / "lesson.tsv")
    sentences = ["A fluffy blue creature roamed the verdant forest.", "American shrew mole", "One mole of carbon dioxide.",
                 "Take a biopsy of the mole.", "the Eiffel tower", "a miniature tower"]
    words = {t for s in sentences for t in tokenize(s)}
    assert not words & {p for entry in table.values() for probes in entry.values() for p in probes}
