"""`attn tokens`: a text as a model's tokenizer cuts it, each piece with its id; the rules inspect and predict use."""

import json
import os
import subprocess
import sys

import pytest

from attn_cli.models import loading
from conftest import parse_json
from tests import checkpoints

GGUF = checkpoints.FIXTURES / "gguf"
ORACLE = json.loads((checkpoints.FIXTURES / "oracle-spm-tokens.json").read_text(encoding="utf-8"))
SPM = {name: GGUF / name for name in ("llama2-spm.F16.gguf", "tinyllama-spm.F16.gguf", "mistral-spm.F16.gguf")}


@pytest.mark.parametrize("name", sorted(SPM))
def test_the_ids_are_transformers(name, run):
    """Each awkward text's ids and pieces, as transformers gives them for the same GGUF (its BOS/EOS rules too)."""
    want = ORACLE["models"][name]
    for k in (0, 2, 5, 9, 13, 17, 18, 20):  # plain, leading spaces, tabs, repeated spaces, emoji, digits, all spaces, \t\n \r\n
        text = ORACLE["texts"][k]
        got = parse_json(run("tokens", text, "--model", SPM[name], "--json"))
        assert [t["id"] for t in got["tokens"]] == want["ids"][k], repr(text)
        assert [t["piece"] for t in got["tokens"]] == want["tokens"][k], repr(text)


def test_special_tokens_are_marked_and_have_no_characters(run):
    got = parse_json(run("tokens", "[INST] hi [/INST]", "--model", SPM["mistral-spm.F16.gguf"], "--json"))["tokens"]
    assert [t["piece"] for t in got if t["special"]] == ["<s>", "[INST]", "[/INST]", "</s>"]  # added BOS/EOS and spelled controls
    assert (got[0]["start"], got[0]["end"], got[-1]["start"]) == (None, None, None)
    assert (got[1]["start"], got[1]["end"]) == (0, 6)
    assert all(set(t) == {"id", "piece", "text", "special", "start", "end"} for t in got)


@pytest.mark.parametrize("model", [SPM["llama2-spm.F16.gguf"], GGUF / "tiny-qwen2.Q8_0.gguf", checkpoints.FIXTURES / "tiny-llama",
                                   checkpoints.FIXTURES / "tiny-bert-mlm"])
def test_the_ids_are_the_ones_inspect_and_predict_run_on(model, run):
    """SentencePiece, byte-level BPE (a GGUF and a folder) and WordPiece: the ids and labels of model.tokenize, which the
    forward pass reads, and the labels predict prints."""
    text = "naïve café, 東京 [MASK]" if "bert" in str(model) else "naïve café, 東京 2024"
    got = parse_json(run("tokens", text, "--model", model, "--json"))
    chosen = loading.load(str(model))
    tokens = chosen.tokenize(text)
    assert [t["id"] for t in got["tokens"]] == tokens.ids and [t["text"] for t in got["tokens"]] == tokens.labels
    specials = {i for i, added in chosen.tokenizer.get_added_tokens_decoder().items() if added.special}  # [CLS], [UNK], <s>, ...
    assert [t["special"] for t in got["tokens"]] == [s or i in specials for s, i in zip(tokens.special, tokens.ids)]
    assert any(tokens.special) == ("qwen2" not in str(model))  # Qwen2 adds no BOS
    assert got["count"] == len(tokens.ids) and got["model"]["vocabulary"] > 0
    if "bert" not in str(model):
        predicted = parse_json(run("predict", text, "--model", model, "--json"))
        assert predicted["tokens"] == [t["text"] for t in got["tokens"]]


def test_wordpiece_marks_cls_and_sep(run):
    got = parse_json(run("tokens", "the, qzx", "--model", checkpoints.FIXTURES / "tiny-bert-mlm", "--json"))["tokens"]
    assert [(t["piece"], t["special"]) for t in got] == [("[CLS]", True), ("the", False), (",", False), ("[UNK]", True), ("[SEP]", True)]


def test_byte_fallback_pieces_read_as_bytes(run):
    got = parse_json(run("tokens", "東", "--model", SPM["llama2-spm.F16.gguf"], "--json"))["tokens"]
    pieces = [t for t in got if t["piece"].startswith("<0x")]
    assert [t["piece"] for t in pieces] == ["<0xE6>", "<0x9D>", "<0xB1>"] and [t["text"] for t in pieces] == ["0xE6", "0x9D", "0xB1"]


def test_glove_words_and_their_rows(run, glove):
    got = parse_json(run("tokens", "The cat can't qzxqzx", "--json"))
    assert [t["piece"] for t in got["tokens"]] == ["the", "cat", "ca", "n't", "qzxqzx"]
    assert [t["id"] for t in got["tokens"]] == [glove.key_to_index[w] for w in ("the", "cat", "ca", "n't")] + [None]
    assert got["model"]["type"] == "word vectors" and not any(t["special"] for t in got["tokens"])


def test_chat_wraps_the_text_in_the_template(run):
    got = parse_json(run("tokens", "hi", "--model", SPM["tinyllama-spm.F16.gguf"], "--chat", "--json"))
    assert got["chat"] and got["text"].startswith("<|user|>\nhi</s>")
    model = loading.load(str(SPM["tinyllama-spm.F16.gguf"]))
    assert [t["id"] for t in got["tokens"]] == model.tokenize("hi", chat=True).ids


def test_the_table_the_csv_and_stdin(run):
    table = run("tokens", "hi [INST]", "--model", SPM["mistral-spm.F16.gguf"], env={"COLUMNS": "80"})
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert lines[0] == "mistral-spm · mistral · 6 tokens"
    assert [line.split() for line in lines[4:10]] == [["0", "1", "<s>", "<s>", "special"], ["1", "2338", "▁", "“␣”"], ["2", "432", "hi", "hi"],
                                                     ["3", "2338", "▁", "“␣”"], ["4", "3", "[INST]", "[INST]", "special"], ["5", "2", "</s>", "</s>", "special"]]
    csv = run("tokens", "hi", "--model", SPM["llama2-spm.F16.gguf"], "--csv")
    assert csv.stdout.splitlines()[0] == "index,id,piece,text,special,start,end"
    assert csv.stdout.splitlines()[1] == "0,1,<s>,<s>,true,,"
    lines = run("tokens", "-", "--jsonl", input="one\ntwo\n").stdout.splitlines()
    assert [json.loads(line)["tokens"][0]["piece"] for line in lines] == ["one", "two"]


@pytest.mark.parametrize("args, code, message", [
    (["tokens", "hi", "--chat"], 2, "--chat needs --model"),
    (["tokens", "hi", "--model", str(SPM["llama2-spm.F16.gguf"]), "--chat"], 2, "has no chat template"),
    (["tokens", "   "], 2, "no words in the input"),
    (["tokens", "...!"], 2, None),
    (["tokens", "hi", "--model", "/no/such/model.gguf"], 2, "/no/such/model.gguf"),
])
def test_bad_input_is_one_line(args, code, message, run):
    done = run(*args)
    if message is None:  # punctuation is a GloVe word: it has tokens
        assert done.exit_code == 0
        return
    assert done.exit_code == code and done.stdout == "" and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_real_process():
    env = os.environ | {"NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "attn_cli", "tokens", "Hello world", "--model", str(SPM["llama2-spm.F16.gguf"]), "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    assert [t["id"] for t in json.loads(done.stdout)["tokens"]] == ORACLE["models"]["llama2-spm.F16.gguf"]["ids"][0]
