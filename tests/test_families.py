"""The newer decoder families against transformers' recorded outputs: Qwen3 (q/k norms), Phi-3 (fused qkv and gate_up,
longrope), Gemma 2 (soft-caps, alternating windows, sandwich norms) and Gemma 3 (q/k norms, local and global layers with
their own RoPE bases), each as a tiny random safetensors folder and as GGUF files (F32, Q8_0) as llama.cpp writes them.

The bars are test_decoders.py's, over every layer and head of every sentence: attention within 1e-4, hidden states within
1e-4 of each layer's RMS, logits within 1e-3, the same top-1 token at every position. Every sentence is longer than the
Gemma fixtures' window of 8 keys, so the windows cut.
"""

from functools import cache

import numpy as np
import pytest

from attn_cli.models import loading
from tests import checkpoints
from tests.exact import assert_same_ids
from tests.test_decoders import ATTENTION, HIDDEN, LOGITS, compare_case

NAMES = ("tiny-qwen3", "tiny-phi3", "tiny-gemma2", "tiny-gemma3")
KINDS = ("folder", "F32", "Q8_0")


@cache
def model(name: str, kind: str):
    return loading.load(str(checkpoints.FIXTURES / name if kind == "folder" else checkpoints.FIXTURES / "gguf" / f"{name}.{kind}.gguf"))


def oracle(name: str, kind: str) -> list[dict]:
    data = np.load(checkpoints.FIXTURES / (f"oracle-{name}.npz" if kind == "folder" else f"oracle-{name}-gguf.npz"), allow_pickle=False)
    prefix = "" if kind == "folder" else f"{kind}_"
    keys = ("text", "chat", "ids", "attentions", "hidden", "logits")
    return [{k: data[f"{prefix}s{s}_{k}"] for k in keys} for s in range(int(data["n_sentences"]))]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", NAMES)
def test_every_layer_and_head_matches_transformers(name, kind):
    m = model(name, kind)
    worst = {"attention": 0.0, "hidden": 0.0, "logits": 0.0}
    for case in oracle(name, kind):
        compare_case(m, case, worst)
    assert worst["attention"] <= ATTENTION and worst["hidden"] <= HIDDEN and worst["logits"] <= LOGITS, worst


# --- Gemma 3 270M, the real file -------------------------------------------------------------------------------


@cache
def gemma3():
    return loading.load(str(checkpoints.gemma3_gguf()))


def gemma3_case(s: int) -> dict:
    data = np.load(checkpoints.FIXTURES / "oracle-gemma3.npz", allow_pickle=False)
    case = {k.removeprefix(f"s{s}_"): data[k] for k in data.files if k.startswith(f"s{s}_")}
    return case | {"projection": data["projection"], "long_rows": data["long_rows"], "long": s == int(data["n_sentences"]) - 1}


def gemma3_errors(s: int) -> tuple[dict, np.ndarray]:
    """attn's pass over the oracle's ids against transformers': attention at every layer and head (the long text's at its kept
    rows), hidden states on the fixed basis relative to each layer's RMS; and the last layer's output [n, d], for the logits."""
    from attn_cli.models.points import Keep

    m, case = gemma3(), gemma3_case(s)
    ids = case["ids"].tolist()
    assert m.tokenize(str(case["text"])).ids == ids, "the tokenizer gives transformers' ids"
    trace = m.forward(ids, keep=Keep(("attn.pattern", "resid_pre", "resid_post", "resid_final")))
    rows = case["long_rows"] if case["long"] else np.arange(len(ids))
    weights = np.stack([trace.get("attn.pattern", l)[:, rows] for l in range(m.n_layers)])  # [L, H, rows, n]
    hidden = np.concatenate([np.stack([trace.get("resid_pre", l) for l in range(m.n_layers)]), trace.get("resid_final")[None]])  # [L + 1, n, d]
    scale = np.sqrt(np.mean(case["hidden_rms"].astype(np.float64) ** 2, axis=1))  # [L + 1]: each layer's RMS
    return {
        "attention": float(np.abs(weights - case["attentions"]).max()),
        "hidden": max(float(np.max(np.abs(hidden[:, rows].astype(np.float64) @ case["projection"] - case["hidden_projected"]) / scale[:, None, None])),
                      float(np.max(np.abs(hidden[:, -1] - case["hidden_last"]) / scale[:, None]))),
        "tokens": len(ids),
    }, trace.get("resid_post", m.n_layers - 1)  # before the final norm (readout applies it)


def gemma3_logit_error(cases: list[int], last: np.ndarray) -> float:
    """The logits of every position of these texts (rows of `last`, in order) against the oracle's top logits and log-sum-exp,
    asserting the same next token everywhere; a block of rows at a time ([256, V] float32: the long text's [n, V] is ~1 GB)."""
    top_ids = np.concatenate([gemma3_case(s)["top_ids"] for s in cases])
    top_logits = np.concatenate([gemma3_case(s)["top_logits"] for s in cases])
    total = np.concatenate([gemma3_case(s)["logsumexp"] for s in cases])
    worst = 0.0
    for r0 in range(0, len(last), 256):
        logits = gemma3().readout(last[r0 : r0 + 256]).astype(np.float64)
        assert_same_ids(logits.argmax(-1), top_ids[r0 : r0 + 256, 0])  # the same next token at every position
        lse = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
        worst = max(worst, float(np.abs(np.take_along_axis(logits, top_ids[r0 : r0 + 256], 1) - top_logits[r0 : r0 + 256]).max()),
                    float(np.abs(lse - total[r0 : r0 + 256]).max()))
    return worst


@pytest.mark.slow
def test_gemma3_270m_matches_transformers_on_short_texts():
    short = list(range(int(np.load(checkpoints.FIXTURES / "oracle-gemma3.npz")["n_sentences"]) - 1))
    runs = [gemma3_errors(s) for s in short]
    assert gemma3_logit_error(short, np.concatenate([last for _, last in runs])) <= LOGITS
    for worst, _ in runs:
        assert worst["attention"] <= ATTENTION and worst["hidden"] <= HIDDEN, worst


@pytest.mark.slow
def test_gemma3_270m_matches_transformers_beyond_its_sliding_window():
    """A text of more than 512 tokens: the local layers' window cuts (transformers' attention there is 0 on the first keys)."""
    s = int(np.load(checkpoints.FIXTURES / "oracle-gemma3.npz")["n_sentences"]) - 1
    worst, last = gemma3_errors(s)
    assert worst["tokens"] > 600
    assert gemma3_logit_error([s], last) <= LOGITS
    assert worst["attention"] <= ATTENTION and worst["hidden"] <= HIDDEN, worst


# --- what attn does not run: one line naming the architecture and what it runs ----------------------------------


def tiny_gguf(path, arch: str, tensors: dict):
    import gguf

    writer = gguf.GGUFWriter(path, arch)
    writer.add_name("unknown")
    for name, value in tensors.items():
        writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize("arch, tensors, expected", [
    ("rwkv6", {"blk.0.time_mix_k.weight": np.zeros(8, np.float32)}, "architecture 'rwkv6' is not supported"),  # an RNN
    ("clip", {"v.blk.0.attn_q.weight": np.zeros((8, 8), np.float32)}, "architecture 'clip' is not supported"),  # a vision tower
    ("qwen2moe", {"blk.0.ffn_gate_exps.weight": np.zeros((2, 8, 8), np.float32)}, "architecture 'qwen2moe' is not supported"),
    ("llama", {"blk.0.ffn_gate_inp.weight": np.zeros((8, 2), np.float32), "blk.0.ffn_gate_exps.weight": np.zeros((2, 8, 8), np.float32)},
     "a mixture of experts ('llama' with expert tensors) is not supported"),  # Mixtral, as llama.cpp writes it
])
def test_an_architecture_attn_does_not_run_is_one_line_naming_it_and_what_attn_runs(tmp_path, arch, tensors, expected):
    from tests.oracle import attn, one_line

    path = tiny_gguf(tmp_path / f"{arch}.gguf", arch, tensors)
    one_line(attn("model", "info", str(path)), 1, expected,
             "attn reads GGUF llama (Llama, Mistral, SmolLM), qwen2 (Qwen2), qwen3 (Qwen3), phi3 (Phi-3), gemma2 (Gemma 2), gemma3 (Gemma 3)")


def test_model_info_lists_local_and_global_layers_with_their_window_and_rope_bases(run):
    import json

    out = json.loads(run("model", "info", checkpoints.FIXTURES / "gguf" / "tiny-gemma3.Q8_0.gguf", "--json").stdout)
    assert [(row["layer"], row["window"], row["rope_base"]) for row in out["attention_layers"]] == [
        *((l, 8, 10000.0) for l in range(5)), (5, None, 1000000.0), (6, 8, 10000.0)]
    assert "q/k RMSNorm per head" in out["features"] and "scores / 4 (√query_pre_attn_scalar)" in out["features"]  # llama.cpp's: √head_dim
    text = run("model", "info", checkpoints.FIXTURES / "tiny-gemma2", env={"COLUMNS": "200"}).stdout
    lines = {line.split()[0] + " " + line.split()[1]: line for line in text.splitlines() if "layers  " in line}
    assert "0, 2   a query sees its last 8 keys" in lines["local layers"] and "1, 3   a query sees every earlier key" in lines["global layers"]
    assert {"attention soft-cap 5", "logit soft-cap 3"} <= set(json.loads(run("model", "info", checkpoints.FIXTURES / "tiny-gemma2", "--json").stdout)["features"])
    plain = json.loads(run("model", "info", checkpoints.FIXTURES / "tiny-qwen3", "--json").stdout)
    assert all(row["window"] is None and row["rope_base"] == 1000000.0 for row in plain["attention_layers"])
    assert "local layers" not in run("model", "info", checkpoints.FIXTURES / "tiny-qwen3").stdout


def test_a_local_layers_keys_beyond_its_window_look_masked_and_the_heading_says_why(run):
    sentence = "The cat sat quietly on the warm stone wall today."
    local = run("inspect", sentence, "--model", checkpoints.FIXTURES / "tiny-gemma3", "--head", "0.1", env={"COLUMNS": "160"}).stdout
    heading = next(line for line in local.splitlines() if line.startswith("layer 0 · head 1"))
    assert "sliding window of 8 keys (· further back: hidden" in heading
    wall = next(line.split() for line in local.splitlines() if line.startswith("wall "))[1:]  # query 12 sees keys 5 .. 12 only
    assert wall[:5] == ["·"] * 5 and "·" not in wall[5:13] and wall[13:] == ["·"] * 4
    import json

    heads = json.loads(run("inspect", sentence, "--model", checkpoints.FIXTURES / "tiny-gemma3", "--head", "0.1", "--head", "5.1", "--json").stdout)["heads"]
    assert heads[0]["window"] == 8 and "window" not in heads[1]
    global_ = run("inspect", sentence, "--model", checkpoints.FIXTURES / "tiny-gemma3", "--head", "5.1", env={"COLUMNS": "160"}).stdout
    assert "sliding window" not in global_
    wall = next(line.split() for line in global_.splitlines() if line.startswith("wall "))[1:]
    assert "·" not in wall[:13] and wall[13:] == ["·"] * 4


def test_a_large_quantized_vocabulary_is_read_in_blocks_with_the_same_logits_and_neighbours(monkeypatch):
    """Gemma's 262k-token table would be 671 MB as float32: beyond PREFETCH_VOCABULARY the output head and the nearest tokens
    read it a block at a time from the file. Here the bar is 0 bytes, on the tiny Gemma 3's Q8_0 file."""
    from attn_cli.models import weights as weights_module

    path = str(checkpoints.FIXTURES / "gguf" / "tiny-gemma3.Q8_0.gguf")
    whole = loading.load(path)
    trace = whole.run("the grey cat sat on the mat")
    rows = trace.streams()[-1]
    expected_logits, expected_near = whole.readout(rows), whole.nearest(rows, 5)
    monkeypatch.setattr(weights_module, "PREFETCH_VOCABULARY", 0)
    monkeypatch.setattr(weights_module.TableKeys, "BLOCK_ROWS", 100)
    blocked = loading.load(path)
    blocked.weights.prefetch_vocabulary()  # refused: the table is not read whole
    np.testing.assert_allclose(blocked.readout(rows), expected_logits, rtol=0, atol=1e-5)
    assert blocked.nearest(rows, 5) == expected_near
    assert blocked.weights._vocabulary is None and blocked.weights._vocabulary_ahead is None


@pytest.mark.parametrize("name, change, expected", [
    ("tiny-gemma3", {"layer_types": ["sliding_attention"] * 3}, "layer_types should be 7 of sliding_attention, full_attention"),
    ("tiny-gemma3", {"rope_parameters": {"full_attention": 5}}, "should be objects"),
    ("tiny-gemma3", {"sliding_window_pattern": 0}, "sliding_window_pattern should be a positive whole number"),
    ("tiny-gemma3", {"use_bidirectional_attention": True}, "attn runs Gemma as a decoder only"),
    ("tiny-gemma2", {"attn_logit_softcapping": "50"}, "attn_logit_softcapping must be a number"),
    ("tiny-gemma2", {"query_pre_attn_scalar": -1}, "query_pre_attn_scalar must be a number"),
    ("tiny-phi3", {"partial_rotary_factor": 0.75}, "partial_rotary_factor is not 1"),
    ("tiny-phi3", {"rope_parameters": {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": 64,
                                       "short_factor": [1.0] * 3, "long_factor": [1.0] * 8}}, "short_factor should be 8 positive numbers"),
    ("tiny-qwen3", {"use_sliding_window": True}, "attn runs Qwen3 with full attention only"),
])
def test_a_config_a_family_cannot_run_is_one_line(tmp_path, name, change, expected):
    import json
    import shutil

    from tests.oracle import attn, one_line

    folder = tmp_path / name
    shutil.copytree(checkpoints.FIXTURES / name, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | change))
    one_line(attn("model", "info", str(folder)), 1, expected)


def test_the_sense_meter_reads_a_word_of_gemma3():
    """A SentencePiece text's words (models.pieces.sentencepiece_words): Gemma 3's "mole" is a word of its own."""
    tokens = gemma3().tokenize("One mole of carbon dioxide.")
    assert tokens.words[:4] == [None, 0, 1, 2] and tokens.pieces[2] == "▁mole"
