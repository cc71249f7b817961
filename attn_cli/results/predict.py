"""`attn predict`'s result: the model's top tokens after softmax, and the logit lens layer by layer."""

from attn_cli.records import Record, ValueRecord
from attn_cli.results.numbers import NUMBER_DIGITS, WEIGHT_DIGITS, significant


class Prediction(ValueRecord):
    __slots__ = ("id", "token", "piece", "probability", "logit", "text")

    def __init__(self, id: int, token: str, piece: str, probability: float, logit: float, text: str | None = None):
        self.id = id  # the vocabulary row
        self.token = token  # as a reader sees it in a list ("cat", "\\n")
        self.piece = piece  # as the tokenizer writes it ("Ġcat", "▁cat", "Ċ")
        self.probability = probability  # softmax(logits / T) over the whole vocabulary
        self.logit = logit
        self.text = token if text is None else text  # what it adds to a text, decoded (" cat", "\n")

    def to_dict(self) -> dict:
        return {"id": self.id, "token": self.token, "text": self.text, "piece": self.piece,
                "probability": float(significant(self.probability, WEIGHT_DIGITS)), "logit": float(significant(self.logit, NUMBER_DIGITS))}


class PredictResult(Record):
    __slots__ = ("model", "tokens", "position", "predicts", "temperature", "chat", "predictions", "lens", "asked", "ablation", "before", "steered")

    def __init__(self, model: dict, tokens: list, position: int, predicts: str, temperature: float, chat: bool, predictions: list, lens: list | None,
                 asked: list | None = None, ablation=None, before: dict | None = None, steered: list | None = None):
        self.steered = steered or []  # --steer: [{"file", "scale", "layers"}], the control vectors added to every pass
        self.ablation = ablation  # analysis.ablate.Ablation: the heads turned off (empty: none); predictions are then the ablated run's
        self.before = before  # with an ablation, the model's own run: {"probabilities": {id: p} of the tokens shown, "top": [Prediction]}
        self.model = model  # name, type, layers, heads, d_model, d_k
        self.tokens = tokens  # the input's tokens (after the chat template, with --chat)
        self.position = position  # the token predicted from: the last (a decoder: the next token) or the [MASK] (a masked LM)
        self.predicts = predicts  # "next" | "mask"
        self.temperature = temperature
        self.chat = chat
        self.predictions = predictions  # [Prediction], most probable first
        self.lens = lens  # per layer (0: the embeddings): {"layer", "top": [Prediction], "final_probability", "final_rank"}, or None
        self.asked = asked or []  # --token: (Prediction, rank) of each token asked for, rank 1 the most probable

    def to_dict(self) -> dict:
        out = {"model": self.model, "tokens": self.tokens, "position": self.position, "token": self.tokens[self.position],
               "predicts": self.predicts, "temperature": self.temperature, "chat": self.chat,
               "predictions": [p.to_dict() for p in self.predictions]}
        if self.asked:
            out["asked"] = [{"id": p.id, "text": p.text, "piece": p.piece, "probability": float(significant(p.probability, WEIGHT_DIGITS)),
                             "logit": float(significant(p.logit, NUMBER_DIGITS)), "rank": rank} for p, rank in self.asked]
        if self.steered:
            out["steered"] = self.steered
        if self.ablation:
            out["ablated"], out["ablated_with"] = self.ablation.names, self.ablation.mode
            for d, p in zip(out["predictions"], self.predictions):
                d["own_probability"] = float(significant(self.before["probabilities"][p.id], WEIGHT_DIGITS))
            out["own_predictions"] = [{k: v for k, v in p.to_dict().items() if k != "logit"} for p in self.before["top"]]
        if self.lens is not None:
            out["lens"] = [{"layer": row["layer"], "top": [p.to_dict() for p in row["top"]],
                            "final_probability": float(significant(row["final_probability"], WEIGHT_DIGITS)), "final_rank": row["final_rank"]}
                           for row in self.lens]
        return out

    def rows(self):
        """One row per prediction: the model's own ("output"), the tokens asked for with --token ("asked"), then with --lens each layer's top tokens."""
        for rank, p in enumerate(self.predictions, 1):
            yield {"layer": "output", "rank": rank, **p.to_dict()}
        for p, rank in self.asked:
            yield {"layer": "asked", "rank": rank, **p.to_dict()}
        for row in self.lens or []:
            for rank, p in enumerate(row["top"], 1):
                yield {"layer": row["layer"], "rank": rank, **p.to_dict()}
