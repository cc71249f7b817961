"""A checkpoint's tensors under attn's own names and layout, read through its family's table.

Canonical names (TransformerLens's idea: one set of names for every family):
    embed.tokens [V, d]   embed.positions [P, d]   embed.types [T, d]   embed.norm.w/b [d]
    per layer:  attn.norm.w/b [d]   attn.qkv.w [d, (h + 2 h_kv) d_head]   attn.qkv.b   attn.o.w [h d_head, d]   attn.o.b [d]
                mlp.norm.w/b [d]    mlp.in.w [d, ff]   mlp.gate.w [d, ff]   mlp.out.w [ff, d]   (and their .b)
    final_norm.w/b [d]    unembed [V, d] (the output projection; absent when tied to embed.tokens)
Matrices are laid out [in, out] once, at load, so each step is x @ W. Q, K and V are one matrix.

The vocabulary's embeddings stay in the file (a sentence needs a few rows); every other tensor is
read at load when the file stores floats, or as the forward pass reaches its layer when it is
quantized (a GGUF file), so a quantized model never sits in memory as float32 whole.
"""

import re

import numpy as np

from attn_cli.errors import DataError
from attn_cli.models.block_layers import BlockLayers
from attn_cli.models.spec import Spec, stored_shapes

PREFIXES = ("bert.", "transformer.", "model.")  # task models (BertForMaskedLM, GPT2LMHeadModel, LlamaForCausalLM) nest the base model
EMBEDDING = "embed.tokens"
EAGER_DTYPES = ("F32", "F16", "BF16", "F64", "F8_E4M3", "F8_E5M2")  # read at load; anything else (quantized) is dequantized layer by layer
WORKERS = 2  # threads dequantizing ahead of the forward pass: the machines attn is made for have 2 cores
AHEAD = 2  # layers read ahead (a layer of a 135M-parameter model is ~15 MB as float32)
AHEAD_BYTES = 64 << 20  # only layers up to this size as float32 are read ahead: a larger one (an 8B model's is 872 MiB) would
# hold two layers at once for a gain of at most one layer's dequantization, and is read into the memory of the one before it
UNEMBEDDING_ROWS = 8192  # vocabulary rows per block of the logits: [8192, d] float32
PREFETCH_VOCABULARY = 256 << 20  # an output projection up to this size as float32 is read whole, ahead, while the layers run
CACHE_SHARE = 0.25  # of the memory available: what dequantized layers may keep, from a model's second forward pass on


def strip_prefix(name: str) -> str:
    for prefix in PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def in_memory_order(w: np.ndarray) -> np.ndarray:
    """A matrix kept for many passes, copied into row order ([in, out] as it is read): x @ W then runs ~7% faster
    for a short input than on the transposed [out, in] rows of the file (SmolLM2, one BLAS thread, n = 16 and 128)."""
    return np.ascontiguousarray(w)


class TensorPart:
    """The i-th of k equal blocks of a stored tensor's rows (its output rows, [out, in] as torch keeps a Linear): Phi-3 fuses
    gate and up into one gate_up_proj, read as two canonical tensors."""

    def __init__(self, tensor, i: int, k: int):
        self.tensor, self.i, self.k = tensor, i, k
        rows = tensor.shape[0] // k
        self.name, self.dtype, self.shape = tensor.name, tensor.dtype, (rows, *tensor.shape[1:])
        self.size = int(np.prod(self.shape))

    def blocks(self):  # -> (blocks, dtype, None) of its rows, as GGUFTensor.blocks, or None
        whole = self.tensor.blocks() if hasattr(self.tensor, "blocks") else None
        if whole is None or whole[2] is not None:
            return None
        rows = self.shape[0]
        return whole[0][self.i * rows : (self.i + 1) * rows], whole[1], None

    def array(self, out: np.ndarray | None = None) -> np.ndarray:  # -> self.shape float32
        rows = self.shape[0]
        block = self.tensor.array()[self.i * rows : (self.i + 1) * rows]
        if out is None:
            return np.ascontiguousarray(block)
        np.copyto(out, block)
        return out


class TableKeys:
    """A vocabulary table as keys for the nearest-neighbour search (core.neighbors.key_scores): its rows a block at a time,
    each dequantized from the file (Weights.each_unembedding_block), for a table too large to hold whole."""

    norms = None
    BLOCK_ROWS = 8192

    def __init__(self, weights: "Weights", key: str):
        self.weights, self.key = weights, key

    def __len__(self) -> int:
        return self.weights.plan[self.key][0][0].shape[0]

    def blocks(self):
        return self.weights.each_unembedding_block(self.BLOCK_ROWS, self.key)


class Weights(BlockLayers):
    """The canonical tensors of one checkpoint (see the module's docstring)."""

    def __init__(self, spec: Spec, tensors: dict, table: dict, optional: tuple, where: str, config_where: str = "config.json",
                 layer_name: str = "layers.{l}"):
        self.spec, self.where, self.config_where, self.layer_name = spec, where, config_where, layer_name
        self.tensors = {strip_prefix(name): t for name, t in tensors.items()}  # source tensors, by name without a task model's prefix
        self.table, self.optional = table, optional
        self.plan: dict[str, list] = {}  # canonical name ("layers.3.attn.qkv.w" or "embed.norm.w") -> [(tensor, layout)]
        for canonical, stored in table.items():
            for l in range(spec.n_layers) if "{l}" in "".join(stored.names) else [None]:
                key = canonical if l is None else f"layers.{l}.{canonical}"
                found = self._find(canonical, stored, l)
                if found is not None:
                    self.plan[key] = found
        self.check_layers()
        self.eager = all(t.dtype in EAGER_DTYPES for parts in self.plan.values() for t, _ in parts)
        self._arrays: dict[str, np.ndarray] = {}
        if self.eager:  # floats: read now, so a damaged tensor is an error before any sentence
            for key in self.plan:
                if key != EMBEDDING:
                    self._arrays[key] = self.read(key)
        self._vocabulary = None
        self.passes = 0  # forward passes begun (the runner counts them)
        self._cache_budget: int | None = None
        self._workers = None  # threads that dequantize ahead of the forward pass (quantized files only)
        self._ahead: dict = {}  # layer -> its tensors being read
        self._lent: dict = {}  # layer -> its dequantized tensors, in the forward pass's hands until release()
        self._spare: list[dict] = []  # dequantized layers given back: memory for the next layers read
        self._vocabulary_ahead = None
        self._layer_keys: list | None = None  # layer -> its canonical names (layer_keys)
        self._blocks, self._block_layers = {}, {}  # canonical name -> its Blocks or None; layer -> block_layer() (BlockLayers)

    def _find(self, canonical: str, stored, l: int | None):
        """[(source tensor, layout)] for one canonical tensor, shapes checked; None when it is optional and absent."""
        parts = []
        shapes = stored_shapes(canonical, self.spec, stored.names)
        for name, shape in zip(stored.names, shapes):
            options = [n.format(l=l) for n in (name, *stored.alternatives)]
            tensor = next((self.tensors[n] for n in options if n in self.tensors), None)
            want = shape if stored.layout != "linear" else tuple(reversed(shape))  # torch's Linear keeps [out, in]
            if stored.part is not None:  # one block of a fused tensor's output rows
                want = (want[0] * stored.part[1], *want[1:])
            if tensor is None:
                if canonical in self.optional and not parts:
                    return None
                raise DataError(f"{self.where}: missing tensor {options[0]} (shape {[s for s in want if s is not None]})")
            if hasattr(tensor, "refusal"):  # stored in a dtype attn does not read as weights
                raise DataError(f"{self.where}: {tensor.refusal()}")
            if len(tensor.shape) != len(want) or any(w is not None and s != w for s, w in zip(tensor.shape, want)):
                raise DataError(f"{self.where}: tensor {tensor.name if hasattr(tensor, 'name') else options[0]}: shape {list(tensor.shape)}, expected {list(want)}")
            parts.append((tensor if stored.part is None else TensorPart(tensor, *stored.part), stored.layout))
        return parts

    def check_layers(self) -> None:
        """The config's layer count against the layers the file holds: a config that understates the model is not believed
        (one that overstates it misses a tensor of its first absent layer)."""
        found = [(int(m.group(2)), m.group(1)) for name in self.tensors for m in [re.match(r"((?:.*\.)?(?:layer|layers|h|blk)\.)(\d+)\.", name)] if m]
        if not found:
            return
        held, prefix = max(found)
        if held + 1 > self.spec.n_layers:
            key = self.spec.extra.get("layers_key", "the layer count")
            raise DataError(f"{self.config_where}: {key} is {self.spec.n_layers}, but {self.where} holds {held + 1} layers "
                            f"({prefix}0 to {prefix}{held})")

    def read(self, key: str, into: np.ndarray | None = None) -> np.ndarray:
        """One canonical tensor as float32 in attn's layout (read_stored), the family's quirks folded in."""
        return self.fold(key, self.read_stored(key, into))

    def fold(self, key: str, array: np.ndarray) -> np.ndarray:
        """A family's quirks folded into its canonical weights as they are read (TransformerLens's weight conversions), so
        nothing downstream knows of them: Gemma's norms scale by 1 + w, so a Gemma norm is a plain one with weight 1 + w."""
        if self.spec.norm_offset and key.endswith("norm.w"):
            return array + np.float32(self.spec.norm_offset)
        return array

    def embed(self, ids: list[int]) -> np.ndarray:  # -> [n, d] float32
        """The input embeddings of these tokens, the family's scale folded in (Gemma's sqrt(d)); the rows of a tied output
        projection (rows, unembedding) stay as they are stored."""
        e = self.rows(ids)
        return e if self.spec.embed_scale is None else e * np.float32(self.spec.embed_scale)

    def read_stored(self, key: str, into: np.ndarray | None = None) -> np.ndarray:
        """One canonical tensor as float32, in attn's layout: a Linear's [out, in] rows are joined (Q, K, V) and
        transposed without a copy (x @ W with W in Fortran order is the same BLAS product).

        `into`: what `read` gave for the same tensor of another layer, no longer used: a quantized file's
        tensors are dequantized into its memory, part after part, rather than into new memory."""
        parts = self.plan[key]
        if into is None and not self.eager and parts[0][1] == "linear" and len(parts[0][0].shape) == 2:
            # a quantized file's parts (Q, K, V) are dequantized into one array, rather than into theirs and then joined
            into = np.empty((sum(t.shape[0] for t, _ in parts), parts[0][0].shape[1]), dtype=np.float32).T
        try:
            rows = None if into is None or parts[0][1] != "linear" else into.T  # [out, in]: the parts' rows one after another
            if rows is not None and rows.flags.c_contiguous and rows.shape == (sum(t.shape[0] for t, _ in parts), *parts[0][0].shape[1:]):
                start = 0
                for tensor, _ in parts:
                    tensor.array(out=rows[start : start + tensor.shape[0]])
                    start += tensor.shape[0]
                return into
            arrays = [tensor.array() for tensor, _ in parts]
        except DataError as e:
            raise DataError(f"{self.where}: {e}") if not str(e).startswith(self.where) else e from None
        if parts[0][1] == "linear":
            return (arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=0)).T  # [out, in] -> [in, out]
        return arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=-1)

    def source_names(self, key: str, first: int | None = None) -> str:
        """Where the checkpoint keeps a canonical tensor, for a message: "h.0.attn.c_attn", "encoder.layer.2.attention.self.query/key"."""
        names = [t.name.removesuffix(".weight").removesuffix(".bias") for t, _ in self.plan.get(key, [])][:first]
        names = [n[len(p):] if (p := next((p for p in PREFIXES if n.startswith(p)), None)) else n for n in names]
        if len(names) > 1 and len({n.rpartition(".")[0] for n in names}) == 1:
            return names[0].rpartition(".")[0] + "." + "/".join(n.rpartition(".")[2] for n in names)
        return ", ".join(names)

    def has(self, key: str) -> bool:
        return key in self.plan

    def get(self, key: str) -> np.ndarray | None:
        """A tensor outside the layers (embed.*, final_norm.*, unembed), or None when the checkpoint has none."""
        if key not in self.plan:
            return None
        if key not in self._arrays:
            self._arrays[key] = self.read(key)  # small: norms, positions; the vocabulary goes through rows() / vocabulary()
        return self._arrays[key]

    def tensor(self, key: str) -> np.ndarray:
        """One tensor of a layer ("layers.3.attn.o.w"), without reading the rest of the layer (nor keeping a quantized one)."""
        return self._arrays[key] if key in self._arrays else self.read(key)

    def layer(self, l: int, rows: int | None = None) -> dict:
        """Layer l's tensors by canonical name (without the "layers.l." prefix). A quantized file's are dequantized
        now, the next layer's on a second thread meanwhile (NumPy leaves the interpreter lock while it works); for a
        pass over `rows` rows that products_for() serves, its matrices are their file's blocks instead (Blocks)."""
        if self.products_for(rows, l):
            return self.block_layer(l)
        prefix = f"layers.{l}."
        if self.eager or self._kept(l):
            return {k[len(prefix):]: self._arrays[k] for k in self.layer_keys(l)}
        ahead = self._ahead.pop(l, None)
        self.prefetch(l + 1)
        layer = ahead.result() if ahead is not None else self._read_layer(l)
        if self.passes > 1 and self._keeps(sum(a.nbytes for a in layer.values())):  # a second sentence: keep what fits, for the next ones
            kept = {k: in_memory_order(a) for k, a in layer.items()}
            self._spare.append({k: a for k, a in layer.items() if not np.may_share_memory(kept[k], a)})  # what was copied is free
            self._arrays.update({prefix + k: a for k, a in kept.items()})
            if all(self._kept(i) for i in range(self.spec.n_layers)):
                self._spare.clear()  # nothing is read again
            return kept
        self._lent[l] = layer  # its memory serves a later layer once the forward pass gives it back (release)
        return layer  # one sentence never holds a quantized model as float32

    def prefetch(self, first: int = 0) -> None:
        """Start dequantizing layers first .. first + AHEAD - 1 on the other threads (a quantized file's, each up to
        AHEAD_BYTES as float32), unless they are in memory or under way: what the forward pass reaches next."""
        if self.eager:
            return
        for l in range(first, min(first + AHEAD, self.spec.n_layers)):
            if l not in self._ahead and not self._kept(l) and self.layer_bytes(l) <= AHEAD_BYTES:
                self._ahead[l] = self._pool().submit(self._read_layer, l)

    def layer_bytes(self, l: int) -> int:
        """Layer l's tensors as float32."""
        return 4 * sum(t.size for k in self.layer_keys(l) for t, _ in self.plan[k])

    def layer_keys(self, l: int) -> list[str]:
        """The canonical names of layer l's tensors ("layers.3.attn.o.w", ...), found in the plan once."""
        if self._layer_keys is None:
            self._layer_keys = [[] for _ in range(self.spec.n_layers)]
            for k in self.plan:
                if k.startswith("layers."):
                    self._layer_keys[int(k.split(".", 2)[1])].append(k)
        return self._layer_keys[l]

    def _kept(self, l: int) -> bool:  # layer l's tensors are all in memory
        return all(k in self._arrays for k in self.layer_keys(l))

    def release(self, l: int) -> None:
        """The forward pass is done with layer l's tensors: a quantized file's next layers are dequantized into their memory.
        (Writing into fresh memory costs a page fault per 4 KiB: on SmolLM2 that was half of a cold `predict`.)"""
        layer = self._lent.pop(l, None)
        if layer is not None and (l < self.spec.n_layers - 1 or self.layer_bytes(l) <= AHEAD_BYTES):
            self._spare.append(layer)
        elif layer is not None:  # the last layer of a large model: its memory goes back now, for the output head's blocks
            self._spare.clear()

    def _read_layer(self, l: int) -> dict[str, np.ndarray]:
        prefix = f"layers.{l}."
        try:
            spare = self._spare.pop()  # from another thread than release's: list.pop and append are atomic
        except IndexError:
            spare = {}
        return {k[len(prefix):]: self.read(k, into=spare.get(k[len(prefix):])) for k in self.layer_keys(l)}

    def _pool(self):
        if self._workers is None:
            from concurrent.futures import ThreadPoolExecutor

            self._workers = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="dequantize")
        return self._workers

    def vocabulary_bytes(self) -> int:
        """The output projection as float32, whole."""
        (tensor, _), = self.plan[self.unembedding_key()]
        return 4 * tensor.size

    def prefetch_vocabulary(self) -> None:
        """Start reading the whole output projection on the second thread, if it is not in memory and small enough
        (PREFETCH_VOCABULARY bytes as float32): a larger one is read a block of rows at a time as the logits are made."""
        if self.vocabulary_bytes() > PREFETCH_VOCABULARY or self.head_blocks(1) is not None:  # large, or products read it
            return
        if self._vocabulary is None and self._vocabulary_ahead is None and not self.eager:
            self._vocabulary_ahead = self._pool().submit(self.read, EMBEDDING if not self.has("unembed") else "unembed")

    def _keeps(self, nbytes: int) -> bool:
        if self._cache_budget is None:
            from attn_cli.io.memory import available_memory

            available = available_memory()
            self._cache_budget = int((available or 0) * CACHE_SHARE)
        if nbytes > self._cache_budget:
            return False
        self._cache_budget -= nbytes
        return True

    def hold(self, budget: int, rows: int | None = None) -> bool:
        """Keep every layer dequantized (float32) when that takes at most `budget` bytes, and the output projection when it
        is small (PREFETCH_VOCABULARY): for runs of many short passes (the sense meter's prototypes, a generation's steps,
        patching's reruns), where dequantizing each layer and the vocabulary on every pass would cost the most.
        `rows`: the rows of those passes; when products_for() serves them, nothing is dequantized (they read the blocks).
        Returns whether the layers are held (or need not be)."""
        if self.products_for(rows):
            return True
        if not self.eager:
            layers = [k for k in self.plan if k.startswith("layers.")]
            if 4 * sum(t.size for k in layers for t, _ in self.plan[k]) > budget:
                return False
            for key in layers:
                self._arrays[key] = in_memory_order(self.read(key))
            self.eager = True
            self._spare.clear()
        if self.vocabulary_bytes() <= PREFETCH_VOCABULARY:  # the output projection too: each pass's logits read it whole
            self.unembedding()
        return True

    def rows(self, ids: list[int]) -> np.ndarray:  # -> [len(ids), d] float32
        """Some rows of the vocabulary's embeddings, read from the file alone."""
        if self._vocabulary is not None:
            return self._vocabulary[ids]
        (tensor, _), = self.plan[EMBEDDING]
        try:
            return tensor.rows(ids)
        except DataError as e:
            raise DataError(f"{self.where}: {e}") from None

    def vocabulary(self) -> np.ndarray:  # -> [V, d] float32
        """The whole embedding matrix (for the nearest tokens of a vector), read once."""
        if self._vocabulary is None:
            ahead = self._vocabulary_ahead if not self.has("unembed") else None
            self._vocabulary = ahead.result() if ahead is not None else self.read(EMBEDDING)
        return self._vocabulary

    def unembedding_key(self) -> str:
        return "unembed" if self.has("unembed") else EMBEDDING

    def each_unembedding_block(self, rows: int = UNEMBEDDING_ROWS, key: str | None = None):
        """(start, [c, d] float32) for blocks of c rows of the output projection (or of `key`'s table: EMBEDDING for the
        nearest tokens), in order: slices of the whole table when it is in memory (or being read ahead), else each block
        dequantized from the file alone (a quantized file's row range), so the [V, d] float32 table of a large vocabulary
        never exists. A block read from the file is in memory that the next block reuses: use it before asking for the next."""
        key = key or self.unembedding_key()
        whole = self._arrays.get(key) if key != EMBEDDING else self._vocabulary
        if whole is None and self._vocabulary_ahead is not None:
            whole = self.unembedding()
        (tensor, _), = self.plan[key]
        size = tensor.shape[0]
        buffer = None
        for start in range(0, size, rows):
            end = min(size, start + rows)
            if whole is not None:
                yield start, whole[start:end]
                continue
            try:
                if hasattr(tensor, "row_range"):  # a GGUF tensor: dequantized into the memory of the block before
                    if buffer is None:
                        buffer = np.empty((min(rows, size), tensor.shape[1]), dtype=np.float32)
                    yield start, tensor.row_range(start, end, out=buffer[: end - start])
                else:
                    yield start, tensor.rows(np.arange(start, end))
            except DataError as e:
                raise DataError(f"{self.where}: {e}") from None

    def unembedding(self) -> np.ndarray:  # -> [V, d] float32: logits = x @ W_U^T
        if not self.has("unembed"):
            return self.vocabulary()
        if "unembed" not in self._arrays and self._vocabulary_ahead is not None:
            self._arrays["unembed"] = self._vocabulary_ahead.result()
        return self.get("unembed")

    def parameter_counts(self) -> dict[str, int]:
        """Elements per group, counted from the tensors in the file (not from the config's claims)."""
        counts = {"embeddings": 0, "attention": 0, "mlp": 0, "norms": 0, "output": 0}
        for key, parts in self.plan.items():
            size = sum(t.size for t, _ in parts)
            name = key.split(".", 2)[-1] if key.startswith("layers.") else key
            group = ("norms" if ".norm." in f".{name}" or "_norm." in name or name.startswith("final_norm") else "embeddings" if name.startswith("embed.")
                     else "output" if name in ("unembed", "mlm.bias") or name.startswith("mlm.") else {"attn": "attention", "mlp": "mlp"}[name.split(".")[0]])
            counts[group] += size
        return counts
