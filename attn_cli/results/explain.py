"""`attn explain`'s result: a logit (or a difference of two) and the parts of the residual stream it splits into."""

import numpy as np

from attn_cli.records import Record
from attn_cli.results.numbers import NUMBER_DIGITS, significant


class ExplainResult(Record):
    __slots__ = ("model", "tokens", "position", "target", "versus", "logit", "capped", "cap", "sandwich", "components", "n_layers",
                 "n_heads", "ablation")

    def __init__(self, model: dict, tokens: list, position: int, target: dict, versus: dict | None, logit: float, components: list,
                 n_layers: int, n_heads: int, ablation=None, capped: float | None = None, cap: float | None = None, sandwich: bool = False):
        self.capped, self.cap = capped, cap  # a final soft-cap (Gemma 2): the model's logit after it, and the cap; else None
        self.sandwich = sandwich  # each head's part went through its block's second norm, frozen at the position (Gemma)
        self.ablation = ablation  # analysis.ablate.Ablation: heads turned off before the split (empty: none)
        self.model = model  # name, type, layers, heads, d_model, d_k
        self.tokens = tokens
        self.position = position  # where the logit is read (the last token, or --focus)
        self.target = target  # {"id", "token", "piece", "logit"}
        self.versus = versus  # the same, or None: the plain logit of target
        self.logit = logit  # the model's own logit of target (less versus's), before a soft-cap: what the parts sum to
        self.components = components  # [analysis.explain.Part], in the stream's order: embed, then per layer heads, bias, MLP
        self.n_layers, self.n_heads = n_layers, n_heads

    @property
    def total(self) -> float:
        """The parts summed: equal to `logit` within float32 rounding, the check printed beside it."""
        return float(np.sum([p.logit for p in self.components], dtype=np.float64))

    def heads(self) -> np.ndarray:  # -> [L, H] each head's share
        out = np.zeros((self.n_layers, self.n_heads))
        for p in self.components:
            if p.kind == "head":
                out[p.layer, p.head] = p.logit
        return out

    def mlps(self) -> np.ndarray:  # -> [L] each MLP's share
        out = np.zeros(self.n_layers)
        for p in self.components:
            if p.kind == "mlp":
                out[p.layer] = p.logit
        return out

    def largest(self, k: int) -> list:
        return sorted(self.components, key=lambda p: -abs(p.logit))[:k]

    def to_dict(self) -> dict:
        number = lambda x: float(significant(x, NUMBER_DIGITS))  # noqa: E731
        token = lambda t: None if t is None else {"id": t["id"], "token": t["token"], "piece": t["piece"], "logit": number(t["logit"])}  # noqa: E731
        return {"model": self.model, "tokens": self.tokens, "position": self.position, "token": self.tokens[self.position],
                "target": token(self.target), "versus": token(self.versus), "logit": number(self.logit), "sum": number(self.total),
                **({"soft_cap": self.cap, "capped_logit": number(self.capped)} if self.cap else {}),
                "components": [{**p.to_dict(), "logit": number(p.logit)} for p in self.components],
                **({"ablated": self.ablation.names, "ablated_with": self.ablation.mode} if self.ablation else {})}

    def rows(self):
        for p in self.components:
            yield {"kind": p.kind, "layer": "" if p.layer is None else p.layer, "head": "" if p.head is None else p.head,
                   "logit": float(significant(p.logit, NUMBER_DIGITS))}
