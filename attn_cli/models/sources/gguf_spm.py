"""A SentencePiece GGUF's tokenizer (tokenizer.ggml.model "llama": Llama 2, TinyLlama, Mistral, Gemma) as a `tokenizers` BPE.

llama.cpp's SPM tokenizer (llm_tokenizer_spm) writes each space as "▁", starts from the characters and
merges, again and again, the adjacent pair whose concatenation is the best-scored token of the
vocabulary; a piece left outside the vocabulary falls back to its bytes, <0xNN>. That is BPE whose
merges are every split of every token into two tokens, ranked by the whole token's score. The merges
are derived here from the vocabulary alone, in NumPy (a hash of every prefix and suffix of every
token, looked up among the tokens' hashes: no loop over pairs), and ranked as transformers' GGUF
loader ranks them, so the ids are those of `AutoTokenizer.from_pretrained(..., gguf_file=...)`.
"""

import os

import numpy as np

from attn_cli.errors import DataError
from attn_cli.models.sources.gguf_file import GGUFFile, _get

CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values (llama.cpp's LLAMA_TOKEN_TYPE_*)
# transformers' GGUF loader (integrations/gguf/gguf_tokenizer_mapping.py: gemma_tokenizer) reads a Gemma vocabulary two ways
# differently: its tokens of spaces are stored as spaces but looked up as "▁", and its merges rank by the tokens' order in
# the file (its scores are -1000 for the tokens that are not normal, whatever their place)
BY_POSITION = ("gemma", "gemma2", "gemma3")
PREPENDED = ("phi3",)  # and (phi3_tokenizer) a Phi-3's "▁" comes before every text, one that starts with a space too
EXACT_CHECK = 64  # tokens longer than this have their merges checked string by string: no hash of a short string collides by design


def check_spm(file: GGUFFile, config: dict) -> None:
    """tokenizer.ggml.tokens, scores and token_type are of the right kinds and sizes (cheap: the tokenizer is built on demand)."""
    tokens = file.metadata.get("tokenizer.ggml.tokens")
    if not isinstance(tokens, list) or not tokens:
        raise DataError(f"{file.path}: GGUF metadata tokenizer.ggml.tokens should be a list of strings")
    for key, kinds in (("scores", "f"), ("token_type", "iu")):
        values = file.metadata.get(f"tokenizer.ggml.{key}")
        if values is None and key == "token_type":
            continue
        if not isinstance(values, np.ndarray) or values.dtype.kind not in kinds or len(values) != len(tokens):
            raise DataError(f"{file.path}: GGUF metadata tokenizer.ggml.{key} should be {len(tokens):,} {'numbers' if kinds == 'f' else 'integers'}")
    if not np.isfinite(file.metadata["tokenizer.ggml.scores"]).all():
        raise DataError(f"{file.path}: GGUF metadata tokenizer.ggml.scores holds NaN or infinite values")
    check_special_ids(file, config, len(tokens))


def check_special_ids(file: GGUFFile, config: dict, n_tokens: int) -> None:
    """A vocabulary's BOS and EOS among its tokens, and no more tokens than the embedding has rows (any GGUF tokenizer)."""
    for key in ("bos_token_id", "eos_token_id"):
        if config[key] is not None and not 0 <= config[key] < n_tokens:
            raise DataError(f"{file.path}: tokenizer.ggml.{key} is {config[key]}, but there are {n_tokens:,} tokens")
    rows = file.tensors["token_embd.weight"].dims[-1]
    if n_tokens > rows:
        raise DataError(f"{file.path}: {n_tokens:,} tokens but token_embd.weight has {rows:,} rows")


class Vocabulary:
    """A SentencePiece GGUF's vocabulary, as transformers' GGUF loader reads it (respelled, ranked), and its special tokens."""

    def __init__(self, file: GGUFFile, add_bos: bool, add_eos: bool):
        self.path = file.path
        self.by_position = _get(file, "general.architecture", str, default="") in BY_POSITION
        self.stored = file.metadata["tokenizer.ggml.tokens"]  # as the file spells them
        types = file.metadata.get("tokenizer.ggml.token_type")
        self.types = types.tolist() if types is not None else [1] * len(self.stored)
        self.tokens = ["\u2581" * len(t) if " " in t and not t.strip() else t for t in self.stored] if self.by_position else self.stored
        self.ranks = -np.arange(len(self.tokens), dtype=np.float64) if self.by_position else file.metadata["tokenizer.ggml.scores"].astype(np.float64)
        unk = _get(file, "tokenizer.ggml.unknown_token_id", int)
        self.unk_id = unk if unk is not None and 0 <= unk < len(self.tokens) else None
        self.prefix = _get(file, "tokenizer.ggml.add_space_prefix", bool, default=not self.by_position)
        self.prepended = self.prefix and _get(file, "general.architecture", str, default="") in PREPENDED
        self.bos = _get(file, "tokenizer.ggml.bos_token_id", int) if add_bos else None
        self.eos = _get(file, "tokenizer.ggml.eos_token_id", int) if add_eos else None
        self._ids = self._strings = None

    @property
    def ids(self) -> dict:  # string -> id, the last of a string spelled twice
        if self._ids is None:
            self._ids = dict(zip(self.tokens, range(len(self.tokens))))
        return self._ids

    @property
    def strings(self) -> np.ndarray:  # [V] the tokens as an object array: gathered by id in C, not a Python loop
        if self._strings is None:
            self._strings = np.array(self.tokens, dtype=object)
        return self._strings

    def control(self) -> list[int]:
        return [i for i, k in enumerate(self.types) if k == CONTROL]

    def user_defined(self) -> list[int]:  # transformers adds a user-defined token only as the vocabulary spells it
        ids = self.ids
        return [i for i, (t, k) in enumerate(zip(self.stored, self.types)) if k == USER_DEFINED and t in ids]


def make_tokenizer(vocab: Vocabulary, keep: np.ndarray | None = None, control: list[int] | None = None, user: list[int] | None = None):
    """A `tokenizers` BPE with byte fallback over the whole vocabulary, or over the ids `keep` (ascending) only: their merges,
    ranked as among all the merges, give the same pieces on any text made of those tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE

    strings = vocab.strings
    ids = np.arange(len(vocab.tokens)) if keep is None else keep
    left, right = derive_merges(strings[ids].tolist() if keep is not None else vocab.tokens, vocab.ranks[ids])
    left, right = ids[left], ids[right]
    words = vocab.ids if keep is None else dict(zip(strings[ids].tolist(), ids.tolist()))
    unk = vocab.tokens[vocab.unk_id] if vocab.unk_id is not None else None
    control = vocab.control() if control is None else control
    user = vocab.user_defined() if user is None else user
    try:
        tok = Tokenizer(BPE(vocab=words, merges=list(zip(strings[left].tolist(), strings[right].tolist())), unk_token=unk, fuse_unk=True, byte_fallback=True))
        if vocab.by_position:  # GemmaTokenizer's: every space a "▁", no prefix
            tok.normalizer = normalizers.Replace(" ", "\u2581")
        elif vocab.prepended:  # transformers' phi3_tokenizer: "▁" before the whole text, whatever it starts with
            tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
        else:  # LlamaTokenizer's: the prefix before the text's first piece only
            tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first" if vocab.prefix else "never", split=False)
        steps = [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
        tok.decoder = decoders.Sequence(steps + ([decoders.Strip(content=" ", left=1, right=0)] if vocab.prefix else []))
        tok.add_special_tokens([AddedToken(vocab.tokens[i], special=True, normalized=False) for i in control])
        tok.add_tokens([AddedToken(vocab.stored[i], special=False, normalized=False) for i in user])
        tok.post_processor = _bos_eos(vocab)
    except Exception as e:  # the tokenizers package raises plain Exception for a bad vocabulary
        raise DataError(f"{vocab.path}: cannot build the tokenizer ({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
    tok.no_padding()
    tok.no_truncation()
    return tok


def _bos_eos(vocab: Vocabulary):
    """BOS before the text and EOS after it, as tokenizer.ggml.add_bos_token / add_eos_token say (None: nothing added).
    The template names them by fixed keys, each given its id and text: a file's token text never enters the template,
    where "$A" or "x:1" would be read as its syntax."""
    from tokenizers import processors

    single, specials = ["$A"], []
    for key, i, at in (("[bos]", vocab.bos, 0), ("[eos]", vocab.eos, None)):
        if i is not None:
            single.insert(len(single) if at is None else at, key)
            specials.append({"id": key, "ids": [i], "tokens": [vocab.tokens[i]]})
    if not specials:
        return None
    pair = single + ["$B:1" if p == "$A" else f"{p}:1" for p in single]
    return processors.TemplateProcessing(single=single, pair=pair, special_tokens=specials)


def derive_merges(tokens: list[str], ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # [V] str, [V] float -> [M], [M] token ids
    """Every split of a token into two tokens, as (left id, right id), best first.

    transformers' `generate_merges` order: the merged token's rank (higher first), then the longer left
    part, the longer right part, the token's first place in the file. An id is the dictionary's: the
    last token of a string spelled twice."""
    n_vocab = len(tokens)
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=n_vocab)  # [V] characters
    codes = np.frombuffer("".join(tokens).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64) + np.uint64(1)  # [C]
    starts = np.zeros(n_vocab + 1, dtype=np.int64)  # [V + 1] where each token's characters begin
    np.cumsum(lengths, out=starts[1:])
    place = np.arange(len(codes)) - np.repeat(starts[:-1], lengths)  # [C] each character's place in its token
    splits = np.maximum(lengths - 1, 0)  # [V] a token of n characters splits n - 1 ways
    token = np.repeat(np.arange(n_vocab), splits)  # [S] the token split
    k = np.arange(len(token)) - np.repeat(np.cumsum(splits) - splits, splits) + 1  # [S] its left part's length
    powers, inverse = _powers(int(lengths.max()) + 1)
    with np.errstate(over="ignore"):  # hashes are polynomials mod 2**64: wrapping is the arithmetic
        running = np.zeros(len(codes) + 1, dtype=np.uint64)  # [C + 1] running[c]: the hash of every character before c
        np.cumsum(codes * powers[place], dtype=np.uint64, out=running[1:])
        whole = running[starts[1:]] - running[starts[:-1]]  # [V] hash of each token: sum of code * base**place
        prefix = running[starts[token] + k] - running[starts[token]]  # [S]
    table = HashTable(whole)  # each distinct string's id: the dictionary's, its last place
    slot_of = table.find(whole)  # [V] each token's slot
    canonical = table.ids[slot_of] == np.arange(n_vocab)  # [V] each string split once, as the token the dictionary keeps
    left = table.find(prefix)  # [S] slots, -1 where absent
    keep = canonical[token] & (left >= 0)
    token, k, left, prefix = token[keep], k[keep], table.ids[left[keep]], prefix[keep]
    keep = lengths[left] == k
    token, k, left, prefix = token[keep], k[keep], left[keep], prefix[keep]
    with np.errstate(over="ignore"):
        right = table.find((whole[token] - prefix) * inverse[k])  # the right part, shifted to start at place 0
    keep = right >= 0
    token, k, left, right = token[keep], k[keep], left[keep], table.ids[right[keep]]
    keep = lengths[right] == lengths[token] - k
    token, k, left, right = token[keep], k[keep], left[keep], right[keep]
    long = np.flatnonzero(lengths[token] > EXACT_CHECK)
    if long.size:  # a long token: checked as strings (a crafted vocabulary could make 64-bit polynomial hashes collide)
        good = np.array([tokens[left[i]] + tokens[right[i]] == tokens[token[i]] for i in long.tolist()], dtype=bool)
        drop = np.zeros(len(token), dtype=bool)
        drop[long[~good]] = True
        token, k, left, right = token[~drop], k[~drop], left[~drop], right[~drop]
    longest = int(lengths.max()) + 1
    parts = (longest - k) * longest + (longest - (lengths[token] - k))  # the longer left part first, then the longer right
    best_first = np.lexsort((table.first[slot_of[token]], parts, -ranks[token]))  # a (token, split) has one (left, right)
    return left[best_first], right[best_first]


class HashTable:
    """Distinct 64-bit keys -> the last and the first place each has in `keys`; open addressing, filled and read in NumPy."""

    def __init__(self, keys: np.ndarray):  # [V] uint64
        bits = max(4, int(len(keys)).bit_length() + 2)  # at most a quarter full: short probe chains
        self.shift, self.mask = np.uint64(64 - bits), (1 << bits) - 1
        self.keys = np.zeros(1 << bits, dtype=np.uint64)
        self.ids = np.full(1 << bits, -1, dtype=np.int64)  # the key's last place
        self.first = np.full(1 << bits, -1, dtype=np.int64)  # its first place
        order = np.argsort(keys, kind="stable")  # [V] by key, then place
        sorted_keys = keys[order]
        starts = np.append(True, sorted_keys[1:] != sorted_keys[:-1])
        ends = np.append(sorted_keys[1:] != sorted_keys[:-1], True)
        todo, last, first = sorted_keys[starts], order[ends], order[starts]  # [D] distinct keys
        slot = self._slot(todo)
        while todo.size:  # each round, the first key aiming at a free slot takes it; the others move on one
            free = self.ids[slot] < 0
            taken, at = np.unique(slot[free], return_index=True)
            chosen = np.flatnonzero(free)[at]
            self.keys[taken], self.ids[taken], self.first[taken] = todo[chosen], last[chosen], first[chosen]
            rest = np.ones(len(todo), dtype=bool)
            rest[chosen] = False
            todo, last, first, slot = todo[rest], last[rest], first[rest], (slot[rest] + 1) & self.mask

    def _slot(self, keys: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):  # Fibonacci hashing: the top bits of key * 2**64 / golden ratio
            return ((keys * np.uint64(0x9E3779B97F4A7C15)) >> self.shift).astype(np.int64)

    def find(self, keys: np.ndarray) -> np.ndarray:  # [Q] uint64 -> [Q] slots, -1 where the key is absent
        found = np.full(len(keys), -1, dtype=np.int64)
        todo, slot = np.arange(len(keys)), self._slot(keys)
        while todo.size:
            here = self.keys[slot] == keys[todo]
            hit = here & (self.ids[slot] >= 0)
            found[todo[hit]] = slot[hit]
            go_on = ~hit & (self.ids[slot] >= 0)  # an empty slot ends the search
            todo, slot = todo[go_on], (slot[go_on] + 1) & self.mask
        return found


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:  # -> [n], [n] base**i and base**-i mod 2**64
    """Powers of a random odd base and of its inverse mod 2**64 (random: no file can aim at a known base)."""
    base = int.from_bytes(os.urandom(8), "little") | 1
    inverse = pow(base, -1, 1 << 64)
    powers, inverses = np.empty(n, dtype=np.uint64), np.empty(n, dtype=np.uint64)
    p = q = 1
    for i in range(min(n, 64)):
        powers[i], inverses[i] = p, q
        p, q = p * base % (1 << 64), q * inverse % (1 << 64)
    with np.errstate(over="ignore"):
        for start in range(64, n, 64):  # doubling in blocks: base**(i + 64) = base**i * base**64
            block = powers[start - 64:start] * powers[63] * np.uint64(base)
            powers[start:start + 64] = block[: n - start]
            inverses[start:start + 64] = (inverses[start - 64:start] * inverses[63] * np.uint64(inverse))[: n - start]
    return powers, inverses
