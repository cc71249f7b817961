"""`attn predict`: a model's own output as a softmax over its vocabulary, the logit lens, chat templates, masked LMs,
and the places a model is found (a folder, a GGUF file, Ollama's store)."""

import json
import shutil

import numpy as np
import pytest

from attn_cli.analysis.predict import PredictSettings, predict
from attn_cli.models import loading
from attn_cli.models.chat import render
from conftest import parse_json
from tests import checkpoints

LLAMA = checkpoints.FIXTURES / "tiny-llama"
BERT_MLM = checkpoints.FIXTURES / "tiny-bert-mlm"


def softmax(x: np.ndarray) -> np.ndarray:  # written out again: the test's own reference
    e = np.exp(x - x.max())
    return e / e.sum()


def test_predictions_are_the_softmax_of_the_last_positions_logits():
    model = loading.load(str(LLAMA))
    result = predict(model, "the grey cat sat", PredictSettings(top=5))
    trace = model.run("the grey cat sat")
    logits = model.readout(trace.streams()[-1, -1:])[0].astype(np.float64)
    p = softmax(logits)
    best = np.argsort(-p, kind="stable")[:5]
    assert [x.id for x in result.predictions] == best.tolist() and result.position == len(trace.tokens.ids) - 1
    np.testing.assert_allclose([x.probability for x in result.predictions], p[best], rtol=1e-9)
    np.testing.assert_allclose([x.logit for x in result.predictions], logits[best], rtol=1e-6)
    hot = predict(model, "the grey cat sat", PredictSettings(top=5, temperature=2.0))
    np.testing.assert_allclose([x.probability for x in hot.predictions], softmax(logits / 2.0)[best], rtol=1e-9)
    cold = predict(model, "the grey cat sat", PredictSettings(top=2, temperature=0.0))
    assert [x.probability for x in cold.predictions] == [1.0, 0.0]


def test_the_logit_lens_reads_every_layer_through_the_final_norm_and_the_output():
    model = loading.load(str(LLAMA))
    result = predict(model, "the grey cat sat", PredictSettings(top=3, lens=True))
    trace = model.run("the grey cat sat")
    assert [row["layer"] for row in result.lens] == list(range(model.n_layers + 1))
    winner = result.predictions[0].id
    w = model.weights
    for l, row in enumerate(result.lens):
        x = trace.streams()[l, -1].astype(np.float64)
        normed = x / np.sqrt(np.mean(x * x) + model.spec.eps) * w.get("final_norm.w")  # RMSNorm, then the tied embeddings
        p = softmax(normed @ w.vocabulary().astype(np.float64).T)
        assert row["top"][0].id == int(np.argmax(p))
        assert row["final_probability"] == pytest.approx(p[winner], rel=1e-4)
        assert row["final_rank"] == int(np.sum(p > p[winner])) + 1
    last = result.lens[-1]
    assert last["final_rank"] == 1 and last["top"][0].id == winner and last["final_probability"] == pytest.approx(result.predictions[0].probability)


def test_a_masked_lm_predicts_its_mask_as_transformers_did():
    model = loading.load(str(BERT_MLM))
    data = np.load(checkpoints.FIXTURES / "oracle-tiny-bert-mlm.npz", allow_pickle=False)
    for s in range(int(data["n_sentences"])):
        text = str(data[f"s{s}_text"])
        trace = model.run(text)
        assert trace.tokens.ids == data[f"s{s}_ids"].tolist()
        np.testing.assert_allclose(trace.stacked("attn.pattern"), data[f"s{s}_attentions"], atol=1e-5)
        logits = model.readout(trace.streams()[-1])
        np.testing.assert_allclose(logits, data[f"s{s}_logits"], atol=1e-4)
        result = predict(model, text, PredictSettings(top=1))
        assert result.predicts == "mask" and result.tokens[result.position] == "[MASK]"
        assert result.predictions[0].id == int(np.argmax(data[f"s{s}_logits"][result.position]))


def test_an_encoder_without_a_head_says_it_cannot_predict(run):
    out = run("predict", "the cat [MASK]", "--model", checkpoints.minilm_folder())
    assert out.exit_code == 2 and "no output head" in out.stderr and out.stdout == ""
    out = run("predict", "the cat sat", "--model", BERT_MLM)
    assert out.exit_code == 2 and "put [MASK] where it should predict" in out.stderr


def test_the_chat_template_is_rendered_as_transformers_rendered_it():
    data = np.load(checkpoints.FIXTURES / "oracle-tiny-llama.npz", allow_pickle=False)
    chat = [s for s in range(int(data["n_sentences"])) if bool(data[f"s{s}_chat"])]
    assert chat
    template = json.loads((LLAMA / "tokenizer_config.json").read_text())["chat_template"]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Where did the grey cat sit?"}]  # as the fixtures' script
    assert render(template, messages, bos_token="<|begin_of_text|>") == str(data[f"s{chat[0]}_text"])
    model = loading.load(str(LLAMA))
    prompt = model.chat_prompt("hello")
    assert prompt == "<|begin_of_text|><|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"
    assert model.tokenize("hello", chat=True).ids == model.tokenizer.encode(prompt, add_special_tokens=False).ids


def test_a_hostile_template_is_one_line(tmp_path, run):
    folder = tmp_path / "llama"
    shutil.copytree(LLAMA, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    for template, says in [("{{ ''.__class__.__mro__[1].__subclasses__() }}", "cannot be rendered"), ("{% for x in %}", "cannot be rendered"),
                           ("{{ raise_exception('no system messages') }}", "refuses this prompt")]:
        (folder / "tokenizer_config.json").write_text(json.dumps(config | {"chat_template": template}))
        out = run("predict", "hi", "--model", folder, "--chat")
        assert out.exit_code in (1, 2) and says in out.stderr and out.stderr.count("\n") == 1, out.stderr
    out = run("predict", "hi", "--model", checkpoints.tiny_gpt2_folder(), "--chat")
    assert out.exit_code == 2 and "has no chat template" in out.stderr


@pytest.mark.parametrize("fmt", ["--json", "--jsonl", "--csv"])
def test_predict_speaks_every_format(run, fmt):
    out = run("predict", "the grey cat", "--model", LLAMA, "--top", "4", "--lens", fmt)
    assert out.exit_code == 0, out.stderr
    if fmt == "--csv":
        rows = out.stdout.splitlines()
        assert rows[0] == "layer,rank,id,token,text,piece,probability,logit"
        assert len(rows) == 1 + 4 + 3 * (2 + 1)  # the model's 4, then 3 a layer for E and both layers
        return
    doc = json.loads(out.stdout)
    assert doc["predicts"] == "next" and len(doc["predictions"]) == 4 and len(doc["lens"]) == 3
    assert set(doc["predictions"][0]) == {"id", "token", "text", "piece", "probability", "logit"}
    assert doc["predictions"][0]["probability"] >= doc["predictions"][1]["probability"]


def test_predict_reads_stdin_a_line_at_a_time(run):
    out = run("predict", "-", "--model", LLAMA, "--top", "1", "--jsonl", input="the grey cat\n\nthe owl\n")
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.exit_code == 0 and [line["line"] for line in lines] == [1, 3]


def test_an_ollama_model_is_its_gguf_blob(tmp_path, monkeypatch, run):
    from tests.test_ollama import fake_store

    store = fake_store(tmp_path)
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    via_ollama = parse_json(run("predict", "the grey cat", "--model", "ollama:tiny-llama:q8_0", "--top", "3", "--json"))
    direct = parse_json(run("predict", "the grey cat", "--model", checkpoints.gguf_fixture("tiny-llama", "Q8_0"), "--top", "3", "--json"))
    assert via_ollama["model"]["name"] == "tiny-llama:q8_0"
    assert via_ollama["predictions"] == direct["predictions"]
    out = run("predict", "the grey cat", "--model", "ollama:nothing-here")
    assert out.exit_code == 2 and "no such model" in out.stderr and "tiny-llama:q8_0" in out.stderr


def test_smollm2_predicts_paris():
    result = predict(loading.load(str(checkpoints.smollm2_gguf())), "The capital of France is", PredictSettings(top=3, lens=True))
    assert result.predictions[0].token == "Paris" and result.predictions[0].piece == "ĠParis"
    assert result.lens[-1]["final_rank"] == 1 and result.lens[0]["final_rank"] > 100  # the embedding alone does not know it


def test_each_tokens_text_is_what_it_adds_to_a_text_for_byte_level_and_sentencepiece():
    from tokenizers import Tokenizer, decoders, models

    from attn_cli.analysis.predict import token_text

    byte_level = loading.load(str(LLAMA)).tokenizer
    cat = byte_level.token_to_id("Ġcat")
    assert byte_level.id_to_token(cat) == "Ġcat" and token_text(byte_level, cat) == " cat"
    assert token_text(byte_level, byte_level.token_to_id("Ċ")) == "\n"
    spm = Tokenizer(models.WordLevel({"▁Paris": 0, "<0x0A>": 1, "is": 2, "<unk>": 3}, unk_token="<unk>"))
    spm.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    assert spm.decode([0]) == "Paris"  # alone, SentencePiece's decoder drops the word's space
    assert [token_text(spm, i) for i in range(3)] == [" Paris", "\n", "is"]


def test_predictions_in_json_carry_the_decoded_text_beside_the_raw_piece(run):
    doc = parse_json(run("predict", "the grey", "--model", LLAMA, "--top", "20", "--json"))
    model = loading.load(str(LLAMA))
    for p in doc["predictions"]:
        assert p["piece"] == model.tokenizer.id_to_token(p["id"])
        assert p["text"] == model.tokenizer.decode([cat_id := model.tokenizer.token_to_id("the"), p["id"]])[len(model.tokenizer.decode([cat_id])):]


def plain_rank(logits, j: int) -> int:  # written out again: 1 + how many tokens have a larger logit
    rank = 1
    for x in logits:
        if x > logits[j]:
            rank += 1
    return rank


def test_a_token_asked_for_gets_its_probability_logit_and_rank_however_far_down():
    model = loading.load(str(LLAMA))
    text = "the grey cat sat"
    logits = model.readout(model.run(text).streams()[-1, -1:])[0].astype(np.float64)
    p = softmax(logits)
    bottom, top = int(np.argmin(logits)), int(np.argmax(logits))
    cat = model.tokenizer.token_to_id("Ġcat")
    result = predict(model, text, PredictSettings(top=3, asked=[f"id:{bottom}", " cat", f"id:{top}"]))
    assert [q.id for q, _ in result.asked] == [bottom, cat, top]
    assert [rank for _, rank in result.asked] == [plain_rank(logits, j) for j in (bottom, cat, top)]
    assert result.asked[0][1] > 100 and result.asked[2][1] == 1  # far outside the top 100; the top token is rank 1
    np.testing.assert_allclose([q.probability for q, _ in result.asked], p[[bottom, cat, top]], rtol=1e-9)
    np.testing.assert_allclose([q.logit for q, _ in result.asked], logits[[bottom, cat, top]], rtol=1e-6)
    assert result.asked[1][0].text == " cat" and result.asked[1][0].piece == "Ġcat"


def test_tokens_asked_for_in_json_csv_and_the_view(run):
    doc = parse_json(run("predict", "the grey cat", "--model", LLAMA, "--top", "2", "--token", " sat", "--token", "id:5", "--json"))
    assert [set(a) for a in doc["asked"]] == [{"id", "text", "piece", "probability", "logit", "rank"}] * 2
    assert doc["asked"][1]["id"] == 5 and all(a["rank"] >= 1 and 0 <= a["probability"] <= 1 for a in doc["asked"])
    rows = run("predict", "the grey cat", "--model", LLAMA, "--top", "2", "--token", " sat", "--csv").stdout.splitlines()
    assert len(rows) == 1 + 2 + 1 and rows[-1].startswith("asked,")
    shown = run("predict", "the grey cat", "--model", LLAMA, "--top", "2", "--token", " sat", env={"COLUMNS": "80"}).stdout
    assert "--token: where each stands in the vocabulary" in shown and "' sat'" in shown


@pytest.mark.parametrize("asked, says", [
    (" sat on the mat", "is 5 tokens for tiny-llama, not one: 433:' sat' 310:' on' 263:' the' 284:' m' 268:'at'; "),
    ("id:-1", "tiny-llama has ids 0 to"),
    ("id:x", "after id: comes a token id"),
])
def test_a_token_that_is_not_one_token_is_a_usage_error_of_one_line(run, asked, says):
    out = run("predict", "the grey cat", "--model", LLAMA, "--token", asked)
    assert out.exit_code == 2 and says in out.stderr and out.stderr.count("\n") == 1 and not out.stdout, out.stderr


def test_several_tokens_through_a_real_process_exit_2_listing_the_pieces():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "attn_cli", "predict", "the grey cat", "--model", str(LLAMA), "--token", " sat on"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("attn: --token ' sat on' is 2 tokens") and done.stderr.count("\n") == 1


def test_a_token_is_quoted_as_a_reader_sees_it_and_a_long_token_list_is_cut_in_the_middle():
    import io

    from rich.console import Console

    from attn_cli.results.predict import Prediction, PredictResult
    from attn_cli.views.predict import predict_view

    def shown(tokens, position):
        result = PredictResult(model={"name": "m", "type": "llama", "layers": 1, "heads": 1}, tokens=tokens, position=position, predicts="next",
                               temperature=1.0, chat=True, predictions=[Prediction(1, "a", "a", 0.5, 1.0)], lens=None)
        out = io.StringIO()
        console = Console(file=out, width=80, height=24, color_system=None)
        for part in predict_view(result):
            console.print(part)
        return out.getvalue()

    newline = shown(["a", r"\n"], 1)  # the label of a newline token is backslash, n
    assert r"after '\n' (#1)" in newline and r"'\\n'" not in newline
    long = shown([f"w{i}" for i in range(1063)], 1062)
    assert "… 1,031 more … " in long and "(1,063 tokens)" in long and "0:w0 " in long and "1062:w1062" in long and "16:w16 " not in long
    assert long.index("tokens ") < long.index("the next token") and long[:long.index("the next token")].count("\n") <= 5
    middle = shown([f"w{i}" for i in range(1063)], 500)  # the token predicted from is shown wherever it is: 16..499 and 501..1046 left out
    assert "500:w500" in middle and "… 484 more … 500:w500 … 546 more …" in middle.replace("\n", " ").replace("  ", " ")


def test_a_token_the_vocabulary_lacks_or_an_empty_one_is_refused_not_ranked_as_unknown(run):
    out = run("predict", "the cat [MASK] on the mat", "--model", BERT_MLM, "--token", "sat")
    assert out.exit_code == 2 and out.stderr == "attn: --token 'sat' is not in tiny-bert-mlm's vocabulary: its tokenizer makes it [UNK]\n"
    asked = parse_json(run("predict", "the cat [MASK] on the mat", "--model", BERT_MLM, "--token", "[UNK]", "--token", "the", "--json"))["asked"]
    assert [a["piece"] for a in asked] == ["[UNK]", "the"]  # [UNK] itself may be asked for
    out = run("predict", "the grey cat", "--model", LLAMA, "--token", "")
    assert out.exit_code == 2 and "has no tokens for tiny-llama" in out.stderr and out.stderr.count("\n") == 1


@pytest.mark.parametrize("fmt, delimiter", [("--csv", ","), ("--tsv", "\t")])
def test_a_newline_tokens_text_is_a_newline_in_csv(run, fmt, delimiter):
    """`text` is the token's text as it is: a newline (id 199, Ċ) in a quoted cell, read back as one; `token` its label."""
    import csv
    import io

    result = run("predict", "the cat", "--model", checkpoints.tiny_gpt2_folder(), "--top", "1", "--token", "id:199", "--token", "id:198",
                 "--token", "id:202", fmt)
    assert result.exit_code == 0, result.stderr
    asked = {int(r["id"]): r for r in csv.DictReader(io.StringIO(result.stdout), delimiter=delimiter) if r["layer"] == "asked"}
    assert (asked[199]["token"], asked[199]["text"], asked[199]["piece"]) == ("\\n", "\n", "Ċ")
    assert asked[198]["text"] == "\t" and asked[202]["text"] == "\\r"  # a carriage return could move the cursor: escaped
    assert "\r" not in result.stdout and "\x1b" not in result.stdout


def test_predict_from_stdin_is_an_array_for_json_even_for_one_line_and_an_object_a_line_for_jsonl(run):
    model = checkpoints.tiny_gpt2_folder()
    one = parse_json(run("predict", "-", "--model", model, "--top", "2", "--json", input="the cat\n"))
    assert isinstance(one, list) and [d["line"] for d in one] == [1]
    lines = run("predict", "-", "--model", model, "--top", "2", "--jsonl", input="the cat\n\nthe dog\n").stdout.splitlines()
    assert [json.loads(line)["line"] for line in lines] == [1, 3]
    alone = parse_json(run("predict", "the cat", "--model", model, "--top", "2", "--json"))
    assert isinstance(alone, dict) and alone["predictions"] == one[0]["predictions"]
