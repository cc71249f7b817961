"""`attn heads find`: every (layer, head) of a checkpoint ranked on labelled links, beside the baselines."""

import numpy as np

from attn_cli.analysis.links import even_weights, link_scores, previous_weights
from attn_cli.analysis.units import aggregate, find_unit, groups
from attn_cli.errors import InputError
from attn_cli.models.base import Model
from attn_cli.results.models import HeadsFound

SORT_KEYS = {"top": "top_on_key", "exact": "exact_top", "weight": "key_weight", "beyond": "top_beyond_previous"}


def linked_units(group: list, labels: list[str], model: Model, source: str) -> tuple[dict[int, list[int]], int]:
    """The links of one sentence as units: {query unit: [key units]}, and how many links cannot be served
    (a word linked to itself, or a key after its query under a causal mask)."""
    pairs: dict[int, list[int]] = {}
    dropped = 0
    for link in group:
        q = find_unit(labels, link.query)
        if q is None:
            raise InputError(f"{source} line {link.line}: query word {link.query!r} is not a word of the sentence as {model.name} splits it")
        k = find_unit(labels, link.key, near=q)
        if k is None:
            raise InputError(f"{source} line {link.line}: key word {link.key!r} is not a word of the sentence as {model.name} splits it")
        if k == q or (model.causal and k > q):
            dropped += 1
            continue
        if k not in pairs.setdefault(q, []):
            pairs[q].append(k)
    return pairs, dropped


def find_heads(model: Model, links: list, source: str = "<links>", sort: str = "top", each=iter) -> "HeadsFound":
    """Rank every (layer, head) on labelled links: how often a query's largest non-self weight lands on its labelled key.

    Word pieces are merged into words (as --words); special tokens are left out of the ranking
    (BERT's heads park weight on [CLS] and [SEP] when they have nothing to do). Baselines on the
    same words: all weight on the previous word, and even attention over the visible words.
    `each` wraps the (sentence, links) pairs as they are run (the CLI's progress bar).
    """

    by_sentence: dict[str, list] = {}
    for link in links:
        by_sentence.setdefault(link.sentence, []).append(link)
    shape = (model.n_layers, model.n_heads)
    names = ("head", "previous", "even")
    top = {k: [] for k in names}
    exact = {k: [] for k in names}
    weight = {k: [] for k in names}
    beyond = {k: [] for k in names}  # top on a key when the previous word is out of the running
    dropped = 0
    for sentence, group in each(list(by_sentence.items())):
        trace = model.run(sentence)
        members, labels, special = groups(trace.tokens, words=True)
        w = aggregate(trace.stacked("attn.pattern"), members)  # [L, H, g, g]
        g, ignore = len(members), [u for u, s in enumerate(special) if s]
        patterns = {"head": w, "previous": previous_weights(g, ignore), "even": even_weights(g, np.tri(g, dtype=bool) if model.causal else None, ignore)}
        pairs, lost = linked_units(group, labels, model, source)
        dropped += lost
        previous = patterns["previous"].argmax(axis=1)  # [g] each unit's previous word
        for q, keys in pairs.items():
            far = [k for k in keys if k != previous[q]]
            for name, pattern in patterns.items():
                t, e, kw = link_scores(pattern, q, keys, ignore)
                top[name].append(t)
                exact[name].append(e)
                weight[name].append(kw)
                if far and previous[q] != q:
                    beyond[name].append(link_scores(pattern, q, far, ignore + [int(previous[q])])[0])
    queries = len(top["head"])
    if not queries:
        raise InputError(f"{source}: no link left to score" + (" (a causal model cannot see a key after its query)" if dropped else ""))

    def measures(name: str, at=()) -> dict:
        mean = lambda xs: np.mean(np.array(xs, dtype=np.float64), axis=0)[at] if xs else np.nan  # noqa: E731
        return {"top_on_key": float(mean(top[name])), "exact_top": float(mean(exact[name])), "key_weight": float(mean(weight[name])),
                "top_beyond_previous": float(mean(beyond[name]))}

    heads = [{"layer": l, "head": h, "name": f"{l}.{h}", **measures("head", (l, h))} for l in range(shape[0]) for h in range(shape[1])]
    first = SORT_KEYS[sort]
    heads.sort(key=lambda r: (-np.nan_to_num(r[first], nan=-1.0), -r["key_weight"], r["layer"], r["head"]))
    baselines = [{"name": name, **measures(name)} for name in ("previous", "even")]
    return HeadsFound(file=source, model=model.name, mask="causal" if model.causal else "none", sort=first, sentences=len(by_sentence),
                      queries=queries, beyond_previous=len(beyond["head"]), dropped=dropped, heads=heads, baselines=baselines)
