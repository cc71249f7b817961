"""What a checkpoint's run will hold in memory at its peak, from what it keeps, checked before the pass allocates any of it.

The parts, in bytes (n tokens, d = d_model, ff the MLP's width, X = (h + 2 h_kv) d_head the width of Q, K and V):
    start       the interpreter, NumPy, the tokenizer, the file's header: START, measured
    weights     the float32 layers in memory at once: every layer of a float file; for a quantized file the layer
                being run, the ones read ahead (weights.AHEAD) and one given back, LAYERS_HELD in all
    output      the output projection as float32: whole when it is read ahead (weights.PREFETCH_VOCABULARY), else one block
    pass        one layer's arrays at once: STREAMS [n, d] streams, QKV_COPIES [n, X] and FF_COPIES [n, ff] arrays, the
                attention's scratch (core.blocked.BLOCK_BYTES) and its values [H, n, d_head]
    kept        the patterns kept (4 bytes per cell of each kept [H', m, t]; a view of every head, its page, its picture:
                EVERY_HEAD_PLANES such cells), and the streams kept ([L + 1, n, d] when a view keeps every layer's stream)
    shown       what the views make of the cells they show: SHOWN_CELL bytes per cell in a terminal or JSON
    mapped      the file's pages read through its memory map (counted by the kernel as resident, not private): every
                tensor's, less the vocabulary's when no logits are made
Measured on SmolLM2-135M (Q4_1 GGUF) with `predict` and `inspect --head L.H --json` at 512 to 4,096 tokens, `inspect
--page` at 128 to 384, `explain --page` at 256 to 1,280 and `generate --page` at 50 to 400 steps (tests/test_footprint.py
compares the estimate with the peak of a subprocess at three sizes of each; tests/benchmarks/bench_footprint.py prints them).
`generation` and `patching` add what those commands keep besides: every layer held, the KV cache, each step's record,
a generation page's rows, the runs' streams, a batch of reruns.
"""

from attn_cli.errors import InputError
from attn_cli.records import Record

START = 70 << 20
LAYERS_HELD = 4
STREAMS = 4
QKV_COPIES = 2
FF_COPIES = 2
SHOWN_CELL = 4
STEP_BYTES = 3_000  # a generated token's record: its token, top alternatives, sources (Python objects; tiny-gemma3, 200 to 4,000 steps)
PAGE_MAP_CELL = 400  # bytes a cell of explain's or patch's page takes as it is made: its value, its description, their JSON and HTML
PAGE_WRITE = 11  # bytes a kept attention cell takes while generate's page is made: 16-bit, base64, the JSON, the page, UTF-8
EVERY_HEAD_PLANES = 4  # float32 planes of [L, H, n, n] a view of every head holds: the trace's masked scores and weights, the result's
# stack of the weights, and what the allocator keeps of the layers' [H, n, n] arrays once freed (inspect --page, measured: 16 bytes a cell)
MEMORY_SHARE = 0.8  # of the memory available, what one run may take when no --max-memory is given


class Footprint(Record):
    """A run's estimated peak, part by part (bytes)."""

    __slots__ = ("parts",)

    def __init__(self, parts: dict):
        self.parts = parts

    @property
    def private(self) -> int:
        return sum(v for k, v in self.parts.items() if k != "mapped")

    @property
    def resident(self) -> int:  # what ru_maxrss counts: the private memory and the file's pages read
        return self.private + self.parts.get("mapped", 0)


def layer_bytes(model) -> int:
    """One layer's tensors as float32."""
    w = model.weights
    prefix = "layers.0."
    return 4 * sum(t.size for key, parts in w.plan.items() if key.startswith(prefix) for t, _ in parts)


def estimate(model, n: int, cells: int = 0, shown: int = 0, streams: bool = False, logits_rows: int = 1) -> Footprint:
    """The peak of a run over n tokens that keeps `cells` pattern cells, shows `shown` of them, keeps every layer's stream
    ([L + 1, n, d] and each layer's updates) when `streams`, and makes `logits_rows` rows of logits (0: none)."""
    from attn_cli.models.weights import UNEMBEDDING_ROWS

    spec, w = model.spec, model.weights
    width = (spec.n_heads + 2 * spec.n_kv_heads) * spec.d_head
    from attn_cli.core.blocked import BLOCK_BYTES

    # a pass over a few rows multiplies a quantized file's blocks where they lie (the mapped file): no float32 layer
    held = 0 if w.products_for(n) else layer_bytes(model) * (spec.n_layers if w.eager else min(LAYERS_HELD, spec.n_layers))
    output = 0
    if logits_rows:
        whole = w.vocabulary_bytes()
        from attn_cli.models.weights import PREFETCH_VOCABULARY

        output = whole if whole <= PREFETCH_VOCABULARY or w.eager else UNEMBEDDING_ROWS * spec.d_model * 4
        output = 0 if w.head_blocks(logits_rows) is not None else output  # the logits straight from the table's blocks
        output += 4 * logits_rows * spec.vocab_size * 3  # float32 logits, float64 logits and probabilities
    one_pass = 4 * n * (STREAMS * spec.d_model + QKV_COPIES * width + FF_COPIES * spec.d_ff) + BLOCK_BYTES + 8 * n * spec.n_heads * spec.d_head
    kept = 4 * cells + (4 * 3 * (spec.n_layers + 1) * n * spec.d_model if streams else 0)
    vocabulary = ("embed.tokens", "unembed") if not logits_rows else ()  # without logits, only the rows of the text's tokens are read
    mapped = sum(getattr(t, "nbytes", 0) for key, parts in w.plan.items() if key not in vocabulary for t, _ in parts) if not w.eager else 0
    return Footprint({"start": START, "weights": held, "output": output, "pass": one_pass, "kept": kept, "shown": SHOWN_CELL * shown,
                      "mapped": mapped})


def generation(model, prompt: int, steps: int, hold_bytes: int, page_cells: int | None = None) -> Footprint:
    """The peak of `generate` over a prompt of `prompt` tokens and `steps` new ones: the prompt's pass, every layer held as
    float32 when they fit in `hold_bytes` and the steps do not read a quantized file's blocks (Weights.products_for), the KV cache at its last length (grown by doubling), each step's record
    (STEP_BYTES), and for a page (`page_cells`: the most attention cells the steps keep) the float16 rows kept and the page
    made of them (PAGE_WRITE a cell)."""
    spec = model.spec
    n = min(prompt + steps, spec.max_positions)
    parts = dict(estimate(model, prompt, logits_rows=1).parts)
    if layer_bytes(model) * spec.n_layers <= hold_bytes and not model.weights.products_for(1):  # else the steps read the blocks
        parts["weights"] = layer_bytes(model) * spec.n_layers
    capacity = max(prompt, 16)
    while capacity < n:
        capacity *= 2
    parts["cache"] = 2 * 4 * spec.n_layers * spec.n_kv_heads * spec.d_head * capacity
    made = n - prompt
    parts["steps"] = STEP_BYTES * made
    if page_cells is not None:
        row = spec.n_layers * spec.n_heads  # cells of a step's attention per key
        every = row * (made * prompt + made * (made + 1) // 2)  # step k's row reads prompt + k + 1 keys at most
        kept = min(every, page_cells + row * n)  # the newest steps' rows: at most page_cells, and the newest's over it
        parts["kept"] = (2 + PAGE_WRITE) * kept
    return Footprint(parts)


def patching(model, n: int, hold_bytes: int, batch_bytes: int, page: bool = False) -> Footprint:
    """The peak of `patch` over two texts of n tokens: every layer held as float32 when they fit in `hold_bytes`, each
    run's streams, heads' outputs and KV cache kept, the largest batch of reruns (its attention at most `batch_bytes`),
    and the page's two maps (L x n and L x H cells, PAGE_MAP_CELL each)."""
    spec = model.spec
    per_item = 4 * spec.n_heads * n * n  # a rerun's attention weights
    batch = min(max(spec.n_layers, spec.n_heads, 0 if model.causal else n), max(1, batch_bytes // max(per_item, 1)))
    parts = dict(estimate(model, batch * n, logits_rows=1).parts)  # the output projection is held with the layers (Weights.hold)
    parts["pass"] += batch * per_item
    if layer_bytes(model) * spec.n_layers <= hold_bytes:
        parts["weights"] = layer_bytes(model) * spec.n_layers
    width = spec.n_heads * spec.d_head
    parts["kept"] = 2 * 4 * spec.n_layers * n * (2 * spec.d_model + width)  # resid_pre, resid_post and attn.z of both runs
    parts["cache"] = 2 * 4 * spec.n_layers * spec.n_kv_heads * spec.d_head * max(n, 16)
    parts["page"] = PAGE_MAP_CELL * spec.n_layers * (n + spec.n_heads) if page else 0
    return Footprint(parts)


def parse_size(text: str) -> int:
    """'4G', '512M', '1.5 GB', '800000000' -> bytes (K, M, G, T: powers of 1024)."""
    units = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "T": 1 << 40, "TB": 1 << 40}
    cleaned = text.strip().upper().replace("IB", "B").replace(" ", "")
    number = cleaned.rstrip("KMGTB")
    unit = cleaned[len(number):]
    try:
        value = float(number)
    except ValueError:
        value = -1
    if unit not in units or not value > 0 or value != value or value == float("inf"):
        raise InputError(f"--max-memory {text!r}: give a size such as 4G, 512M or 1.5GB")
    return int(value * units[unit])


def limit(max_memory: int | None) -> int | None:
    """The bytes a run may take: --max-memory, else MEMORY_SHARE of what is available (None: unknown, nothing refused)."""
    if max_memory is not None:
        return max_memory
    from attn_cli.io.memory import available_memory

    available = available_memory()
    return None if available is None else int(available * MEMORY_SHARE)


def check(model, n: int, need, what: str, max_memory: int | None, options: str = "", fits=None, over: str | None = None) -> None:
    """Refuse, before the pass, a run whose estimate `need(n)` (a Footprint) passes the limit: one line giving the need, the
    limit, the options that would shrink it and the longest text that would fit (`fits(k)` words the largest n that does;
    `over` the run's size, "over n tokens" unless given)."""
    from attn_cli.io.memory import _size

    allowed = limit(max_memory)
    if allowed is None:
        return
    private = need(n).private
    if private <= allowed:
        return
    lo, hi = 0, n  # the most tokens that fit: the estimate grows with n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if need(mid).private <= allowed else (lo, mid - 1)
    shorter = fits(lo) if fits is not None else f"a text of at most {lo:,} tokens" if lo else "no text at all"
    source = "--max-memory" if max_memory is not None else "the memory available"
    raise InputError(f"{what} {over or f'over {n:,} tokens'} needs about {_size(private)}, more than the {_size(allowed)} {source} allows; "
                     f"{options + ', or ' if options else ''}{shorter} would fit (--max-memory SIZE overrides)")
