"""A long document for long-text runs: repository prose (tests/fixtures/long-document.txt, 4,100 SmolLM2 tokens on one
line), cut at a number of a model's tokens."""

from pathlib import Path

DOCUMENT = Path(__file__).parent / "fixtures" / "long-document.txt"


def long_text(model, n: int) -> str:
    """The document's first n tokens of `model` (with the special tokens its tokenizer adds), as text."""
    text = DOCUMENT.read_text(encoding="utf-8").strip()
    enc = model.tokenizer.encode(text)
    words = [i for i, s in enumerate(enc.special_tokens_mask) if not s]
    if n >= len(enc.ids):
        return text
    lead = len(enc.ids) - len(words) if words and words[0] else 0
    return text[: enc.offsets[words[n - lead]][0]].rstrip()
