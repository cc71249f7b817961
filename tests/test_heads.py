"""The learned heads (`adjective`, `context`), their training code, and `attn heads list|train`."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from attn_cli import heads, training
from attn_cli.attention import Head, causal_mask, input_embeddings, multi_head, run_head
from attn_cli.tokens import tokenize
from conftest import parse_json

DATA = Path(__file__).resolve().parent.parent / "data" / "heads"
LESSON = "A fluffy blue creature roamed the verdant forest."


def load_build_script():
    spec = importlib.util.spec_from_file_location("build_heads", DATA / "build_heads.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build():
    return load_build_script()


@pytest.fixture(scope="module")
def heldout_senses(build):
    return build.senses_split(training.read_senses(DATA / "senses.tsv"))[1]


def embed(sentence, glove):
    tokens = tokenize(sentence)
    return tokens, input_embeddings(np.array([glove.get_vector(t) for t in tokens]), position=True)


# --- the gradient, written out, against finite differences --------------------------------------


def random_batches(rng, d=6, sizes=(3, 5, 5)):
    """A few random 'sentences' with random links, under both masks."""
    examples = []
    for n in sizes:
        for mask in ("causal", "none"):
            e = rng.normal(size=(n, d))
            q = int(rng.integers(1, n))
            keys = sorted({int(k) for k in rng.integers(0, q, size=2)})
            examples.append(training.Example([f"w{i}" for i in range(n)], e, e, {q: keys}, mask))
    return training.make_batches(examples, self_weight=0.3)


@pytest.mark.parametrize("l2, set_weight", [(0.0, 0.0), (0.01, 0.0), (0.0, 3.0), (0.01, 3.0)])
def test_attention_loss_gradient_matches_finite_differences(l2, set_weight):
    rng = np.random.default_rng(7)
    batches = random_batches(rng)
    w_q, w_k = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    _, grad_q, grad_k = training.attention_loss(w_q, w_k, batches, l2, set_weight)
    step = 1e-6
    for which, grad in ((0, grad_q), (1, grad_k)):
        numeric = np.zeros_like(grad)
        for index in np.ndindex(grad.shape):
            plus = [w_q.copy(), w_k.copy()]
            minus = [w_q.copy(), w_k.copy()]
            plus[which][index] += step
            minus[which][index] -= step
            loss = lambda w: training.attention_loss(*w, batches, l2, set_weight)[0]  # noqa: E731
            numeric[index] = (loss(plus) - loss(minus)) / (2 * step)
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_attention_loss_matches_run_head():
    """The loss is the cross-entropy of the very weights `inspect` shows."""
    rng = np.random.default_rng(3)
    e = rng.normal(size=(4, 5))
    example = training.Example(list("abcd"), e, e, {3: [1]}, "causal")
    w_q, w_k = rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    loss, _, _ = training.attention_loss(w_q, w_k, training.make_batches([example], self_weight=0.0))
    weights = run_head(e, Head("h", w_q, w_k, np.eye(5)), causal_mask(4)).weights
    assert loss == pytest.approx(-np.log(weights[3, 1]), rel=1e-12)


def test_adam_lowers_the_loss_and_is_deterministic():
    rng = np.random.default_rng(1)
    batches = random_batches(rng)
    runs = []
    for _ in range(2):
        params = [np.full((6, 3), 0.1), np.full((6, 3), -0.1)]
        history = training.adam(params, lambda a, b: training.attention_loss(a, b, batches), steps=60, lr=0.05)
        runs.append(params)
        assert history[-1] < 0.7 * history[0]
    np.testing.assert_array_equal(runs[0][0], runs[1][0])


def test_fit_value_map_is_the_ridge_minimum():
    rng = np.random.default_rng(5)
    x, t, w = rng.normal(size=(40, 4)), rng.normal(size=(40, 4)), rng.uniform(0.1, 1, 40)
    prior = 0.5 * np.eye(4)
    w_v = training.fit_value_map(x, t, w, prior, ridge=2.0)
    gradient = 2 * (x * w[:, None]).T @ (x @ w_v - t) + 2 * 2.0 * (w_v - prior)
    np.testing.assert_allclose(gradient, 0, atol=1e-9)


# --- rebuilding from the training script on a small budget ---------------------------------------


def test_small_budget_rebuild_of_the_adjective_head(glove, build):
    head, metrics, data = build.build_adjective(glove, n_train=300, steps=150)
    assert {w for w in data["words"]["adj"]["train"]}.isdisjoint(data["words"]["adj"]["heldout"])
    assert {w for w in data["words"]["noun"]["train"]}.isdisjoint(data["words"]["noun"]["heldout"])
    held_words = {w for row in data["heldout"] for w in (row[1], row[2])}
    train_words = {w for row in data["train"] for w in (row[1], row[2])}
    assert held_words.isdisjoint(train_words)
    assert metrics["top_on_key"] >= 0.8
    assert metrics["key_weight"] >= 0.5


def test_small_budget_rebuild_is_deterministic(glove, build):
    first, metrics, _ = build.build_adjective(glove, n_train=100, steps=30)
    again, metrics_again, _ = build.build_adjective(glove, n_train=100, steps=30)
    for key in ("w_q", "w_k", "w_v"):
        np.testing.assert_allclose(getattr(first, key), getattr(again, key), atol=1e-12)
    assert metrics == metrics_again


def test_small_budget_rebuild_of_the_context_head(glove, build):
    head, metrics, data = build.build_context(
        glove, per_template=1, steps=150, ridges=(30000.0,), priors=("identity",), held_per_template=1, scales=(0.6,)
    )
    train_senses, held_senses = data["senses"]
    assert set(train_senses).isdisjoint(held_senses)
    for mask in ("causal", "none"):
        assert metrics[f"context_{mask}"]["accuracy"] >= 0.85
        assert metrics[f"context_{mask}"]["accuracy"] > metrics[f"identity_{mask}"]["accuracy"]


def test_heldout_context_words_never_occur_in_training(build):
    train, held = build.senses_split(training.read_senses(DATA / "senses.tsv"))
    seen = set(train) | {w for table in train.values() for info in table.values() for w in info["probes"] + info["context"]}
    for word, table in held.items():
        assert word not in seen
        for info in table.values():
            assert seen.isdisjoint(info["probes"] + info["context"])
            assert len(info["probes"]) >= 2


# --- the shipped heads: metrics recomputed here, not read from their meta -----------------------


@pytest.fixture(scope="module")
def adjective(glove):
    return heads.load_head(DATA / "adjective.npz", glove.vector_size)


@pytest.fixture(scope="module")
def context(glove):
    return heads.load_head(DATA / "context.npz", glove.vector_size)


def test_shipped_adjective_head_on_heldout_sentences(glove, adjective):
    links = training.read_links(DATA / "adjective_heldout.tsv")
    examples = training.links_to_examples(links, glove, "causal")
    metrics = training.link_metrics(adjective, examples)
    assert metrics["queries"] >= 500
    assert metrics["top_on_key"] >= 0.95
    assert metrics["key_weight"] >= 0.6
    assert metrics["moved_toward_key"] >= 0.95  # cos(E'(noun), E(adj)) > cos(E(noun), E(adj))
    assert metrics["self_weight_other"] >= 0.6  # other tokens attend mostly to themselves
    recorded = heads.read_meta(DATA / "adjective.npz")["metrics"]
    assert metrics["top_on_key"] == pytest.approx(recorded["top_on_key"], abs=1e-9)


def test_adjective_heldout_words_are_unseen():
    def words(name):
        return {w for link in training.read_links(DATA / name) for w in (link.query, link.key)}

    assert words("adjective_heldout.tsv").isdisjoint(words("adjective_train.tsv"))


@pytest.fixture(scope="module")
def context_figures(glove, context, heldout_senses):
    cases = training.read_sense_cases(DATA / "context_heldout.tsv")
    identity = heads.identity_head(glove.vector_size)
    return {
        (name, mask): training.sense_shift_metrics([head], cases, heldout_senses, glove, mask)
        for name, head in (("context", context), ("identity", identity))
        for mask in ("causal", "none")
    }


@pytest.mark.parametrize("mask", ["causal", "none"])
def test_shipped_context_head_beats_identity_without_a_larger_update(context_figures, mask):
    learned, plain = context_figures[("context", mask)], context_figures[("identity", mask)]
    assert learned["cases"] >= 300
    assert learned["accuracy"] >= 0.95
    assert learned["accuracy"] >= plain["accuracy"] + 0.1
    assert learned["delta_ratio"] < 0.6 * plain["delta_ratio"]  # not by inflating ||Delta E||
    assert learned["mean_margin"] > plain["mean_margin"]


# --- the lesson's sentences ---------------------------------------------------------------------


def test_lesson_sentence_nouns_attend_to_their_adjectives(glove, adjective):
    tokens, e = embed(LESSON, glove)
    weights = run_head(e, adjective, causal_mask(len(tokens))).weights
    at = tokens.index
    assert weights[at("creature"), [at("fluffy"), at("blue")]].sum() >= 0.5
    assert weights[at("forest"), at("verdant")] >= 0.5
    assert weights[at("roamed"), at("roamed")] >= 0.5  # a verb keeps to itself


def test_lesson_sentence_through_inspect_json(run):
    out = parse_json(run("inspect", LESSON, "--json"))
    assert [h["name"] for h in out["heads"]] == ["adjective", "context"]
    tokens, weights = out["tokens"], np.array(out["heads"][0]["weights"])
    assert weights[tokens.index("creature"), [tokens.index("fluffy"), tokens.index("blue")]].sum() >= 0.5
    assert weights[tokens.index("forest"), tokens.index("verdant")] >= 0.5


def test_lesson_value_map_moves_creature_toward_fluffy(glove, adjective):
    tokens, e = embed(LESSON, glove)
    _, _, e_prime = multi_head(e, [adjective], causal_mask(len(tokens)))
    fluffy = glove.get_vector("fluffy")
    i = tokens.index("creature")
    cos = lambda a, b: a @ b / np.linalg.norm(a) / np.linalg.norm(b)  # noqa: E731
    assert cos(e_prime[i], fluffy) > cos(e[i], fluffy)


def sense_gains(sentence, word, head, mask, glove, senses):
    tokens, e = embed(sentence, glove)
    _, _, e_prime = multi_head(e, [head], causal_mask(len(tokens)) if mask == "causal" else None)
    i = tokens.index(word)
    gains = {}
    for sense, info in senses[word].items():
        c = training.sense_centroid(glove, info["probes"])
        gains[sense] = e_prime[i] @ c / np.linalg.norm(e_prime[i]) - e[i] @ c / np.linalg.norm(e[i])
    return gains


@pytest.mark.parametrize(
    "sentence, mask, sense",
    [
        ("american shrew mole", "causal", "animal"),
        ("take a biopsy of the mole", "causal", "skin"),
        ("one mole of carbon dioxide", "none", "chemistry"),
    ],
)
def test_mole_moves_toward_the_sense_its_context_selects(glove, context, heldout_senses, sentence, mask, sense):
    gains = sense_gains(sentence, "mole", context, mask, glove, heldout_senses)
    assert max(gains, key=gains.get) == sense


def test_context_after_the_word_is_hidden_by_the_causal_mask(glove, context, heldout_senses):
    """'one mole of carbon dioxide': under the causal mask mole sees only 'one', so it barely moves."""
    causal = sense_gains("one mole of carbon dioxide", "mole", context, "causal", glove, heldout_senses)
    none = sense_gains("one mole of carbon dioxide", "mole", context, "none", glove, heldout_senses)
    assert none["chemistry"] > 3 * abs(causal["chemistry"])


def test_river_bank(glove, context):
    senses = training.read_senses(DATA / "senses.tsv")
    gains = sense_gains("the river bank", "bank", context, "causal", glove, senses)
    assert gains["river"] > gains["money"]


def test_shipped_files_record_their_build(adjective, context):
    for head, name in ((adjective, "adjective"), (context, "context")):
        meta = heads.read_meta(DATA / f"{name}.npz")
        assert meta["name"] == name and meta["d_k"] == head.d_k <= 16
        assert meta["trained"] is True and meta["summary"]
        assert head.w_q.shape == (50, head.d_k)


# --- attn heads list ---------------------------------------------------------------------------


def test_heads_list_json(run):
    out = parse_json(run("heads", "list", "--json"))
    by_name = {h["name"]: h for h in out["heads"]}
    assert {"identity", "random", "adjective", "context"} <= set(by_name)
    assert out["default"] == ["adjective", "context"]
    assert by_name["identity"]["d_k"] == 50 and by_name["identity"]["trained"] is False
    assert by_name["adjective"]["d_k"] == 16 and by_name["adjective"]["trained"] is True
    assert "top_on_key" in by_name["adjective"]["metrics"]
    assert "context_causal" in by_name["context"]["metrics"]


def test_heads_list_with_vectors_of_another_dimension(run, tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    np.save(folder / "vectors.npy", np.ones((2, 3), dtype=np.float32))
    (folder / "keys.txt").write_text("a\nb\n")
    out = parse_json(run("heads", "list", "--vectors", folder, "--json"))
    by_name = {h["name"]: h for h in out["heads"]}
    assert out["dimension"] == 3 and by_name["identity"]["d_k"] == 3
    assert "does not fit" in by_name["adjective"]["description"]


def test_heads_list_for_a_person(run):
    result = run("heads", "list")
    assert result.exit_code == 0
    for name in ("identity", "random", "adjective", "context"):
        assert name in result.stdout
    assert "held-out" in result.stdout


# --- attn heads train ---------------------------------------------------------------------------

LINKS = """# a tiny links file
sentence\tquery\tkey
the fluffy dog ran .\tdog\tfluffy
a red car stopped .\tcar\tred
the old tall man sat .\tman\told
the old tall man sat .\tman\ttall
a small green frog sat .\tfrog\tsmall
a small green frog sat .\tfrog\tgreen
the cold dark night fell .\tnight\tdark
the warm soft bread was good .\tbread\tsoft
"""


@pytest.fixture
def links_file(tmp_path):
    path = tmp_path / "links.tsv"
    path.write_text(LINKS)
    return path


def test_heads_train_writes_a_head_inspect_can_use(run, links_file, tmp_path, glove):
    out_path = tmp_path / "mine.npz"
    result = run("heads", "train", links_file, out_path, "--steps", "40", "--d-k", "4", "--holdout", "0.3", "--json")
    summary = parse_json(result)
    assert summary["links"] == 8 and summary["train_sentences"] + summary["heldout_sentences"] == 6
    assert summary["heldout_sentences"] == 2 and summary["heldout"]["queries"] == 2
    assert 0 <= summary["heldout"]["top_on_key"] <= 1
    assert result.stderr == ""  # no progress bar when stderr is not a terminal
    head = heads.load_head(out_path, glove.vector_size)
    assert head.w_q.shape == (50, 4)
    assert heads.read_meta(out_path)["metrics"] == summary["heldout"]
    shown = parse_json(run("inspect", "the fluffy cat ran .", "--head", out_path, "--json"))
    assert shown["heads"][0]["d_k"] == 4


def test_heads_train_is_deterministic(run, links_file, tmp_path):
    for name in ("a.npz", "b.npz"):
        assert run("heads", "train", links_file, tmp_path / name, "--steps", "20", "--seed", "3").exit_code == 0
    a, b = (np.load(tmp_path / n, allow_pickle=False) for n in ("a.npz", "b.npz"))
    np.testing.assert_array_equal(a["w_q"], b["w_q"])


def test_heads_train_for_a_person(run, links_file, tmp_path):
    result = run("heads", "train", links_file, tmp_path / "h.npz", "--steps", "10")
    assert result.exit_code == 0
    assert "held-out" in result.stdout


def test_heads_train_without_holdout(run, links_file, tmp_path):
    summary = parse_json(run("heads", "train", links_file, tmp_path / "h.npz", "--steps", "10", "--holdout", "0", "--json"))
    assert summary["heldout"] == {} and summary["heldout_sentences"] == 0


def test_heads_train_never_overwrites_without_force(run, links_file, tmp_path):
    out_path = tmp_path / "h.npz"
    out_path.write_bytes(b"precious")
    result = run("heads", "train", links_file, out_path, "--steps", "5")
    assert result.exit_code == 2
    assert "--force" in result.stderr
    assert out_path.read_bytes() == b"precious"
    assert run("heads", "train", links_file, out_path, "--steps", "5", "--force").exit_code == 0
    assert out_path.read_bytes() != b"precious"


@pytest.mark.parametrize(
    "bad_line, message",
    [
        ("the dog ran .\tdog", "line 4"),
        ("the dog ran .\tcat\tdog", "line 4"),
        ("the dog ran .\tdog\tzebra", "line 4"),
        ("the qwxzt dog ran .\tdog\tthe", "qwxzt"),
        ("the dog ran .\tthe\tdog", "causal mask"),
        ("the dog ran .\t \tdog", "line 4"),
    ],
)
def test_heads_train_bad_lines_name_the_line(run, tmp_path, bad_line, message):
    path = tmp_path / "bad.tsv"
    path.write_text("# comment\nthe fluffy dog ran .\tdog\tfluffy\na red car stopped .\tcar\tred\n" + bad_line + "\n")
    result = run("heads", "train", path, tmp_path / "h.npz", "--steps", "5")
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stderr.startswith("attn: ") and "Traceback" not in result.stderr
    assert not (tmp_path / "h.npz").exists()


def test_heads_train_key_after_query_allowed_with_mask_none(run, tmp_path):
    path = tmp_path / "after.tsv"
    path.write_text("the dog ran .\tthe\tdog\na red car stopped .\ta\tcar\nthe big cat sat .\tthe\tcat\n")
    summary = parse_json(run("heads", "train", path, tmp_path / "h.npz", "--steps", "5", "--mask", "none", "--json"))
    assert summary["mask"] == "none"


@pytest.mark.parametrize(
    "args, message",
    [
        (["missing.tsv", "h.npz"], "no such file"),
        (["empty.tsv", "h.npz"], "no links"),
        (["links.tsv", "h.txt"], ".npz"),
    ],
)
def test_heads_train_usage_errors(run, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty.tsv").write_text("# nothing here\n\n")
    (tmp_path / "links.tsv").write_text(LINKS)
    result = run("heads", "train", *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_links_file_format_is_documented_in_help(run):
    result = run("heads", "train", "--help")
    assert result.exit_code == 0
    assert "TAB" in result.stdout


def test_read_links_skips_comments_blank_lines_and_header():
    links = training.parse_links(["# c", "", "sentence\tquery\tkey", "A B c\tA\tB"])
    assert [(l.sentence, l.query, l.key, l.line) for l in links] == [("A B c", "a", "b", 4)]
    assert json.dumps([l.line for l in links]) == "[4]"
