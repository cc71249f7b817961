"""A SentencePiece GGUF's tokenizer, built for the text at hand.

The whole BPE of a large vocabulary (Gemma's 262,144 tokens, 514,906 merges) costs about a second to
build, most of it in handing the merges to `tokenizers`. A short text can only ever be cut into
tokens that are substrings of it: a BPE of those tokens and of their merges, ranked as among all
the merges, gives the same pieces, and builds in milliseconds. So `encode` of a short text builds
that small BPE; a long text, the texts after the first few dozen (a corpus), and anything else of
the `tokenizers.Tokenizer` interface use the whole one, built once on first use. Ids, pieces and decoding are read from the vocabulary.
"""

import numpy as np

from attn_cli.models.sources.gguf_file import GGUFFile
from attn_cli.models.sources.gguf_spm import Vocabulary, make_tokenizer

SHORT = 4096  # characters: above this, the whole tokenizer (built once) encodes
SMALL_BUILDS = 32  # texts cut by a small BPE each; the next ones by the whole (~20 ms a small one, ~1 s the whole, then ~0.2 ms a text)
MAX_SUBSTRINGS = 1 << 19  # a text with more candidate substrings than this goes to the whole tokenizer too


def build_spm_tokenizer(file: GGUFFile, add_bos: bool, add_eos: bool) -> "SentencePieceTokenizer":
    """The tokenizer of tokenizer.ggml.{tokens, scores, token_type}: "▁" for spaces, the space prefix as
    tokenizer.ggml.add_space_prefix says, control tokens as specials, BOS/EOS as the file says."""
    return SentencePieceTokenizer(Vocabulary(file, add_bos, add_eos))


class SentencePieceTokenizer:
    """The parts of `tokenizers.Tokenizer` attn uses, the same answers; anything else goes to the whole tokenizer."""

    sentencepiece = True  # its words start at "▁" (attn_cli.models.pieces.sentencepiece_words)

    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab
        self._whole = None
        self._longest = None
        self._special = None
        self._small_builds = 0

    @property
    def whole(self):
        if self._whole is None:
            self._whole = make_tokenizer(self.vocab)
        return self._whole

    def __getattr__(self, name: str):  # normalizer, pre_tokenizer, model, encode_batch, ...: the whole tokenizer's
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.whole, name)

    def encode(self, text: str, add_special_tokens: bool = True):
        small = len(text) <= SHORT and self._whole is None and self._small_builds < SMALL_BUILDS
        keep = self._needed(text) if small else None
        if keep is None:
            return self.whole.encode(text, add_special_tokens=add_special_tokens)
        self._small_builds += 1
        ids, control, user = keep
        return make_tokenizer(self.vocab, ids, control, user).encode(text, add_special_tokens=add_special_tokens)

    def _needed(self, text: str):
        """The ids a text can be cut into (its substrings that are tokens, the byte tokens, the specials it spells), or None."""
        vocab = self.vocab
        if self._longest is None:
            self._longest = max(map(len, vocab.tokens))
        spelled = ("\u2581" if vocab.prefix else "") + text.replace(" ", "\u2581")
        longest = min(self._longest, len(spelled))
        if len(spelled) * longest > MAX_SUBSTRINGS:
            return None
        ids = vocab.ids
        found = {ids.get(spelled[i : i + n]) for n in range(1, longest + 1) for i in range(len(spelled) - n + 1)}
        if vocab.prepended:  # each stretch between special tokens starts with its own "▁"
            found.update(ids.get("\u2581" + spelled[i : i + n]) for n in range(longest) for i in range(len(spelled) - n + 1))
        found.update(ids.get(f"<0x{b:02X}>") for b in range(256))
        found.update((vocab.unk_id, vocab.bos, vocab.eos))
        control = [i for i in self.special_ids() if vocab.tokens[i] in text]
        user = [i for i in self._user() if vocab.stored[i] in text]
        found.update(control)
        found.update(user)
        found.discard(None)
        return np.array(sorted(found), dtype=np.int64), control, user

    def special_ids(self) -> list[int]:
        if self._special is None:
            self._special = self.vocab.control()
        return self._special

    def _user(self) -> list[int]:
        if not hasattr(self, "_user_ids"):
            self._user_ids = self.vocab.user_defined()
        return self._user_ids

    def id_to_token(self, i: int) -> str | None:
        return self.vocab.tokens[i] if 0 <= i < len(self.vocab.tokens) else None

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.ids.get(token)

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        return len(self.vocab.tokens)

    def get_added_tokens_decoder(self) -> dict:
        from tokenizers import AddedToken

        out = {i: AddedToken(self.vocab.tokens[i], special=True, normalized=False) for i in self.special_ids()}
        out.update({i: AddedToken(self.vocab.stored[i], special=False, normalized=False) for i in self._user()})
        return dict(sorted(out.items()))

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        """As the whole tokenizer's decoder does: each "▁" a space, runs of <0xNN> as their bytes (U+FFFD for each when they
        are not UTF-8), joined, and with the space prefix, the first space dropped."""
        tokens, special = self.vocab.tokens, set(self.special_ids()) if skip_special_tokens else ()
        out, run = [], []
        for i in ids:
            if i in special or not 0 <= i < len(tokens):
                continue
            piece = tokens[i].replace("\u2581", " ")
            if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">") and _hex(piece[3:5]):
                run.append(int(piece[3:5], 16))
                continue
            out.append(_bytes(run))
            run = []
            out.append(piece)
        out.append(_bytes(run))
        text = "".join(out)
        return text[1:] if self.vocab.prefix and text.startswith(" ") else text


def _hex(digits: str) -> bool:
    return all(c in "0123456789ABCDEFabcdef" for c in digits)


def _bytes(run: list[int]) -> str:
    try:
        return bytes(run).decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd" * len(run)
