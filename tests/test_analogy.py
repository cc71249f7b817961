"""`attn analogy` and `attn similarity`: nearest neighbours against gensim, verdicts against the numbers."""

import random
import subprocess
import sys

import numpy as np
import pytest
from conftest import parse_json

from attn_cli.core import neighbors as search
from attn_cli.lesson import directions as nb
from attn_cli.vectors.store import Vectors


@pytest.fixture(scope="module")
def kv(glove):
    """gensim KeyedVectors over the SAME keys and vectors as the default data."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=glove.vector_size)
    kv.add_vectors(glove.index_to_key, np.asarray(glove.vectors))
    return kv


@pytest.fixture(scope="module")
def questions(glove):
    """A fixed sample of Google analogy questions whose four words are all keys."""
    from gensim.test.utils import datapath

    with open(datapath("questions-words.txt"), encoding="utf-8") as f:
        rows = [line.lower().split() for line in f if not line.startswith(":")]
    usable = [r for r in rows if len(r) == 4 and all(w in glove.key_to_index for w in r)]
    return random.Random(2014).sample(usable, 300)


# --- against gensim ------------------------------------------------------------------------------


def agreement(ours, theirs, questions):
    same = [ours(q)[0][0] == theirs(q)[0][0] for q in questions]
    return sum(same) / len(same)


@pytest.mark.slow
def test_3cosadd_top_answer_matches_gensim(glove, kv, questions):
    # a : b :: c : ?  ->  positive [b, c], negative [a]
    ours = lambda q: nb.most_similar(glove, positive=[q[1], q[2]], negative=[q[0]], topn=1)  # noqa: E731
    theirs = lambda q: kv.most_similar(positive=[q[1], q[2]], negative=[q[0]], topn=1)  # noqa: E731
    assert agreement(ours, theirs, questions) >= 0.99


@pytest.mark.slow
def test_3cosmul_top_answer_matches_gensim(glove, kv, questions):
    sample = questions[:100]
    ours = lambda q: nb.most_similar_cosmul(glove, positive=[q[1], q[2]], negative=[q[0]], topn=1)  # noqa: E731
    theirs = lambda q: kv.most_similar_cosmul(positive=[q[1], q[2]], negative=[q[0]], topn=1)  # noqa: E731
    assert agreement(ours, theirs, sample) >= 0.99


@pytest.mark.slow
def test_top_ten_lists_and_scores_match_gensim(glove, kv, questions):
    for q in questions[:20]:
        ours = nb.most_similar(glove, positive=[q[1], q[2]], negative=[q[0]], topn=10)
        theirs = kv.most_similar(positive=[q[1], q[2]], negative=[q[0]], topn=10)
        assert [k for k, _ in ours] == [k for k, _ in theirs]
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-5)


@pytest.mark.slow
def test_cats_cat_dog_answers_match_gensim(run, kv):
    for method, gensim_call in (("cosadd", kv.most_similar), ("cosmul", kv.most_similar_cosmul)):
        data = parse_json(run("analogy", "cats", "cat", "dog", "--method", method, "--top", "5", "--json"))
        expected = gensim_call(positive=["cats", "dog"], negative=["cat"], topn=5)
        assert [a["key"] for a in data["answers"]] == [k for k, _ in expected]
        np.testing.assert_allclose([a["similarity"] for a in data["answers"]], [s for _, s in expected], atol=1e-5)
        assert data["method"] == method and data["c"] == "dog"


def test_nearest_matches_a_full_sort(glove):
    d = nb.direction(glove, "cats", "cat")
    m = np.asarray(glove.vectors, dtype=np.float64)
    cos = m @ d / (np.linalg.norm(m, axis=1) * np.linalg.norm(d))  # float64, independent of Vectors.unit
    order = [i for i in np.argsort(-cos) if glove.index_to_key[i] not in ("cats", "cat")][:10]
    found = search.nearest(glove, d, 10, exclude=["cats", "cat"])
    assert [k for k, _ in found] == [glove.index_to_key[i] for i in order]
    np.testing.assert_allclose([s for _, s in found], cos[order], atol=1e-5)


def test_top_k_edges():
    scores = np.array([0.1, 0.9, 0.5, np.nan, 0.9])
    assert search.top_k(scores, 2).tolist() == [1, 4]  # ties by frequency rank
    assert search.top_k(scores, 10, exclude=[1]).tolist() == [4, 2, 0]  # NaN (no direction) never
    assert search.top_k(scores, 0).tolist() == []


@pytest.mark.parametrize("seed", range(40))
def test_top_k_is_the_sorted_order_over_many_blocks(seed):
    """The block maxima only narrow the search: the answer is the plain sort's (score, then row),
    with ties across blocks, -inf, NaN and excluded rows."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 20 * search.TOP_BLOCK))
    scores = np.round(rng.normal(size=n), int(rng.integers(0, 3))).astype(np.float32)  # coarse: many ties
    scores[rng.random(n) < rng.random() / 2] = -np.inf
    scores[rng.random(n) < 0.05] = np.nan
    k, exclude = int(rng.integers(0, 12)), rng.integers(0, n, size=int(rng.integers(0, 5))).tolist()
    kept = [i for i in range(n) if i not in exclude and not np.isnan(scores[i])]
    assert search.top_k(scores, k, exclude).tolist() == sorted(kept, key=lambda i: (-scores[i], i))[:k]


def test_no_gensim_or_scipy_on_the_default_path():
    code = (
        "import sys, atexit\n"
        "atexit.register(lambda: print([m for m in ('gensim', 'scipy') if m in sys.modules], file=sys.stderr))\n"
        "sys.argv = ['attn', 'analogy', 'cats', 'cat', 'dog', '--json']\n"
        "from attn_cli.cli import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith("[]")


# --- the pattern, in words -------------------------------------------------------------------


def expected_verdicts(glove):
    """Independently of the tool: raw vectors, raw dot products."""
    d = glove.get_vector("cats") - glove.get_vector("cat")
    dot = {w: float(glove.get_vector(w) @ d) for w in nb.default_probes()}
    plural_ok = all(dot[p] > dot[s] for s, p in nb.PLURAL_PAIRS)
    numbers = [dot[w] for w in ("one", "two", "three", "four")]
    return dot, plural_ok, all(a < b for a, b in zip(numbers, numbers[1:]))


def test_default_probes_json_and_verdicts(run, glove):
    dot, plural_ok, numbers_ok = expected_verdicts(glove)
    data = parse_json(run("analogy", "cats", "cat", "--json"))
    assert {"a", "b", "norm", "probes", "neighbors", "plural_above_singular", "numbers_increasing"} <= set(data)
    assert data["a"] == "cats" and data["b"] == "cat"
    assert data["norm"] == pytest.approx(np.linalg.norm(glove.get_vector("cats") - glove.get_vector("cat")))
    assert [p["key"] for p in data["probes"]] == nb.default_probes()
    np.testing.assert_allclose([p["dot"] for p in data["probes"]], [dot[w] for w in nb.default_probes()], rtol=1e-9)
    assert data["plural_above_singular"] is plural_ok
    assert data["numbers_increasing"] is numbers_ok
    assert len(data["neighbors"]) == 5 and not {"cats", "cat"} & {n["key"] for n in data["neighbors"]}


def test_lesson_numbers_are_the_real_glove_values(glove):
    dot, _, _ = expected_verdicts(glove)
    assert [dot[w] for w in ("one", "two", "three", "four")] == pytest.approx([-2.40, 0.79, 1.27, 1.49], abs=0.005)  # as printed


def test_default_sentences_match_the_numbers(run, glove):
    dot, plural_ok, numbers_ok = expected_verdicts(glove)
    out = " ".join(run("analogy", "cats", "cat").stdout.split())
    n = len(nb.PLURAL_PAIRS)
    if plural_ok:
        assert f"Every plural scored above its singular ({n} of {n} pairs)." in out
    else:
        assert "Not every plural scored above its singular" in out
    chain = " < ".join(f"{dot[w]:.2f}" for w in ("one", "two", "three", "four"))
    if numbers_ok:
        assert f"one < two < three < four held: {chain}." in out
    else:
        assert "one < two < three < four did not hold" in out
    for w in nb.default_probes():
        assert w in out


@pytest.fixture
def toy_vectors(tmp_path):
    """A small fast-format folder where the pattern breaks: 'cars' below 'car', 'three' below 'two'."""
    keys = ["cats", "cat", "dog", "dogs", "car", "cars", "one", "two", "three", "x"]
    d = np.array([1.0, 0.0, 0.0])
    along = {"dog": -1, "dogs": 2, "car": 1, "cars": -1, "one": 0, "two": 2, "three": 1}
    rows = [[2.0, 1.0, 0.0], [1.0, 1.0, 0.0]] + [[along[k], 0.5, 0.3] for k in keys[2:-1]] + [[0.0, 0.0, 1.0]]
    np.save(tmp_path / "vectors.npy", np.array(rows, dtype=np.float32))
    (tmp_path / "keys.txt").write_text("\n".join(keys) + "\n")
    assert np.allclose(np.array(rows[0]) - rows[1], d)
    return str(tmp_path)


def test_verdicts_say_when_the_pattern_breaks(run, toy_vectors):
    probes = ["dog", "dogs", "car", "cars", "one", "two", "three"]
    args = ["analogy", "cats", "cat", "--vectors", toy_vectors, *[a for p in probes for a in ("-p", p)]]
    data = parse_json(run(*args, "--json"))
    assert data["plural_above_singular"] is False and data["plural_exceptions"] == ["car/cars"]
    assert data["numbers_increasing"] is False and data["numbers_breaks"] == ["two/three"]
    out = " ".join(run(*args).stdout.split())  # sentences may wrap at the terminal width
    assert "Not every plural scored above its singular: 1 of 2 pairs did not (cars -1.00 <= car 1.00)." in out
    assert "one < two < three did not hold: it broke at two 2.00 >= three 1.00." in out


def test_custom_probes_without_pattern_get_no_sentences(run):
    data = parse_json(run("analogy", "king", "man", "--probe", "queen", "--probe", "woman", "--json"))
    assert [p["key"] for p in data["probes"]] == ["queen", "woman"]
    assert data["plural_above_singular"] is None and data["numbers_increasing"] is None
    out = run("analogy", "king", "man", "--probe", "queen", "--probe", "woman").stdout
    assert "plural" not in out and " < " not in out


def test_probes_file_and_stdin(run, tmp_path, glove):
    f = tmp_path / "probes.txt"
    f.write_text("# my probes\nmouse mice\n two  one\n")
    data = parse_json(run("analogy", "cats", "cat", "--probes-file", f, "--json"))
    assert [p["key"] for p in data["probes"]] == ["mouse", "mice", "two", "one"]
    d = glove.get_vector("cats") - glove.get_vector("cat")
    assert data["plural_above_singular"] is bool(glove.get_vector("mice") @ d > glove.get_vector("mouse") @ d)
    assert data["numbers_increasing"] is bool(glove.get_vector("two") @ d > glove.get_vector("one") @ d)
    assert parse_json(run("analogy", "cats", "cat", "--probes-file", "-", "--json", input="dog dogs"))["probes"][1]["key"] == "dogs"


def test_top(run):
    assert parse_json(run("analogy", "cats", "cat", "--top", "0", "--json"))["neighbors"] == []
    assert len(parse_json(run("analogy", "cats", "cat", "--top", "3", "--json"))["neighbors"]) == 3
    answers = parse_json(run("analogy", "cats", "cat", "dog", "--top", "8", "--json"))["answers"]
    assert len(answers) == 8 and not {"cats", "cat", "dog"} & {a["key"] for a in answers}
    assert run("analogy", "cats", "cat", "--top", "-1").exit_code == 2


def test_three_words_output(run):
    out = run("analogy", "cats", "cat", "dog").stdout
    assert "cat is to cats as dog is to ?" in out and "dogs" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["catz", "cat"], "unknown word: 'catz' (did you mean 'cat'?)"),
        (["cats", "cat", "dgo"], "unknown word: 'dgo'"),
        (["cats"], "analogy takes two words"),
        (["a", "b", "c", "d"], "analogy takes two words"),
        (["cat", "cat"], "'cat' and 'cat' have the same vector"),
        (["cats", "cat", "-p", "dgos"], "unknown word: 'dgos' (did you mean 'dogs'?); use --oov"),
        (["cats", "cat", "--probes-file", "/nonexistent/probes"], "cannot read the probes"),
    ],
)
def test_analogy_errors(run, args, message):
    result = run("analogy", *args)
    assert result.exit_code == (1 if "cannot read" in message else 2)
    assert message in result.stderr and result.stdout == ""


def test_oov_probes_skip_or_zero(run):
    skipped = parse_json(run("analogy", "cats", "cat", "-p", "dgos", "-p", "dog", "--oov", "skip", "--json"))
    assert [p["key"] for p in skipped["probes"]] == ["dog"]
    zeroed = parse_json(run("analogy", "cats", "cat", "-p", "dgos", "--oov", "zero", "--json"))
    assert zeroed["probes"] == [{"key": "dgos", "dot": 0.0}]


def test_limit(run):
    result = run("analogy", "cats", "cat", "--limit", "1000")
    assert result.exit_code == 2 and "unknown word" in result.stderr  # 'cats' is rarer than rank 1000


# --- similarity -------------------------------------------------------------------------------


def test_similarity_two_words(run, glove):
    u, v = glove.get_vector("cat"), glove.get_vector("dog")
    data = parse_json(run("similarity", "cat", "dog", "--json"))
    (pair,) = data["pairs"]
    assert pair["dot"] == pytest.approx(u @ v)
    assert pair["cosine"] == pytest.approx(u @ v / np.linalg.norm(u) / np.linalg.norm(v))
    assert pair["alignment"] == "aligned"
    assert data["norms"] == pytest.approx([np.linalg.norm(u), np.linalg.norm(v)])
    assert "cat · dog" in run("similarity", "cat", "dog").stdout


def test_similarity_all_pairs(run):
    data = parse_json(run("similarity", "cat", "dog", "the", "fluffy", "--json"))
    assert [(p["a"], p["b"]) for p in data["pairs"]] == [
        ("cat", "dog"), ("cat", "the"), ("cat", "fluffy"), ("dog", "the"), ("dog", "fluffy"), ("the", "fluffy"),
    ]  # fmt: skip
    for p in data["pairs"]:
        assert p["alignment"] == nb.alignment(p["cosine"])


def test_similarity_reads_its_words_from_stdin(run):
    piped = parse_json(run("similarity", "-", "--json", input="cat dog\nthe  fluffy\n"))
    assert piped == parse_json(run("similarity", "cat", "dog", "the", "fluffy", "--json"))
    alone = run("similarity", "-", input="cat\n")
    assert alone.exit_code == 2 and "needs at least two words" in alone.stderr


def test_alignment_words():
    assert nb.alignment(0.5) == "aligned"
    assert nb.alignment(0.0) == "unrelated"
    assert nb.alignment(-0.5) == "opposed"


@pytest.mark.parametrize("args, message", [(["cat"], "at least two words"), (["cat", "dgo"], "unknown word: 'dgo'")])
def test_similarity_errors(run, args, message):
    result = run("similarity", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_vectors_object_round_trip():
    v = Vectors(["a", "b"], np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32))
    dots, cosines = nb.similarities(np.array([v.get_vector("a"), v.get_vector("b")]))
    assert dots[0, 1] == pytest.approx(0.0, abs=1e-12) and cosines[0, 1] == pytest.approx(0.0, abs=1e-12)
    (key, cosine), = search.nearest(v, np.array([0.0, 1.0]), 1)
    assert key == "b" and cosine == pytest.approx(1.0, abs=1e-6)
