"""A tokenizer's pieces as a reader sees them: "cat", not GPT-2's "Ġcat"; the bytes of a character cut in two, not mojibake."""

import re
from functools import lru_cache

WHITESPACE = {" ": "␣", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
SPM_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # a SentencePiece vocabulary's byte-fallback piece


@lru_cache(maxsize=1)
def byte_table() -> dict[str, int]:
    """GPT-2's byte-level alphabet, character -> byte (bytes_to_unicode, inverted)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = dict(), 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def readable(tokenizer, token_id: int, piece: str) -> str:
    """The piece decoded by its tokenizer, without a word's leading space; whitespace named; partial bytes as 0xNN."""
    text = tokenizer.decode([token_id], skip_special_tokens=False)
    if "\u2581" in piece and text.strip() == piece.replace("\u2581", " ").strip():  # SentencePiece: each "▁" a space (its decoder drops a first one)
        text = piece.replace("\u2581", " ")
    if "\ufffd" in text:  # some bytes of a character: show them
        if SPM_BYTE.fullmatch(piece):
            return f"0x{piece[3:5].upper()}"
        table = byte_table()
        if all(c in table for c in piece.lstrip("Ġ")):
            return " ".join(f"0x{table[c]:02X}" for c in piece.lstrip("Ġ"))
        return piece
    shown = text.strip()
    if not shown:
        return "".join(WHITESPACE.get(c, c) for c in text) or piece
    return shown


def sentencepiece_words(tokenizer, pieces: list[str], words: list[int | None]) -> list[int | None]:
    """Each piece's word. A SentencePiece tokenizer (a BPE with byte fallback: "▁" for a space) leaves the text whole for its
    merges, so `tokenizers` counts it as one word; its words start at the pieces that start with "▁"."""
    if not getattr(tokenizer, "sentencepiece", False) and not getattr(tokenizer.model, "byte_fallback", False):
        return words
    out, word = [], -1
    for piece, given in zip(pieces, words):
        if given is None:  # a special token the tokenizer added
            out.append(None)
            continue
        if piece.startswith("\u2581") or word < 0 or out[-1] is None:
            word += 1
        out.append(word)
    return out
