"""`attn tokens`: a text as a model's tokenizer cuts it (llama.cpp's tokenize tool), with the rules inspect and predict use."""

from pathlib import Path

from attn_cli.results.tokens import Piece, TokensResult


def checkpoint_tokens(model, text: str, chat: bool = False) -> TokensResult:
    """A checkpoint's pieces: `model.tokenize` itself (its BOS/EOS, --chat's template), each control token marked special."""
    tokens = model.tokenize(text, chat=chat)
    text = model.chat_prompt(text) if chat else text
    special_ids = {i for i, added in model.tokenizer.get_added_tokens_decoder().items() if added.special}
    pieces = []
    for i, piece, label, added, (start, end) in zip(tokens.ids, tokens.pieces, tokens.labels, tokens.special, tokens.offsets):
        special = added or i in special_ids
        at = (None, None) if added else (start, end)  # an added BOS/EOS has no characters of the text
        pieces.append(Piece(int(i), piece, label, bool(special), *at))
    summary = model.summary()
    return TokensResult({"name": summary["name"], "type": summary["type"], "vocabulary": model.tokenizer.get_vocab_size()}, text, chat, pieces)


def word_tokens(vectors, text: str) -> TokensResult:
    """The word vectors' tokenizer (GloVe 6B's conventions): each word and its row, None for a word without a vector."""
    from attn_cli.errors import InputError
    from attn_cli.vectors.tokens import key_rows, tokenize

    words = tokenize(text)
    if not words:
        raise InputError("no words in the input")
    pieces = [Piece(row, w, w, False, None, None) for w, row in zip(words, key_rows(words, vectors))]
    return TokensResult({"name": Path(vectors.source).name if vectors.source else "GloVe", "type": "word vectors", "vocabulary": vectors.n_keys}, text, False, pieces)
