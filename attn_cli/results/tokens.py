"""`attn tokens`'s result: how a model's tokenizer cuts a text, piece by piece."""

from attn_cli.records import Record, ValueRecord


class Piece(ValueRecord):
    __slots__ = ("id", "piece", "text", "special", "start", "end")

    def __init__(self, id: int | None, piece: str, text: str, special: bool, start: int | None, end: int | None):
        self.id = id  # the vocabulary row (the word vectors' row for GloVe; None: a word without a vector)
        self.piece = piece  # as the tokenizer writes it ("▁cat", "Ġcat", "##s", "<0xE6>")
        self.text = text  # as a reader sees it ("cat", "0xE6")
        self.special = special  # a control token: one the tokenizer adds (BOS, [CLS]) or one spelled in the text
        self.start, self.end = start, end  # its characters in the text; None where it has none (an added BOS, GloVe's words)

    def to_dict(self) -> dict:
        return {"id": self.id, "piece": self.piece, "text": self.text, "special": self.special, "start": self.start, "end": self.end}


class TokensResult(Record):
    __slots__ = ("model", "text", "chat", "pieces")

    def __init__(self, model: dict, text: str, chat: bool, pieces: list):
        self.model = model  # name, type (and, for a checkpoint, its vocabulary's size)
        self.text = text  # what was tokenized: with --chat, the chat template's rendering
        self.chat = chat
        self.pieces = pieces  # [Piece], in order

    def to_dict(self) -> dict:
        return {"model": self.model, "text": self.text, "chat": self.chat, "count": len(self.pieces), "tokens": [p.to_dict() for p in self.pieces]}

    def rows(self):
        for i, p in enumerate(self.pieces):
            yield {"index": i, **p.to_dict()}
