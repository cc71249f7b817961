"""`attn generate`'s result: the prompt, every new token with its probability, alternatives and sources, and why it stopped."""

from attn_cli.records import Record
from attn_cli.results.numbers import NUMBER_DIGITS, WEIGHT_DIGITS, significant

STOPS = {  # why a generation ended, as JSON says it and as the view says it
    "eos": "the model ended its turn",
    "steps": "--steps reached",
    "context": "the model's context is full",
    "interrupted": "interrupted",
}


def weight(x: float) -> float:
    return float(significant(x, WEIGHT_DIGITS))


def step_dict(step, prompt_tokens: list[str], new_tokens: list[str]) -> dict:
    """One step as JSON and JSON Lines give it; a source names its position and token (prompt or generated)."""
    every = prompt_tokens + new_tokens

    def source(position: int, w: float) -> dict:
        return {"position": position, "token": every[position] if position < len(every) else "", "generated": position >= len(prompt_tokens),
                "weight": weight(w)}

    return {"step": step.index, "id": step.id, "token": step.token, "piece": step.piece, "text": step.text, "special": step.special,
            "probability": weight(step.probability), "logit": float(significant(step.logit, NUMBER_DIGITS)),
            "top": [{"id": i, "token": t, "probability": weight(p)} for i, t, p in step.top],
            "sources": [source(p, w) for p, w in step.sources]}


class GenerateResult(Record):
    __slots__ = ("model", "prompt_text", "prompt_ids", "prompt_tokens", "prompt_special", "steps", "stop", "text", "head", "sampling",
                 "cache_bytes", "texts", "steered")

    def __init__(self, model: dict, prompt_text: str, prompt_ids: list, prompt_tokens: list, prompt_special: list, steps: list, stop: str,
                 text: str, head, sampling: dict, cache_bytes: int, texts: list | None = None, steered: list | None = None):
        self.steered = steered or []  # --steer: [{"file", "scale", "layers"}], the control vectors added at every step
        self.model = model
        self.prompt_text = prompt_text  # the text the model read (after the chat template, with --chat)
        self.prompt_ids, self.prompt_tokens, self.prompt_special = prompt_ids, prompt_tokens, prompt_special
        self.steps = steps  # [analysis.generate.Step]
        self.stop = stop  # a key of STOPS
        self.text = text  # the new tokens decoded
        self.head = head  # (layer, head) naming the sources, or None: every head pooled
        self.sampling = sampling  # temperature, top_k, top_p, seed
        self.cache_bytes = cache_bytes  # the KV cache's size at the end
        self.texts = texts  # every position's share of the decoded text, prompt then new tokens, in context (for the page; None: not made)

    @property
    def new_tokens(self) -> list[str]:
        return [s.token for s in self.steps]

    def to_dict(self) -> dict:
        new = self.new_tokens
        return {"model": self.model, "prompt_ids": self.prompt_ids, "prompt": self.prompt_tokens,
                "tokens": [step_dict(s, self.prompt_tokens, new) for s in self.steps], "text": self.text, "stop": self.stop,
                "sources_from": "every head, mean" if self.head is None else f"head {self.head[0]}.{self.head[1]}",
                "sampling": self.sampling, "kv_cache_bytes": self.cache_bytes, **({"steered": self.steered} if self.steered else {})}

    def rows(self):
        new = self.new_tokens
        for s in self.steps:
            d = step_dict(s, self.prompt_tokens, new)
            top = d["top"][1] if len(d["top"]) > 1 else None
            yield {"step": d["step"], "id": d["id"], "token": d["token"], "probability": d["probability"],
                   "runner_up": "" if top is None else top["token"], "runner_up_probability": "" if top is None else top["probability"],
                   "sources": " ".join(f"{x['position']}:{x['weight']}" for x in d["sources"])}
