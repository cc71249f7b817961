"""A GGUF file's tokenizer: tokenizer.ggml.* metadata rebuilt as a `tokenizers` byte-level BPE, as llama.cpp splits text."""

import numpy as np

from attn_cli.errors import DataError, is_panic, native_stderr_held
from attn_cli.models.sources.gguf_file import GGUFFile, _get
from attn_cli.models.sources.gguf_spm import check_special_ids, check_spm
from attn_cli.models.sources.gguf_spm_text import build_spm_tokenizer

# tokenizer.ggml.pre -> llama.cpp's split regexes (llama-vocab.cpp), applied one after another, then the byte alphabet
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN2 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRE_TOKENIZERS = {
    "default": (r"[\p{P}\$\+<=>\^~\|]+", _GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"),
    "gpt2": (_GPT2,), "gpt-2": (_GPT2,), "mpt": (_GPT2,), "olmo": (_GPT2,),
    "smollm": (r"\p{N}", _GPT2), "starcoder": (r"\p{N}", _GPT2), "refact": (r"\p{N}", _GPT2),
    "llama3": (_LLAMA3,), "llama-v3": (_LLAMA3,), "llama-bpe": (_LLAMA3,), "falcon3": (_LLAMA3,),
    "qwen2": (_QWEN2,), "deepseek-r1-qwen": (_QWEN2,),
}
LLAMA3_PRES = ("llama3", "llama-v3", "llama-bpe", "falcon3")  # llama.cpp: a whole piece in the vocabulary skips the merges; BOS by default
CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values (llama.cpp's LLAMA_TOKEN_TYPE_*)


def _check_tokenizer(file: GGUFFile, config: dict) -> None:
    """The tokenizer metadata is of the right kinds and sizes (cheap: the tokenizer itself is built on demand)."""
    model = _get(file, "tokenizer.ggml.model", str, required=True)
    if model == "llama":
        return check_spm(file, config)
    if model != "gpt2":
        raise DataError(f"{file.path}: tokenizer {model!r} is not supported; attn builds gpt2 (byte-level BPE) and llama (SentencePiece) tokenizers from GGUF")
    pre = _get(file, "tokenizer.ggml.pre", str, default="default")
    if pre not in PRE_TOKENIZERS:
        raise DataError(f"{file.path}: pre-tokenizer {pre!r} is not supported; attn knows {', '.join(PRE_TOKENIZERS)}")
    tokens = file.metadata.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens:
        raise DataError(f"{file.path}: GGUF metadata tokenizer.ggml.tokens should be a list of strings")
    merges = file.metadata.get("tokenizer.ggml.merges", [])
    if not isinstance(merges, list):
        raise DataError(f"{file.path}: GGUF metadata tokenizer.ggml.merges should be a list of strings")
    types = file.metadata.get("tokenizer.ggml.token_type")
    if types is not None and (not isinstance(types, np.ndarray) or types.dtype.kind not in "iu" or len(types) != len(tokens)):
        raise DataError(f"{file.path}: GGUF metadata tokenizer.ggml.token_type should be {len(tokens):,} integers")
    check_special_ids(file, config, len(tokens))


def special_tokens_processor(tokens: list[str], bos_id: int | None, eos_id: int | None):
    """A post-processor that puts BOS before and EOS after each sequence, or None when neither is added.

    The template names the specials by fixed keys and each key's token is given as an id and a text:
    the file's token texts never enter the template string, where "$A", "$B" or "$A:1" would be read
    as template syntax (a sequence inserted twice, or a panic in Rust)."""
    from tokenizers import processors

    single, specials = ["$A"], []
    if bos_id is not None:
        single.insert(0, "[bos]")
        specials.append({"id": "[bos]", "ids": [bos_id], "tokens": [tokens[bos_id]]})
    if eos_id is not None:
        single.append("[eos]")
        specials.append({"id": "[eos]", "ids": [eos_id], "tokens": [tokens[eos_id]]})
    if not specials:
        return None
    pair = single + ["$B:1" if p == "$A" else p for p in single]
    return processors.TemplateProcessing(single=single, pair=pair, special_tokens=specials)


def build_tokenizer(file: GGUFFile, add_bos: bool, add_eos: bool):
    """A `tokenizers` byte-level BPE from tokenizer.ggml.*: llama.cpp's split regexes for `pre`, the file's
    merges, control tokens as specials (user-defined ones as added tokens), BOS/EOS as the file says."""
    if _get(file, "tokenizer.ggml.model", str) == "llama":
        return build_spm_tokenizer(file, add_bos, add_eos)
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, pre_tokenizers, processors
    from tokenizers.models import BPE

    tokens = file.metadata["tokenizer.ggml.tokens"]
    pre = _get(file, "tokenizer.ggml.pre", str, default="default")
    types = file.metadata.get("tokenizer.ggml.token_type")
    types = types.tolist() if types is not None else [1] * len(tokens)
    vocab = {token: i for i, token in enumerate(tokens)}
    merges = []
    for k, merge in enumerate(file.metadata.get("tokenizer.ggml.merges", [])):
        left, space, right = merge.partition(" ")
        if not space or not left or not right or " " in right:
            raise DataError(f"{file.path}: merge {k:,} ({merge[:40]!r}) is not two tokens separated by a space")
        merges.append((left, right))
    try:
        with native_stderr_held():  # a Rust panic's report is dropped: it is said in one line
            options = {"ignore_merges": True} if pre in LLAMA3_PRES else {}
            tok = Tokenizer(BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False, **options))
            tok.pre_tokenizer = pre_tokenizers.Sequence(
                [pre_tokenizers.Split(Regex(p), behavior="isolated") for p in PRE_TOKENIZERS[pre]]
                + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
            )
            tok.decoder = decoders.ByteLevel()
            tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types) if k == CONTROL])
            tok.add_tokens([AddedToken(t, special=False, normalized=False) for t, k in zip(tokens, types) if k == USER_DEFINED])
            bos_id, eos_id = _get(file, "tokenizer.ggml.bos_token_id", int), _get(file, "tokenizer.ggml.eos_token_id", int)
            post = special_tokens_processor(tokens, bos_id if add_bos else None, eos_id if add_eos else None)
            if post is not None:
                tok.post_processor = post
    except BaseException as e:  # tokenizers raises plain Exception for a bad vocabulary, and a Rust panic as a BaseException
        if not isinstance(e, Exception) and not is_panic(e):
            raise
        raise DataError(f"{file.path}: cannot build the tokenizer ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    tok.no_padding()
    tok.no_truncation()
    return tok
