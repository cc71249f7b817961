"""`attn direction` and `--steer`: the direction's math against explicit loops, llama.cpp's control-vector file written and read
back with gguf-py, steering as Add edits of resid_post in predict and at every cached step of generate, and the refusals."""

import json
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests import checkpoints
from tests.exact import assert_copied
from tests.conftest import parse_json

TOL = 1e-5
WORDS = ["the cat", "the cats", "a dog", "two dogs", "one bird", "birds", "my house", "houses"]


@cache
def tiny():
    from attn_cli.models.loading import load

    return load(str(checkpoints.tiny_llama_folder()))


@cache
def stream(text: str) -> np.ndarray:  # [L, d]: each layer's resid_post at the last token, from a pass that keeps everything
    m = tiny()
    trace = m.forward(m.tokenize(text))
    return np.stack([trace.get("resid_post", l)[-1] for l in range(m.n_layers)]).astype(np.float64)


def run_direction(pairs, **kw):
    from attn_cli.analysis.direction import DirectionSettings, direction

    return direction(tiny(), pairs, DirectionSettings(**kw))


def test_the_mean_direction_is_the_mean_of_the_pairs_differences_layer_by_layer():
    pairs = [("the cats", "the cat"), ("two dogs", "a dog"), ("houses", "my house")]
    result = run_direction(pairs)
    m = tiny()
    for l in range(m.n_layers):
        total = np.zeros(m.d_model)
        for p, n in pairs:
            total += stream(p)[l] - stream(n)[l]
        np.testing.assert_allclose(result.directions[l], total / len(pairs), rtol=TOL, atol=TOL)
        right = sum(float((stream(p)[l] - stream(n)[l]) @ result.directions[l]) > 0 for p, n in pairs)
        assert result.train_separation[l] == pytest.approx(right / len(pairs))


def test_pca_is_the_first_singular_vector_of_the_centred_differences_signed_to_order_most_pairs_right():
    from attn_cli.analysis.direction import pca_direction

    rng = np.random.default_rng(3)
    diffs = rng.standard_normal((7, 3, 5)) + np.array([2.0, 0, 0, 0, 0])  # [P, L, d]
    got = pca_direction(diffs)
    for l in range(3):
        d = diffs[:, l]
        vt = np.linalg.svd(d - d.mean(axis=0))[2]
        v = vt[0] if np.sum(d @ vt[0] > 0) >= np.sum(d @ vt[0] < 0) else -vt[0]
        np.testing.assert_allclose(got[l], v, atol=1e-9)
        assert np.linalg.norm(got[l]) == pytest.approx(1.0)
        assert np.sum(d @ got[l] > 0) >= np.sum(d @ got[l] < 0)


def test_held_out_pairs_are_the_last_k_and_the_random_baseline_has_the_directions_norm():
    from attn_cli.analysis.direction import RANDOM, random_like, separation

    pairs = [("the cats", "the cat"), ("two dogs", "a dog"), ("houses", "my house"), ("birds", "one bird")]
    result = run_direction(pairs, holdout=2, seed=7)
    train = np.stack([stream(p) - stream(n) for p, n in pairs[:2]])
    held = np.stack([stream(p) - stream(n) for p, n in pairs[2:]])
    np.testing.assert_allclose(result.directions, train.mean(axis=0), rtol=TOL, atol=TOL)
    np.testing.assert_allclose(result.separation, separation(held, result.directions))
    baseline = random_like(result.directions, 7)  # [R, L, d]
    assert baseline.shape == (RANDOM, *result.directions.shape)
    for r in baseline:
        np.testing.assert_allclose(np.linalg.norm(r, axis=1), result.norms(), rtol=1e-9)
    fractions = np.stack([separation(held, r) for r in baseline])
    np.testing.assert_allclose(result.baseline, fractions.mean(axis=0))
    np.testing.assert_allclose(result.baseline_high, np.quantile(fractions, 0.95, axis=0))
    mean = held.mean(axis=0)
    for l in range(len(mean)):
        v = result.directions[l]
        assert result.cosine[l] == pytest.approx(mean[l] @ v / np.linalg.norm(mean[l]) / np.linalg.norm(v), rel=1e-6)
        random_cos = [abs(mean[l] @ r[l]) / np.linalg.norm(mean[l]) / np.linalg.norm(r[l]) for r in baseline]
        assert result.random_cosine[l] == pytest.approx(np.quantile(random_cos, 0.95), rel=1e-6)
    assert [p["held_out"] for p in result.to_dict()["pairs"]] == [False, False, True, True]


@settings(max_examples=10, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(WORDS)).filter(lambda t: t[0] != t[1]), min_size=1, max_size=3))
def test_swapping_positive_and_negative_negates_the_mean_direction(pairs):
    a = run_direction(pairs).directions
    b = run_direction([(n, p) for p, n in pairs]).directions
    np.testing.assert_allclose(a, -b, rtol=TOL, atol=TOL)


def test_a_probe_rises_where_its_projections_increase_strictly():
    from attn_cli.analysis.direction import rises

    values = np.array([[0.0, 3, 1], [1, 2, 1], [2, 1, 1]])  # [W, L]: up at layer 0, down at 1, flat at 2
    assert rises(values).tolist() == [True, False, False]
    result = run_direction([("the cats", "the cat")], probe=["one", "two", "three"])
    for w, word in enumerate(["one", "two", "three"]):
        np.testing.assert_allclose(result.probe[w], np.einsum("ld,ld->l", stream(word), result.directions), rtol=TOL, atol=TOL)
    assert result.chance == pytest.approx(1 / 6)


def test_the_control_vector_reads_back_with_gguf_py_with_llama_cpps_names_and_metadata(tmp_path):
    import gguf

    from attn_cli.io.control_vector import read_control_vector, write_control_vector

    directions = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    path = write_control_vector(tmp_path / "cv.gguf", directions, "llama", force=False)
    reader = gguf.GGUFReader(path)
    tensors = {t.name: np.asarray(t.data) for t in reader.tensors}
    assert sorted(tensors) == ["direction.1", "direction.2", "direction.3"]  # llama.cpp has no direction.0
    for l in (1, 2, 3):
        assert_copied(tensors[f"direction.{l}"], directions[l])
        assert [t.tensor_type for t in reader.tensors if t.name == f"direction.{l}"] == [gguf.GGMLQuantizationType.F32]
    hint = reader.fields["controlvector.model_hint"]
    assert bytes(hint.parts[hint.data[0]]).decode() == "llama"
    count = reader.fields["controlvector.layer_count"]
    assert int(count.parts[count.data[0]][0]) == 3
    hint, vectors = read_control_vector(path)
    assert hint == "llama" and sorted(vectors) == [1, 2, 3]
    assert_copied(vectors[2], directions[2])


def control_vector(tmp_path, name="cv.gguf", scale=1.0, layers=None, width=None, hint="llama", value=None):
    from attn_cli.io.control_vector import write_control_vector

    m = tiny()
    d = np.random.default_rng(1).standard_normal((layers or m.n_layers, width or m.d_model)).astype(np.float32) * scale
    if value is not None:
        d[-1, 0] = value
    return str(write_control_vector(tmp_path / name, d, hint, force=False))


def test_direction_writes_a_control_vector_and_never_overwrites_without_force(run, tmp_path):
    out = tmp_path / "plural.gguf"
    model = checkpoints.tiny_llama_folder()
    done = run("direction", "the cats", "the cat", "--model", model, "-o", out, "--json")
    d = parse_json(done)
    assert len(d["layers"]) == tiny().n_layers and "wrote" in done.stderr
    from attn_cli.io.control_vector import read_control_vector

    hint, vectors = read_control_vector(out)
    assert hint == "llama"
    np.testing.assert_allclose(vectors[1], stream("the cats")[1] - stream("the cat")[1], rtol=TOL, atol=TOL)
    again = run("direction", "the cats", "the cat", "--model", model, "-o", out)
    assert again.exit_code == 2 and again.stdout == "" and "--force" in again.stderr and len(again.stderr.splitlines()) == 1
    assert run("direction", "the cats", "the cat", "--model", model, "-o", out, "--force").exit_code == 0


def generated_ids(run, *extra):
    done = run("generate", "The cat sat on the", "--model", checkpoints.tiny_llama_folder(), "-n", "6", "--json", *extra)
    return [s["id"] for s in parse_json(done)["tokens"]]


def test_steering_changes_generate_and_predict_and_a_scale_of_0_changes_nothing(run, tmp_path):
    cv = control_vector(tmp_path, scale=20.0)
    plain = generated_ids(run)
    assert generated_ids(run, "--steer", f"{cv}:0") == plain
    assert generated_ids(run, "--steer", f"{cv}:1") != plain
    model = checkpoints.tiny_llama_folder()
    own = parse_json(run("predict", "The cat sat on the", "--model", model, "--json"))
    zero = parse_json(run("predict", "The cat sat on the", "--model", model, "--json", "--steer", f"{cv}:0"))
    steered = parse_json(run("predict", "The cat sat on the", "--model", model, "--json", "--steer", cv))
    assert zero["predictions"] == own["predictions"]
    assert steered["predictions"] != own["predictions"]


def test_every_cached_step_of_a_steered_generation_is_the_full_pass_with_the_same_adds(tmp_path):
    from attn_cli.analysis.generate import GenerateSettings, Generation
    from attn_cli.io.control_vector import steer_edits

    m = tiny()
    edits, steered = steer_edits(m, [control_vector(tmp_path, scale=3.0) + ":0.5"])
    assert_copied([s["scale"] for s in steered], [0.5])  # parsed from the text
    assert steered[0]["layers"] == list(range(1, m.n_layers))
    assert [e.layer for e in edits] == list(range(1, m.n_layers))  # direction.l at resid_post[l]; none at layer 0
    run = Generation(m, "The cat sat on the", GenerateSettings(steps=4, steer=edits))
    list(run)
    ids = list(run.tokens.ids)
    for step in run.steps:
        full = m.readout(m.forward(ids, edits=edits).get("resid_post", m.n_layers - 1)[-1:])[0]
        assert step.id == int(np.argmax(full))
        assert abs(step.logit - float(full[step.id])) <= 1e-4 * max(1.0, abs(step.logit))
        ids.append(step.id)


@pytest.mark.parametrize("kind, message", [
    ("hint", "a control vector for a 'gemma3' model"),
    ("width", "vectors of width 32"),
    ("layers", "direction.2 is beyond"),
    ("nan", "NaN or infinite"),
])
def test_a_control_vector_that_does_not_fit_is_refused_in_one_line(run, tmp_path, kind, message):
    cv = {"hint": lambda: control_vector(tmp_path, hint="gemma3"), "width": lambda: control_vector(tmp_path, width=32),
          "layers": lambda: control_vector(tmp_path, layers=tiny().n_layers + 1), "nan": lambda: control_vector(tmp_path, value=np.nan)}[kind]()
    done = run("predict", "The cat", "--model", checkpoints.tiny_llama_folder(), "--steer", cv)
    assert done.exit_code == (1 if kind == "nan" else 2) and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


@pytest.mark.parametrize("steer, message", [
    ("{cv}:nan", "must be a finite number"), ("{cv}:inf", "must be a finite number"), ("{cv}:-inf", "must be a finite number"),
    ("{cv}:big", "SCALE a number"), ("{dir}/missing.gguf", "no such file"),
])
def test_a_bad_scale_or_file_is_exit_2_in_one_line(run, tmp_path, steer, message):
    cv = control_vector(tmp_path)
    for command in ("predict", "generate"):
        done = run(command, "The cat", "--model", checkpoints.tiny_llama_folder(), "--steer", steer.format(cv=cv, dir=tmp_path))
        assert done.exit_code == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


@pytest.mark.parametrize("args, input, message", [
    (["--pairs", "-"], "the cats\tthe cat\nthe dogs the dog\n", "line 2: no tab"),
    (["--pairs", "-"], "# a comment\n\n", "no pairs"),
    (["same", "same"], None, "zero norm"),
    (["a"], None, "give two texts"),
    (["the cats", "the cat", "--holdout", "1"], None, "leaves 0"),
    (["the cats", "the cat", "--method", "pca"], None, "two pairs"),
    (["the cats", "the cat", "--method", "median"], None, "pick one of mean, pca"),
    (["the cats", "the cat", "--probe", "one"], None, "at least two words"),
])
def test_bad_pairs_and_options_are_one_line(run, args, input, message):
    done = run("direction", *args, "--model", checkpoints.tiny_llama_folder(), input=input)
    assert done.exit_code == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr


def test_the_api_gives_the_direction_and_steers_run_with_edits():
    from attn_cli import api

    m = tiny()
    result = api.direction(m, "the cats", "the cat")
    np.testing.assert_allclose(result.directions, stream("the cats") - stream("the cat"), rtol=TOL, atol=TOL)
    edits = [api.Add("resid_post", l, 0.0 * result.directions[l]) for l in range(1, m.n_layers)]
    plain, _ = api.run_with_edits(m, "The cat sat", [])
    same, _ = api.run_with_edits(m, "The cat sat", edits)
    np.testing.assert_allclose(same, plain, rtol=1e-6, atol=1e-6)
    moved, _ = api.run_with_edits(m, "The cat sat", [api.Add("resid_post", 0, 10 * result.directions[0])])
    assert np.abs(moved - plain).max() > 0
    assert json.dumps(result.to_dict())


def test_a_direction_0_is_refused_as_not_llama_cpps(run, tmp_path):
    import gguf

    path = tmp_path / "zero.gguf"
    writer = gguf.GGUFWriter(str(path), "controlvector")
    writer.add_string("controlvector.model_hint", "llama")
    for l in (0, 1):
        writer.add_tensor(f"direction.{l}", np.ones(tiny().d_model, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    done = run("predict", "The cat", "--model", checkpoints.tiny_llama_folder(), "--steer", path)
    assert done.exit_code == 2 and len(done.stderr.splitlines()) == 1 and "direction.0" in done.stderr, done.stderr


def test_inspect_steers_the_run_it_shows_and_says_so(run, tmp_path):
    cv = control_vector(tmp_path, scale=5.0)
    model = checkpoints.tiny_llama_folder()
    plain = parse_json(run("inspect", "The cat sat", "--model", model, "--json"))
    zero = parse_json(run("inspect", "The cat sat", "--model", model, "--json", "--steer", f"{cv}:0"))
    steered = parse_json(run("inspect", "The cat sat", "--model", model, "--json", "--steer", cv))
    assert "steered" not in plain and zero["steered"][0]["layers"] == [1]
    norms = lambda d: [layer["norms"] for layer in d["layers"]]  # noqa: E731 (the stream leaving each layer, per token)
    np.testing.assert_allclose(norms(zero), norms(plain), rtol=1e-6)
    np.testing.assert_allclose(norms(steered)[0], norms(plain)[0], rtol=1e-6)  # layer 0 is never steered (llama.cpp's numbering)
    assert not np.allclose(norms(steered)[1], norms(plain)[1], rtol=1e-3)  # the stream leaving layer 1 moved
    table = run("inspect", "The cat sat", "--model", model, "--steer", cv)
    assert table.exit_code == 0 and table.stdout.startswith("steered: ")


@pytest.mark.parametrize("command", ["predict", "generate"])
def test_a_scale_that_overflows_the_stream_names_steer_not_the_weights(run, tmp_path, command):
    cv = control_vector(tmp_path)
    done = run(command, "The cat", "--model", checkpoints.tiny_llama_folder(), "--steer", f"{cv}:1e30")
    assert done.exit_code == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1
    assert "--steer" in done.stderr and "smaller SCALE" in done.stderr and "weights" not in done.stderr, done.stderr


def test_steered_predict_still_reads_one_text_a_line_from_stdin(run, tmp_path):
    cv = control_vector(tmp_path)
    done = run("predict", "-", "--model", checkpoints.tiny_llama_folder(), "--steer", f"{cv}:0.5", "--json", input="The cat\nThe dog\n")
    lines = parse_json(done)
    assert [d["line"] for d in lines] == [1, 2] and all(d["steered"][0]["scale"] > 0 for d in lines)
