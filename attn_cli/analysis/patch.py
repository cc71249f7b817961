"""`attn patch`: activation patching, which part of the prompt made the difference between two prompts.

Run a clean text and a corrupt one of the same length (they differ in a word or two), each once, keeping every
layer's stream and every head's z. Then run the corrupt text again with one activation put back from the clean run,
and read the metric, the logit difference target − versus at the last position:

    (a) resid_pre[l] at position p, for every layer l and position p;
    (b) one head's z (its output before W_O) at every position, for every head.

Nothing before layer l changes when layer l is patched, so each rerun starts at layer l from the corrupt run's
stream (models.points.Start), and all the heads of a layer go through the later layers as one batch: B streams,
one per patch. In a causal model, patching position p changes no position before p either: (a) reruns only
positions p .. n - 1, after the corrupt run's keys and values of the earlier ones (its KV cache), and the patches
of every layer at one position share one pass, each stream joining it at its layer. Only the stream's last row is read at the end, and only through the two output
rows the metric needs, not the whole vocabulary.

The map is shown raw and normalised, (patched − corrupt) / (clean − corrupt): 1 where the patch alone gives back
the clean answer, 0 where it changes nothing.
"""

import numpy as np

from attn_cli.errors import InputError
from attn_cli.records import Record

HOLD_BYTES = 3 << 30  # the float32 layers kept for all the reruns when they fit in this (SmolLM2: 0.5 GB)
BATCH_BUDGET = 256 << 20  # bytes of float32 attention weights a batched rerun may take at once ([B, H, n, n])


class PatchSettings(Record):
    __slots__ = ("target", "versus", "chat")

    def __init__(self, target: str, versus: str, chat: bool = False):
        self.target, self.versus, self.chat = target, versus, chat


class LogitDifference:
    """target − versus from streams after the last layer, through the model's own output head (model.readout: its final
    norm, W_U's two rows, and its soft-cap where it has one; a masked LM's whole head): what every patched run is measured by."""

    def __init__(self, model, target: int, versus: int):
        self.model, self.ids = model, [target, versus]

    def __call__(self, last: np.ndarray) -> np.ndarray:  # [B, d] -> [B]
        logits = self.model.readout(last, ids=self.ids).astype(np.float64)  # [B, 2]
        return logits[:, 0] - logits[:, 1]


def chunks(total: int, per_item: int):  # -> ranges of items whose [B, ...] attention fits BATCH_BUDGET
    size = max(1, BATCH_BUDGET // max(per_item, 1))
    return [range(i, min(i + size, total)) for i in range(0, total, size)]


def patch_maps(model, clean_ids: list[int], corrupt_ids: list[int], metric, position: int = -1) -> dict:
    """The two patching maps (raw metric values) and the clean and corrupt metrics, read at `position` (the last token,
    or a masked LM's [MASK])."""
    from attn_cli.models.cache import KVCache
    from attn_cli.models.points import Keep
    from attn_cli.models.progress import steps

    model.weights.hold(HOLD_BYTES)  # some 2 L passes read the later layers again: dequantize them once
    keep = Keep(points=("resid_pre", "attn.z", "resid_post"), rows=None)
    past = KVCache(model)  # the corrupt run's keys and values: what positions before a patched one give later layers
    at, last = position % len(clean_ids), model.n_layers - 1
    with steps("patches", 2 + (at + 1 if model.causal else model.n_layers) + model.n_layers) as advance:  # the runs, then (a) and (b)
        clean, corrupt = model.forward(clean_ids, keep=keep), model.forward(corrupt_ids, keep=keep, cache=past)
        advance(2)
        clean_diff, corrupt_diff = (float(metric(run.get("resid_post", last)[at : at + 1])[0]) for run in (clean, corrupt))
        resid = (stream_map_causal(model, clean, corrupt, corrupt_ids, past, metric, at, corrupt_diff, advance) if model.causal
                 else stream_map(model, clean, corrupt, corrupt_ids, metric, at, advance))
        heads = head_map(model, clean, corrupt, corrupt_ids, metric, at, advance)
    return {"clean": clean_diff, "corrupt": corrupt_diff, "resid_pre": resid, "heads": heads}


def stream_map_causal(model, clean, corrupt, ids: list[int], past, metric, at: int, corrupt_diff: float, advance) -> np.ndarray:  # -> [L, n]
    """Map (a) of a causal model: patching position p changes no position before it, so one pass per p runs only
    positions p .. n - 1 after the corrupt run's keys and values, each layer's patched stream joining it at its layer."""
    from attn_cli.models.points import Keep, Start

    L, n, last = model.n_layers, len(ids), model.n_layers - 1
    H = model.n_heads
    resid = np.empty((L, n))
    resid[:, at + 1 :] = corrupt_diff  # a position after the one read cannot reach it
    for p in range(at + 1):
        m = n - p  # positions p .. n - 1 rerun
        streams = np.stack([corrupt.get("resid_pre", l)[p:] for l in range(L)])  # [L, m, d]: stream l is patched at layer l
        streams[:, 0] = [clean.get("resid_pre", l)[p] for l in range(L)]
        for group in chunks(L, 4 * H * m * n):
            trace = model.forward(ids[p:], keep=Keep(points=("resid_post",), layers=[last], rows=[at - p]),
                                  cache=past.prefix(p), start=Start(list(group), streams[list(group)]))
            resid[list(group), p] = metric(trace.get("resid_post", last)[:, 0])
        advance(1)  # a position's patches done
    return resid


def stream_map(model, clean, corrupt, ids: list[int], metric, at: int, advance) -> np.ndarray:  # -> [L, n]
    """Map (a) of any model: for each layer l, every position's patch as one batch of streams through layers l .. L - 1."""
    from attn_cli.models.points import Keep, Start

    L, H, n, last = model.n_layers, model.n_heads, len(ids), model.n_layers - 1
    out_keep = Keep(points=("resid_post",), layers=[last], rows=[at])
    resid = np.empty((L, n))
    for l in range(L):
        base, good = corrupt.get("resid_pre", l), clean.get("resid_pre", l)  # [n, d]
        for group in chunks(n, 4 * H * n * n):
            streams = np.repeat(base[None], len(group), axis=0)  # [B, n, d]: patch b puts back position group[b]
            streams[np.arange(len(group)), list(group)] = good[list(group)]
            trace = model.forward(ids, keep=out_keep, start=Start(l, streams))
            resid[l, list(group)] = metric(trace.get("resid_post", last)[:, 0])
        advance(1)  # a layer's patches done
    return resid


def head_map(model, clean, corrupt, ids: list[int], metric, at: int, advance) -> np.ndarray:  # -> [L, H]
    """Map (b): for each layer l, every head's z put back at every position, the heads of a layer as one batch."""
    from attn_cli.models.points import Keep, Patch, Start

    L, H, n, last = model.n_layers, model.n_heads, len(ids), model.n_layers - 1
    out_keep = Keep(points=("resid_post",), layers=[last], rows=[at])
    heads = np.empty((L, H))
    for l in range(L):
        base = corrupt.get("resid_pre", l)  # [n, d]
        z_bad, z_good = corrupt.get("attn.z", l), clean.get("attn.z", l)  # [n, H, d_head]
        for group in chunks(H, 4 * H * n * n):
            value = np.repeat(z_bad[None], len(group), axis=0)  # [B, n, H, d_head]: patch b puts back head group[b]
            value[np.arange(len(group)), :, list(group)] = np.moveaxis(z_good[:, list(group)], 1, 0)
            trace = model.forward(ids, keep=out_keep, start=Start(l, np.repeat(base[None], len(group), axis=0)),
                                  edits=[Patch("attn.z", l, value=value)])
            heads[l, list(group)] = metric(trace.get("resid_post", last)[:, 0])
        advance(1)
    return heads


def patch(model, clean_text: str, corrupt_text: str, settings: PatchSettings):
    from attn_cli.analysis.explain import token_id
    from attn_cli.results.patch import PatchResult

    if model.predicts is None:
        raise InputError(f"{model.name} has no output head: patching measures a logit difference (give a decoder or a masked LM)")
    clean, corrupt = model.tokenize(clean_text, chat=settings.chat), model.tokenize(corrupt_text, chat=settings.chat)
    if len(clean.ids) != len(corrupt.ids):
        raise InputError(f"the clean text is {len(clean.ids)} tokens and the corrupt one {len(corrupt.ids)}: patching puts back "
                         "an activation at the same position, so they must be as long (attn tokens shows how they split)")
    target, versus = token_id(model, settings.target, "--target"), token_id(model, settings.versus, "--versus")
    from attn_cli.analysis.predict import position

    at = position(model, clean, None)  # the last token, or the [MASK]
    maps = patch_maps(model, list(clean.ids), list(corrupt.ids), LogitDifference(model, target, versus), at)

    def entry(i: int) -> dict:
        piece = model.tokenizer.id_to_token(i) or f"#{i}"
        return {"id": i, "token": model.labels([i], [piece])[0], "piece": piece}

    return PatchResult(model=model.summary(), clean_tokens=list(clean.labels), corrupt_tokens=list(corrupt.labels), target=entry(target),
                       versus=entry(versus), clean_logit_diff=maps["clean"], corrupt_logit_diff=maps["corrupt"],
                       resid_pre=maps["resid_pre"], heads=maps["heads"], position=at)
