"""SentencePiece GGUF tokenizers (tokenizer.ggml.model "llama"): transformers' ids, llama.cpp's algorithm, the merges."""

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_cli.errors import DataError
from attn_cli.models.sources import gguf
from attn_cli.models.sources.gguf_file import read_file
from attn_cli.models.sources.gguf_spm import derive_merges
from attn_cli.models.sources.gguf_tokenizer import build_tokenizer

FIXTURES = Path(__file__).parent / "fixtures" / "models"
ORACLE = json.loads((FIXTURES / "oracle-spm-tokens.json").read_text(encoding="utf-8"))
TINY = sorted(name for name in ORACLE["models"] if name.endswith("-spm.F16.gguf"))
GEMMA = "gemma-3-270m-q4_k_m.gguf"


def generate_merges(tokens: list[str], ranks) -> list[tuple[int, int]]:
    """transformers' `generate_merges` as plain loops (tokenization_utils_base.py), over ids."""
    vocab = {t: i for i, t in enumerate(tokens)}
    rank = dict(zip(tokens, ranks))
    merges = []
    for merged, score in rank.items():
        local = [(merged[:k], merged[k:], score) for k in range(1, len(merged)) if merged[:k] in vocab and merged[k:] in vocab]
        merges.extend(sorted(local, key=lambda x: (vocab[x[0]], vocab[x[1]])))
    merges = sorted(merges, key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(vocab[a], vocab[b]) for a, b, _ in merges]


def llama_cpp_spm(text: str, tokens: list[str], scores, prefix: bool) -> list[int]:
    """llama.cpp's llm_tokenizer_spm as a plain loop: spaces as "▁", then merge the adjacent pair whose concatenation is
    the best-scored token (the leftmost on a tie) until none is; a symbol outside the vocabulary as its <0xNN> bytes."""
    ids = {t: i for i, t in enumerate(tokens)}
    symbols = list(((" " if prefix else "") + text).replace(" ", "\u2581"))
    while True:
        best = None
        for i in range(len(symbols) - 1):
            merged = ids.get(symbols[i] + symbols[i + 1])
            if merged is not None and (best is None or scores[merged] > best[0]):
                best = (scores[merged], i)
        if best is None:
            break
        i = best[1]
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
    out = []
    for s in symbols:
        out.extend([ids[s]] if s in ids else [ids[f"<0x{b:02X}>"] for b in s.encode("utf-8")])
    return out


@lru_cache(maxsize=None)
def tiny(name: str):
    return gguf.load(FIXTURES / "gguf" / name).tokenizer()


@pytest.fixture(scope="module")
def tiny_tokenizers():
    return {name: tiny(name) for name in TINY}


@pytest.mark.parametrize("name", TINY)
def test_tiny_files_give_transformers_ids(name, tiny_tokenizers):
    tok, want = tiny_tokenizers[name], ORACLE["models"][name]
    for text, ids, plain, pieces in zip(ORACLE["texts"], want["ids"], want["plain"], want["tokens"]):
        enc = tok.encode(text)
        assert (enc.ids, enc.tokens) == (ids, pieces), text
        assert tok.encode(text, add_special_tokens=False).ids == plain, text


def test_bos_and_eos_as_the_files_say(tiny_tokenizers):
    llama, mistral = tiny_tokenizers["llama2-spm.F16.gguf"], tiny_tokenizers["mistral-spm.F16.gguf"]
    assert llama.encode("hi").ids[0] == 1 and llama.encode("hi").ids[-1] != 2  # add_bos_token, no add_eos_token
    assert mistral.encode("hi").ids[0] == 1 and mistral.encode("hi").ids[-1] == 2  # and add_eos_token
    assert llama.encode("hi").special_tokens_mask[0] == 1


def test_control_tokens_in_the_text_stay_whole(tiny_tokenizers):
    enc = tiny_tokenizers["mistral-spm.F16.gguf"].encode("[INST] hi [/INST]", add_special_tokens=False)
    added = tiny_tokenizers["mistral-spm.F16.gguf"].get_added_tokens_decoder()
    assert enc.tokens[0] == "[INST]" and enc.tokens[-1] == "[/INST]" and added[enc.ids[0]].special


@pytest.mark.parametrize("name", TINY)
@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("abcdeilnorst ,.\n\t0123456789éü東🙂A")), max_size=40))
def test_the_bpe_is_llama_cpps_spm(name, text):
    """Merging by score (llama.cpp) gives the BPE's ids, on the vocabularies sentencepiece made. The one difference is
    transformers' (Metaspace's): no "▁" is put before a text that starts with a space, where llama.cpp puts one."""
    file = read_file(FIXTURES / "gguf" / name)
    tokens, scores = file.metadata["tokenizer.ggml.tokens"], file.metadata["tokenizer.ggml.scores"]
    prefix = bool(text) and not text.startswith(" ")
    assert tiny(name).encode(text, add_special_tokens=False).ids == llama_cpp_spm(text, tokens, scores, prefix=prefix)


def test_without_the_space_prefix_as_the_file_says(tmp_path):
    """add_space_prefix false: no "▁" before the text (llama.cpp); transformers adds it to a llama file whatever the flag says."""
    file = read_file(FIXTURES / "gguf" / "llama2-spm.F16.gguf")
    file.metadata["tokenizer.ggml.add_space_prefix"] = False
    file.value_types["tokenizer.ggml.add_space_prefix"] = 7
    tok = build_tokenizer(file, False, False)
    tokens, scores = file.metadata["tokenizer.ggml.tokens"], file.metadata["tokenizer.ggml.scores"]
    for text in ("Hello world", "  two spaces", "x"):
        assert tok.encode(text).ids == llama_cpp_spm(text, tokens, scores, prefix=False)
        assert tok.decode(tok.encode(text).ids) == text


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.lists(st.text(alphabet="ab▁c", min_size=1, max_size=5), min_size=1, max_size=30),
    scores=st.lists(st.sampled_from([0.0, -1.0, -2.0, -1000.0]), min_size=30, max_size=30),
)
def test_merges_are_transformers_order(tokens, scores):
    """Duplicated strings, tied scores: the vectorised merges are generate_merges' own, in its order."""
    ranks = np.array(scores[: len(tokens)], dtype=np.float64)
    left, right = derive_merges(tokens, ranks)
    assert list(zip(left.tolist(), right.tolist())) == generate_merges(tokens, ranks.tolist())


def test_long_tokens_are_checked_as_strings(monkeypatch):
    """A hash that collides (base 1: anagrams) is caught on a long token: its merges are compared as strings."""
    from attn_cli.models.sources import gguf_spm

    tokens = ["ab" * 35, "a" * 18 + "b" * 18, "b" * 17 + "a" * 17]  # the anagrams of a split of the first, none a split
    ones = lambda n: (np.ones(n, dtype=np.uint64), np.ones(n, dtype=np.uint64))  # noqa: E731
    monkeypatch.setattr(gguf_spm, "_powers", ones)
    left, right = derive_merges(tokens, np.zeros(len(tokens)))
    assert generate_merges(tokens, [0.0] * 3) == [] and left.size == 0
    tokens += ["ab" * 18, "ab" * 17]  # the true split as well
    left, right = derive_merges(tokens, np.zeros(len(tokens)))
    assert list(zip(left.tolist(), right.tolist())) == generate_merges(tokens, [0.0] * 5) == [(3, 4), (4, 3)]


@pytest.mark.parametrize("key, value, message", [
    ("tokenizer.ggml.scores", np.zeros(3, dtype=np.float32), "tokenizer.ggml.scores should be"),
    ("tokenizer.ggml.scores", None, "tokenizer.ggml.scores should be"),
    ("tokenizer.ggml.token_type", np.zeros(3, dtype=np.float32), "tokenizer.ggml.token_type should be"),
])
def test_bad_vocabulary_metadata_is_one_line(key, value, message, tmp_path):
    from attn_cli.models.sources.gguf_tokenizer import _check_tokenizer

    file = read_file(FIXTURES / "gguf" / "llama2-spm.F16.gguf")
    if value is None:
        del file.metadata[key]
    else:
        file.metadata[key] = value
    with pytest.raises(DataError, match=message):
        _check_tokenizer(file, gguf.config_from(file))


def test_nan_scores_are_refused():
    from attn_cli.models.sources.gguf_tokenizer import _check_tokenizer

    file = read_file(FIXTURES / "gguf" / "llama2-spm.F16.gguf")
    file.metadata["tokenizer.ggml.scores"] = file.metadata["tokenizer.ggml.scores"].copy()
    file.metadata["tokenizer.ggml.scores"][7] = np.nan
    with pytest.raises(DataError, match="NaN"):
        _check_tokenizer(file, gguf.config_from(file))


# --- Gemma 3 270M, the real file ----------------------------------------------------------------


@pytest.fixture(scope="module")
def gemma():
    from checkpoints import gemma3_gguf

    file = read_file(gemma3_gguf())
    return file, build_tokenizer(file, True, False)


@pytest.mark.slow
def test_gemma_gives_transformers_ids(gemma):
    _, tok = gemma
    want = ORACLE["models"][GEMMA]
    for text, ids, plain, pieces in zip(ORACLE["texts"], want["ids"], want["plain"], want["tokens"]):
        enc = tok.encode(text)
        assert (enc.ids, enc.tokens) == (ids, pieces), text
        assert tok.encode(text, add_special_tokens=False).ids == plain, text


@pytest.mark.slow
def test_gemma_merges_by_score_as_llama_cpp(gemma):
    """On Gemma's 262,144 tokens, merging by the file's scores (llama.cpp) gives transformers' position-ranked BPE's ids
    (texts without runs of whitespace, which llama.cpp cuts out first as user-defined tokens of spaces)."""
    file, tok = gemma
    tokens, scores = file.metadata["tokenizer.ggml.tokens"], file.metadata["tokenizer.ggml.scores"]
    texts = [t for t in ORACLE["texts"] if "  " not in t and "\n" not in t and "\t" not in t and "<" not in t and t.strip()]
    assert len(texts) > 15
    for text in texts:
        assert tok.encode(text, add_special_tokens=False).ids == llama_cpp_spm(text, tokens, scores, prefix=False), text


@pytest.mark.parametrize("name", TINY)
def test_the_files_open_with_inspect_and_predict(name, run):
    """A Llama 2, TinyLlama or Mistral GGUF with a SentencePiece vocabulary runs: its tokens as transformers cuts them."""
    from conftest import parse_json

    path = FIXTURES / "gguf" / name
    want = ORACLE["models"][name]["tokens"][1]  # "The capital of France is"
    shown = parse_json(run("inspect", ORACLE["texts"][1], "--model", path, "--json"))
    assert shown["pieces"] == want and shown["tokens"][1:] == [p.lstrip("\u2581") for p in want[1:len(shown["tokens"])]]
    predicted = parse_json(run("predict", ORACLE["texts"][1], "--model", path, "--top", "3", "--json"))
    assert len(predicted["predictions"]) == 3 and predicted["tokens"] == shown["tokens"]
    words = parse_json(run("inspect", "The cat sat on the mat", "--model", path, "--words", "--json"))["tokens"]
    assert [w for w in words if w not in ("<s>", "</s>")] == ["The", "cat", "sat", "on", "the", "mat"]  # words start at "▁"


EDITS = {  # a hostile or careless vocabulary: the tokenizer is built and encodes, or the file is refused in one line
    "a string twice": lambda m: m["tokenizer.ggml.tokens"].__setitem__(500, m["tokenizer.ggml.tokens"][400]),
    "an empty token": lambda m: m["tokenizer.ggml.tokens"].__setitem__(500, ""),
    "a token of 10,000 characters": lambda m: m["tokenizer.ggml.tokens"].__setitem__(500, "ab" * 5000),
    "a NUL inside a token": lambda m: m["tokenizer.ggml.tokens"].__setitem__(600, "a\x00b"),
    "no byte tokens": lambda m: m["tokenizer.ggml.tokens"].__setitem__(slice(3, 259), [f"zz{i}" for i in range(256)]),
    "every score equal": lambda m: m["tokenizer.ggml.scores"].fill(0),
    "every token the same": lambda m: m["tokenizer.ggml.tokens"].__setitem__(slice(None), ["a"] * len(m["tokenizer.ggml.tokens"])),
    "every token a control token": lambda m: m["tokenizer.ggml.token_type"].fill(3),
    "an unknown id out of range": lambda m: m.__setitem__("tokenizer.ggml.unknown_token_id", 10**9),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_strange_vocabulary_builds_or_is_refused(edit):
    file = read_file(FIXTURES / "gguf" / "llama2-spm.F16.gguf")
    file.metadata["tokenizer.ggml.scores"] = file.metadata["tokenizer.ggml.scores"].copy()
    file.metadata["tokenizer.ggml.token_type"] = file.metadata["tokenizer.ggml.token_type"].copy()
    EDITS[edit](file.metadata)
    tok = build_tokenizer(file, True, False)
    ids = tok.encode("Hello wörld 東 ab").ids
    assert ids and all(0 <= i < len(file.metadata["tokenizer.ggml.tokens"]) for i in ids)


@pytest.mark.parametrize("name", TINY)
@settings(max_examples=40, deadline=None)
@given(text=st.lists(st.sampled_from(list("abcdeilnorst ,.\n\t019éü東🙂A") + ["[INST]", "<s>", "</s>"]), max_size=40).map("".join),
       ids=st.lists(st.integers(min_value=0, max_value=1999), max_size=12), skip=st.booleans())
def test_the_small_bpe_of_a_text_is_the_whole_one(name, text, ids, skip):
    """A short text is cut by a BPE of only the tokens inside it (and decoded from the vocabulary): the whole BPE's answers."""
    tok = tiny(name)
    whole = tok.whole
    for special in (True, False):
        mine, theirs = tok.encode(text, add_special_tokens=special), whole.encode(text, add_special_tokens=special)
        assert (mine.ids, mine.tokens, mine.offsets, mine.special_tokens_mask) == (theirs.ids, theirs.tokens, theirs.offsets, theirs.special_tokens_mask)
    assert tok.decode(ids, skip_special_tokens=skip) == whole.decode(ids, skip_special_tokens=skip)
    assert [tok.id_to_token(i) for i in ids] == [whole.id_to_token(i) for i in ids]


def test_a_long_text_goes_to_the_whole_bpe(monkeypatch):
    from attn_cli.models.sources import gguf_spm_text

    text = " ".join(ORACLE["texts"]) * 3
    small = gguf.load(FIXTURES / "gguf" / "llama2-spm.F16.gguf").tokenizer().encode(text).ids  # below SHORT: the small BPE
    monkeypatch.setattr(gguf_spm_text, "SHORT", 10)
    tok = gguf.load(FIXTURES / "gguf" / "llama2-spm.F16.gguf").tokenizer()
    assert tok._whole is None and tok.encode(text).ids == small and tok._whole is not None


def test_after_a_few_dozen_texts_the_whole_bpe(monkeypatch):
    from attn_cli.models.sources import gguf_spm_text

    monkeypatch.setattr(gguf_spm_text, "SMALL_BUILDS", 3)
    tok = gguf.load(FIXTURES / "gguf" / "llama2-spm.F16.gguf").tokenizer()
    texts = ORACLE["texts"][:6]
    got = [tok.encode(t).ids for t in texts]
    assert tok._small_builds == 3 and tok._whole is not None
    assert got == ORACLE["models"]["llama2-spm.F16.gguf"]["ids"][:6]


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(text=st.lists(st.sampled_from(list("abdeinorst TA,.\n\t019éü東京🙂ＦＵ") + ["<start_of_turn>", "<bos>", "  "]), max_size=30).map("".join))
def test_gemmas_small_bpe_is_its_whole_one(text, gemma):
    _, tok = gemma
    assert tok.encode(text).ids == tok.whole.encode(text).ids


def test_a_phi3_file_puts_its_prefix_before_every_text():
    """transformers reads a Phi-3 SentencePiece file with "▁" before every text, one that starts with a space too; the same
    vocabulary with general.architecture "phi3" gives its ids (the small BPE's and the whole one's)."""
    file = read_file(FIXTURES / "gguf" / "llama2-spm.F16.gguf")
    file.metadata["general.architecture"] = "phi3"
    tok = build_tokenizer(file, True, False)
    want = ORACLE["models"]["llama2-spm.F16.gguf as phi3"]
    for text, ids, plain in zip(ORACLE["texts"], want["ids"], want["plain"]):
        assert tok.encode(text).ids == ids == tok.whole.encode(text).ids, repr(text)
        assert tok.encode(text, add_special_tokens=False).ids == plain, repr(text)
    assert want["ids"][2] != ORACLE["models"]["llama2-spm.F16.gguf"]["ids"][2]  # " leading space": "▁▁leading", not "▁leading"


@pytest.mark.parametrize("bos", ["$A", "$B:1", "a b", "x:1"])
def test_a_bos_spelled_as_template_syntax_is_still_one_bos(bos):
    file = read_file(FIXTURES / "gguf" / "mistral-spm.F16.gguf")
    file.metadata["tokenizer.ggml.tokens"][1] = bos
    tok = build_tokenizer(file, True, True)
    enc = tok.encode("hi")
    assert enc.ids[0] == 1 and enc.ids[-1] == 2 and enc.tokens[0] == bos and enc.ids.count(1) == 1
