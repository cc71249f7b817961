"""Training small attention heads on static word vectors, in plain NumPy.

A head's W_Q, W_K are learned from *links*: "in this sentence, this query word should attend
to this key word". Each linked query row gets a target distribution (uniform over its keys);
every other row should attend to itself. The loss is the cross-entropy between the target
rows and softmax(Q K^T / sqrt(d_k)) under the mask, minimised with Adam on the gradient
written out below (`attention_loss`; tests check it against finite differences).
The value map W_V is then fitted in closed form (ridge regression) with the attention fixed.

Shape letters: b = sentences in a batch, n = tokens (padded), d = d_model, d_k = query/key size.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attn_cli.core.attention import Head, Mask, allowed_keys, run_head
from attn_cli.core.softmax import log_softmax
from attn_cli.heads.links import Example, Link, link_metrics, links_to_examples, read_links  # noqa: F401 (Link, Example: what training takes)
from attn_cli.io.files import input_name
from attn_cli.vectors.tokens import Oov


INITIAL_DISTANCE = (0.5, 0.5, 0.0)  # (before, after, self) when learned from scratch


@dataclass
class TrainConfig:
    d_k: int = 16  # query/key size
    steps: int = 400  # Adam steps on the attention loss
    lr: float = 0.03  # Adam step size
    seed: int = 0  # initial W_Q, W_K
    self_weight: float = 0.3  # loss weight of rows without links (target: attend to yourself)
    l2: float = 1e-4  # weight decay on W_Q, W_K
    set_weight: float = 0.0  # weight of -log(mass on a linked row's keys): keep attention off unlinked tokens
    value_scale: float = 0.6  # Delta E of a linked query ~ value_scale * mean of its keys' vectors
    value_ridge: float = 1.0  # pulls W_V toward value_scale * I where the data say little
    distance: bool = False  # also learn the head's distance costs (before, after, self), as ALiBi charges a far key
    query_bias: bool = False  # also learn b_Q (Q = E W_Q + b_Q): lets a key matter to every query alike


# --- batches and the attention loss -----------------------------------------------------------


@dataclass
class Batch:
    e: np.ndarray  # [b, n, d] input embeddings, zero-padded
    allowed: np.ndarray  # [b, n, n] True where query i may see key j (mask and padding)
    targets: np.ndarray  # [b, n, n] target attention rows (sum to 1 on real rows)
    row_weight: np.ndarray  # [b, n] how much each row counts in the loss (0 on padding)
    linked: np.ndarray  # [b, n] True on rows with links


def example_targets(ex: Example, self_weight: float) -> tuple[np.ndarray, np.ndarray]:  # -> [n, n], [n]
    """Linked rows: uniform over their keys (weight 1). Other rows: themselves (weight self_weight)."""
    n = len(ex.tokens)
    targets = np.eye(n)
    row_weight = np.full(n, self_weight)
    for q, keys in ex.links.items():
        targets[q] = 0.0
        targets[q, keys] = 1.0 / len(keys)
        row_weight[q] = 1.0
    return targets, row_weight


def make_batch(examples: list[Example], self_weight: float) -> Batch:
    b, n, d = len(examples), max(len(x.tokens) for x in examples), examples[0].e.shape[1]
    batch = Batch(np.zeros((b, n, d)), np.zeros((b, n, n), bool), np.zeros((b, n, n)), np.zeros((b, n)), np.zeros((b, n), bool))
    for i, ex in enumerate(examples):
        m = len(ex.tokens)
        batch.e[i, :m] = ex.e
        seen = allowed_keys(ex.mask, m)  # [m, m], None: every key
        batch.allowed[i, :m, :m] = True if seen is None else seen
        batch.targets[i, :m, :m], batch.row_weight[i, :m] = example_targets(ex, self_weight)
        batch.linked[i, list(ex.links)] = True
    batch.allowed[:, np.arange(n), np.arange(n)] = True  # padded rows see themselves: no empty row
    return batch


def make_batches(examples: list[Example], self_weight: float) -> list[Batch]:
    """One batch per sentence length: no padding, so no wasted work."""
    by_length: dict[int, list[Example]] = {}
    for ex in examples:
        by_length.setdefault(len(ex.tokens), []).append(ex)
    return [make_batch(group, self_weight) for _, group in sorted(by_length.items())]


def attention_loss(w_q: np.ndarray, w_k: np.ndarray, batches: list[Batch], l2: float = 0.0, set_weight: float = 0.0,
                   slopes: np.ndarray | None = None, b_q: np.ndarray | None = None):
    """Weighted cross-entropy between target rows and the head's attention, with its gradient.

    L = sum_{b,i} r_bi * -sum_j T_bij log A_bij / sum r + l2 (|W_Q|^2 + |W_K|^2)
        + set_weight * sum_{linked b,i} -log sum_{j: T_bij > 0} A_bij / (number of linked rows), where
    A = softmax(mask(Q K^T / sqrt(d_k) - distance penalty)). The last term only asks for little weight off the keys
    (how it spreads over them is the cross-entropy's business). Returns (L, dL/dW_Q, dL/dW_K), then
    dL/dslopes [3] when `slopes` (before, after, self) is given, then dL/db_Q [d_k] when the query bias `b_q` is.
    """
    d, d_k = w_q.shape
    total = sum(batch.row_weight.sum() for batch in batches)
    n_linked = max(1, sum(batch.linked.sum() for batch in batches))
    loss = l2 * (np.sum(w_q**2) + np.sum(w_k**2))
    grad_q, grad_k = 2 * l2 * w_q, 2 * l2 * w_k  # [d, d_k] each
    grad_slopes, grad_bias = np.zeros(3), np.zeros(d_k)
    for batch in batches:
        b, n, _ = batch.e.shape
        flat_e = batch.e.reshape(b * n, d)  # [b*n, d]
        q = (flat_e @ w_q).reshape(b, n, d_k)  # [b*n, d] x [d, d_k] -> [b, n, d_k]
        if b_q is not None:
            q = q + b_q
        k = (flat_e @ w_k).reshape(b, n, d_k)
        scaled = q @ k.transpose(0, 2, 1) / math.sqrt(d_k)  # [b, n, d_k] x [b, d_k, n] -> [b, n, n]
        if slopes is not None:
            gap = np.arange(n)[:, None] - np.arange(n)[None, :]  # [n, n]: > 0 for keys before the query
            before, after, itself = np.maximum(gap, 0), np.maximum(-gap, 0), np.eye(n)  # [n, n] each
            scaled = scaled - slopes[0] * before - slopes[1] * after - slopes[2] * itself
        scaled = np.where(batch.allowed, scaled, -np.inf)
        log_a = log_softmax(scaled)  # [b, n, n]
        cross = -np.sum(batch.targets * np.where(batch.allowed, log_a, 0.0), axis=-1)  # [b, n]; targets are 0 where masked
        loss += np.sum(batch.row_weight * cross) / total
        d_scaled = batch.row_weight[..., None] * (np.exp(log_a) - batch.targets) / total  # [b, n, n]; 0 where masked
        if set_weight:
            a, on_key = np.exp(log_a), batch.targets > 0  # [b, n, n] each
            mass = np.where(batch.linked, np.sum(a * on_key, axis=-1), 1.0)  # [b, n]; > 0: a linked row's keys are visible
            loss += set_weight * np.sum(-np.log(mass)) / n_linked
            d_scaled = d_scaled + set_weight * batch.linked[..., None] * a * (1.0 - on_key / mass[..., None]) / n_linked
        if slopes is not None:
            grad_slopes -= [np.sum(d_scaled * before), np.sum(d_scaled * after), np.sum(d_scaled * itself)]
        d_scores = d_scaled / math.sqrt(d_k)
        d_q = (d_scores @ k).reshape(b * n, d_k)  # [b, n, n] x [b, n, d_k] -> [b*n, d_k]
        d_k_ = (d_scores.transpose(0, 2, 1) @ q).reshape(b * n, d_k)
        grad_q = grad_q + flat_e.T @ d_q  # [d, b*n] x [b*n, d_k] -> [d, d_k]
        grad_k = grad_k + flat_e.T @ d_k_
        grad_bias += d_q.sum(axis=0)
    extra = ([grad_slopes] if slopes is not None else []) + ([grad_bias] if b_q is not None else [])
    return (float(loss), grad_q, grad_k, *extra)


def adam(params: list[np.ndarray], loss_and_grads: Callable, steps: int, lr: float,
         progress: Callable[[int, float], None] | None = None) -> list[float]:
    """Adam (Kingma and Ba 2015) in place on `params`; returns the loss at every step."""
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    history = []
    for t in range(1, steps + 1):
        loss, *grads = loss_and_grads(*params)
        history.append(loss)
        for p, g, m_i, v_i in zip(params, grads, m, v):
            m_i[...] = beta1 * m_i + (1 - beta1) * g
            v_i[...] = beta2 * v_i + (1 - beta2) * g * g
            p -= lr * (m_i / (1 - beta1**t)) / (np.sqrt(v_i / (1 - beta2**t)) + eps)
        if progress:
            progress(t, loss)
    return history


def train_query_key(examples: list[Example], config: TrainConfig, progress=None) -> tuple[Head, list[float]]:
    """A head's W_Q, W_K [d, d_k] (and, as `config` asks, its distance costs and query bias) learned
    from the links, from a seeded random init (std 1/sqrt(d)); W_V is left as I. Returns (head, loss history)."""
    d = examples[0].e.shape[1]
    rng = np.random.default_rng(config.seed)
    w_q = rng.normal(0.0, 1.0 / math.sqrt(d), (d, config.d_k))
    w_k = rng.normal(0.0, 1.0 / math.sqrt(d), (d, config.d_k))
    slopes = np.array(INITIAL_DISTANCE) if config.distance else None
    b_q = np.zeros(config.d_k) if config.query_bias else None
    params = [p for p in (w_q, w_k, slopes, b_q) if p is not None]
    batches = make_batches(examples, config.self_weight)

    def loss_and_grads(*values):
        wq, wk, *rest = values
        s = rest.pop(0) if config.distance else None
        bias = rest.pop(0) if config.query_bias else None
        return attention_loss(wq, wk, batches, config.l2, config.set_weight, s, bias)

    history = adam(params, loss_and_grads, config.steps, config.lr, progress)
    head = Head("trained", w_q, w_k, np.eye(d), b_q=b_q, distance=None if slopes is None else np.maximum(slopes, 0.0))
    return head, history


def attended(e: np.ndarray, head: Head, mask: Mask | str) -> np.ndarray:  # [n, d] -> [n, n]
    """A head's attention weights (W_V does not change them)."""
    return run_head(e, head, allowed_keys(mask, len(e))).weights


def fit_value_map(inputs: np.ndarray, targets: np.ndarray, row_weight: np.ndarray, prior: np.ndarray, ridge: float) -> np.ndarray:
    """W_V [d, d] minimising sum_i w_i |x_i W_V - t_i|^2 + ridge |W_V - prior|^2 (closed form).

    inputs: [m, d] attention-weighted embeddings (A E rows), targets: [m, d] wanted Delta E rows;
    prior: [d, d] the map to stay near where the data say little.
    """
    d = inputs.shape[1]
    weighted = inputs * row_weight[:, None]  # [m, d]
    gram = weighted.T @ inputs + ridge * np.eye(d)  # [d, m] x [m, d] -> [d, d]
    rhs = weighted.T @ targets + ridge * prior  # [d, d]
    return np.linalg.solve(gram, rhs)


def link_value_rows(examples: list[Example], head: Head, config: TrainConfig):
    """Rows for the value map: a linked query should move toward the mean of its keys' vectors,
    every other token keep its direction (Delta E ~ value_scale * its own vector)."""
    inputs, targets, weights = [], [], []
    for ex in examples:
        a = attended(ex.e, head, ex.mask)  # [n, n]
        mixed = a @ ex.e  # [n, n] x [n, d] -> [n, d]
        for i in range(len(ex.tokens)):
            keys = ex.links.get(i)
            inputs.append(mixed[i])
            targets.append(config.value_scale * (ex.words[keys].mean(axis=0) if keys else ex.words[i]))
            weights.append(1.0 if keys else config.self_weight)
    return np.array(inputs), np.array(targets), np.array(weights)


def train_link_head(name: str, examples: list[Example], config: TrainConfig, progress=None) -> Head:
    head, _ = train_query_key(examples, config, progress)
    head.name = name
    return with_value_map(head, examples, config)


def with_value_map(head: Head, examples: list[Example], config: TrainConfig) -> Head:
    """The head with W_V fitted to its own attention over `examples` (see link_value_rows)."""
    inputs, targets, weights = link_value_rows(examples, head, config)
    head.w_v = fit_value_map(inputs, targets, weights, config.value_scale * np.eye(inputs.shape[1]), config.value_ridge)
    return head


# --- held-out sentences (measured by attn_cli.heads.evaluation) -------------------------------------


def split_sentences(links: list[Link], holdout: float, seed: int) -> tuple[list[Link], list[Link]]:
    """Hold out a fraction of the sentences (all their lines together), chosen with a fixed seed."""
    sentences = list(dict.fromkeys(link.sentence for link in links))
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(sentences))
    n_held = int(round(holdout * len(sentences)))
    if holdout > 0 and len(sentences) > 1:
        n_held = min(max(n_held, 1), len(sentences) - 1)
    held = {sentences[i] for i in order[:n_held]}
    return [l for l in links if l.sentence not in held], [l for l in links if l.sentence in held]


def train_from_links(links_path: Path, out: Path, vectors, *, d_k: int, steps: int, seed: int, holdout: float, mask: Mask | str,
                     replace: bool = False, progress=None, distance: bool = False, query_bias: bool = False, oov: Oov = Oov.error):
    """`attn heads train`: read the links, hold out a share of the sentences, train a head on the
    rest, measure it on the held-out ones, and save it (with its metrics) at `out`."""
    from attn_cli.heads import registry as heads
    from attn_cli.heads.links import check_lengths
    from attn_cli.io.files import display_path
    from attn_cli.results import HeadTrained

    mask = Mask(mask).value  # as the head file and the result carry it
    all_links, source = read_links(links_path), input_name(links_path)
    check_lengths(all_links, source)
    train_links, held_links = split_sentences(all_links, holdout, seed)
    config = TrainConfig(d_k=d_k, steps=steps, seed=seed, distance=distance, query_bias=query_bias)
    train_ex = links_to_examples(train_links, vectors, mask, source, oov=oov)
    held_ex = links_to_examples(held_links, vectors, mask, source, oov=oov) if held_links else []
    head = train_link_head(out.stem, train_ex, config, progress)
    final_loss = attention_loss(head.w_q, head.w_k, make_batches(train_ex, config.self_weight), config.l2, 0.0, head.distance, head.b_q)[0]
    metrics = link_metrics(head, held_ex, mask) if held_ex else {}
    summary = (
        f"held-out: top weight on a linked key {metrics['top_on_key']:.2f}, weight on linked keys {metrics['key_weight']:.2f}"
        if held_ex else "no held-out sentences"
    )
    meta = {
        "description": f"trained by `attn heads train` from {links_path.name} ({len(train_ex)} sentences, mask {mask})",
        "summary": summary, "metrics": metrics, "mask": mask, "seed": seed, "steps": steps, "trained": True,
    }
    heads.save_head(head, out, meta, replace=replace)
    return HeadTrained(
        path=display_path(out), d_k=d_k, steps=steps, seed=seed, mask=mask, links=len(all_links),
        train_sentences=len(train_ex), heldout_sentences=len(held_ex), final_loss=final_loss, heldout=metrics,
    )
