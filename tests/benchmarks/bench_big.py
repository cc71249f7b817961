"""An 8B-shaped GGUF file (Llama 3 8B's shapes, random Q4_K weights) through `attn predict` and `attn inspect`: memory and time.

Run by hand (not a test):

    .venv/bin/python tests/benchmarks/bench_big.py [--layers 2] [--out FILE.gguf] [--runs 3]

1. Writes (into a temporary folder, or --out) a llama-architecture GGUF with Llama-3-8B's shapes: d_model 4096,
   FFN 14336, 32 query heads over 8 key/value heads (d_head 128), a vocabulary of 128,256 and an untied output
   head, --layers layers; every matrix in Q4_K, the norms F32. The file is written tensor by tensor, a few
   thousand rows at a time, never holding a tensor's float32 weights: random normal blocks (std 0.02) are
   quantized once by the small Q4_K quantizer below, and each tensor's blocks are drawn from that pool at random.
   The tokenizer is byte-level BPE without merges (one token per byte), so a text of n ASCII characters is n tokens;
   llama.cpp refuses a BPE vocabulary without merges, so bench_llama.py writes the file with `write_file(...,
   tokenizer=GGUF)` instead: that file's byte-level BPE (its tokens, types, merges and specials; SmolLM2's there),
   padded with unused tokens to the 128,256 rows.
2. Runs `attn predict TEXT --model FILE --json` and `attn inspect TEXT --model FILE --layer 1 --json` as new
   processes at n = 16 and n = 512 tokens, sampling /proc/PID/status every 2 ms: the peak of RssAnon (private
   memory: what the process allocated), of RssFile (the mapped file's pages that were resident) and VmHWM.
   Target: peak RssAnon <= one layer's float32 weights + 400 MiB (1,272 MiB at these shapes), whatever --layers.
3. Seconds per layer of a forward pass at n = 16 and n = 512 (a new process that loads the model and times
   one pass, each layer dequantized as the pass reaches it, as for one sentence), and of the dequantization alone.
4. Dequantization throughput per type (Q4_K, Q5_K, Q6_K, Q8_0, Q4_0), in GB/s of float32 written, attn's
   (attn_cli.models.sources.quants) against gguf.quants.dequantize, interleaved in the same run, on a
   [4096, 14336] tensor of random blocks (finite scales in a realistic range), and on this file's own ffn_up;
   each checked to give the same values (0 ULP).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

D, FF, HEADS, KV_HEADS, VOCAB = 4096, 14336, 32, 8, 128_256
D_HEAD = D // HEADS
QK_K, Q4_K_BYTES = 256, 144
POOL_BLOCKS = 1 << 16  # random blocks quantized once (9 MiB of Q4_K); every tensor's blocks are drawn from them
WRITE_ROWS = 4096  # rows written at a time
STD = 0.02  # the weights' standard deviation (a usual initialization)
TEXT = "The capital of France is Paris, and the capital of Italy is Rome. " * 16  # ASCII: one token per character
SAMPLE_SECONDS = 0.002


# --- a Q4_K quantizer (min-max per sub-block; llama.cpp searches its scales, which only makes the error smaller) ---


def quantize_q4_k(x: np.ndarray) -> np.ndarray:  # [blocks, 256] float32 -> [blocks, 144] uint8
    nb = len(x)
    sub = x.reshape(nb, 8, 32)
    low = np.minimum(sub.min(axis=-1), 0)  # [nb, 8]: x = scale q - min, min >= 0
    scale = (sub.max(axis=-1) - low) / 15
    d, dmin = scale.max(axis=-1) / 63, -low.min(axis=-1) / 63  # [nb]: the 6-bit scales and mins are multiples of these
    d16, dmin16 = d.astype(np.float16), dmin.astype(np.float16)
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d16[:, None] > 0, np.rint(scale / d16.astype(np.float32)[:, None]), 0).clip(0, 63).astype(np.uint8)
        mn = np.where(dmin16[:, None] > 0, np.rint(-low / dmin16.astype(np.float32)[:, None]), 0).clip(0, 63).astype(np.uint8)
        step = (d16.astype(np.float32)[:, None] * sc)[:, :, None]  # [nb, 8, 1], as the decoder computes them
        offset = (dmin16.astype(np.float32)[:, None] * mn)[:, :, None]
        q = np.where(step > 0, np.rint((sub + offset) / step), 0).clip(0, 15).astype(np.uint8)  # [nb, 8, 32]
    head = np.empty((nb, 12), np.uint8)  # get_scale_min_k4's packing: 6 bits each, the last four split over the spare bits
    head[:, 0:4] = (sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6)
    head[:, 4:8] = (mn[:, :4] & 63) | ((mn[:, 4:] >> 4) << 6)
    head[:, 8:12] = (sc[:, 4:] & 15) | ((mn[:, 4:] & 15) << 4)
    qs = q.reshape(nb, 4, 2, 32)
    qs = qs[:, :, 0] | (qs[:, :, 1] << 4)  # [nb, 4, 32]: sub-block 2g in the low halves, 2g + 1 in the high
    return np.concatenate([d16.view(np.uint8).reshape(nb, 2), dmin16.view(np.uint8).reshape(nb, 2), head, qs.reshape(nb, 128)], axis=1)


def tensors(layers: int) -> list[tuple[str, tuple, str]]:  # (GGUF name, shape as torch has it [out, in], type)
    every = [("token_embd.weight", (VOCAB, D), "Q4_K")]
    for l in range(layers):
        every += [(f"blk.{l}.attn_norm.weight", (D,), "F32"), (f"blk.{l}.attn_q.weight", (HEADS * D_HEAD, D), "Q4_K"),
                  (f"blk.{l}.attn_k.weight", (KV_HEADS * D_HEAD, D), "Q4_K"), (f"blk.{l}.attn_v.weight", (KV_HEADS * D_HEAD, D), "Q4_K"),
                  (f"blk.{l}.attn_output.weight", (D, HEADS * D_HEAD), "Q4_K"), (f"blk.{l}.ffn_norm.weight", (D,), "F32"),
                  (f"blk.{l}.ffn_gate.weight", (FF, D), "Q4_K"), (f"blk.{l}.ffn_up.weight", (FF, D), "Q4_K"),
                  (f"blk.{l}.ffn_down.weight", (D, FF), "Q4_K")]
    return every + [("output_norm.weight", (D,), "F32"), ("output.weight", (VOCAB, D), "Q4_K")]


def byte_alphabet() -> list[str]:
    """GPT-2's bytes_to_unicode: the printable character that stands for each byte in a byte-level BPE vocabulary."""
    kept = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in kept:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


UNUSED = 5  # tokenizer.ggml.token_type of a row no text is cut into (llama.cpp's LLAMA_TOKEN_TYPE_UNUSED)


def add_tokenizer(writer, tokenizer: Path | None) -> None:
    """The byte vocabulary (one token per byte, no merges), or `tokenizer`'s byte-level BPE (a gpt2 GGUF: its tokens,
    types, merges, pre-tokenizer and specials), padded with unused tokens to VOCAB rows."""
    if tokenizer is None:
        writer.add_tokenizer_model("gpt2")
        writer.add_tokenizer_pre("gpt2")
        writer.add_token_list(byte_alphabet() + [f"<unused{i}>" for i in range(VOCAB - 257)] + ["<|end_of_text|>"])
        writer.add_token_types([1] * (VOCAB - 1) + [3])
        writer.add_token_merges([])
        writer.add_eos_token_id(VOCAB - 1)
        return
    from attn_cli.models.sources.gguf_file import read_file

    meta = read_file(tokenizer).metadata
    if meta.get("tokenizer.ggml.model") != "gpt2" or len(meta["tokenizer.ggml.tokens"]) > VOCAB:
        raise SystemExit(f"{tokenizer}: give a byte-level BPE (gpt2) GGUF of at most {VOCAB:,} tokens")
    tokens = list(meta["tokenizer.ggml.tokens"])
    pad = VOCAB - len(tokens)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(meta.get("tokenizer.ggml.pre", "gpt2"))
    writer.add_token_list(tokens + [f"<unused{i}>" for i in range(pad)])
    writer.add_token_types([int(t) for t in meta["tokenizer.ggml.token_type"]] + [UNUSED] * pad)
    writer.add_token_merges(list(meta["tokenizer.ggml.merges"]))
    for key, add in (("bos_token_id", writer.add_bos_token_id), ("eos_token_id", writer.add_eos_token_id)):
        if f"tokenizer.ggml.{key}" in meta:
            add(int(meta[f"tokenizer.ggml.{key}"]))
    writer.add_add_bos_token(bool(meta.get("tokenizer.ggml.add_bos_token", False)))


def write_file(path: Path, layers: int, seed: int = 0, tokenizer: Path | None = None) -> float:
    """The 8B-shaped file, streamed to `path`; returns the seconds it took. `tokenizer`: a GGUF whose byte-level BPE the
    file takes (add_tokenizer); None: one token per byte."""
    import gguf

    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    pool = quantize_q4_k(rng.standard_normal((POOL_BLOCKS, QK_K), dtype=np.float32) * np.float32(STD))
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("bench-8b-shaped")
    writer.add_context_length(8192)
    writer.add_embedding_length(D)
    writer.add_feed_forward_length(FF)
    writer.add_block_count(layers)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(500000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(VOCAB)
    add_tokenizer(writer, tokenizer)
    every = tensors(layers)
    for name, shape, kind in every:
        if kind == "F32":
            writer.add_tensor_info(name, shape, np.dtype(np.float32), 4 * shape[0])
        else:
            rows, cols = shape
            writer.add_tensor_info(name, (rows, cols // QK_K * Q4_K_BYTES), np.dtype(np.uint8), rows * cols // QK_K * Q4_K_BYTES,
                                   raw_dtype=gguf.GGMLQuantizationType.Q4_K)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    out = writer.fout[0]
    for name, shape, kind in every:  # what writer.write_tensor_data does, a slice of rows at a time
        writer.write_padding(out, out.tell())
        if kind == "F32":
            (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32).tofile(out)
            nbytes = 4 * shape[0]
        else:
            rows, cols = shape
            for r in range(0, rows, WRITE_ROWS):
                pool[rng.integers(0, POOL_BLOCKS, min(WRITE_ROWS, rows - r) * cols // QK_K)].tofile(out)
            nbytes = rows * cols // QK_K * Q4_K_BYTES
        writer.write_padding(out, nbytes)
    writer.close()
    return time.perf_counter() - start


# --- a process, its memory sampled ------------------------------------------------------------------


STATUS_KEYS = ("RssAnon", "RssFile", "VmHWM")


def sampled(cmd: list, env: dict | None = None) -> dict:
    """Run `cmd`; its wall time, peak RssAnon / RssFile / VmHWM in MiB (sampled every 2 ms from /proc), stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=None if env is None else os.environ | env)
    peak = dict.fromkeys(STATUS_KEYS, 0)

    def watch():
        status = f"/proc/{proc.pid}/status"
        while proc.poll() is None:
            try:
                text = open(status).read()
            except OSError:
                break
            for key in STATUS_KEYS:
                m = re.search(rf"^{key}:\s+(\d+) kB", text, re.M)
                if m:
                    peak[key] = max(peak[key], int(m.group(1)))
            time.sleep(SAMPLE_SECONDS)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    watcher.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))[:300]} failed ({proc.returncode}): {err.decode()[-800:]}")
    return {"seconds": seconds, **{k: v / 1024 for k, v in peak.items()}, "stdout": out}


PER_LAYER = """
import json, sys, time
from attn_cli.models.loading import load
model = load(sys.argv[1])
out = {}
for n in (16, 512):
    tokens = model.tokenize(sys.argv[2][:n])
    assert len(tokens.ids) == n, len(tokens.ids)
    model.weights.passes = 0  # each n as a first sentence: every layer dequantized as the pass reaches it
    model.weights._arrays = {k: v for k, v in model.weights._arrays.items() if not k.startswith("layers.")}
    start = time.perf_counter(); model.forward(tokens); total = time.perf_counter() - start
    start = time.perf_counter()
    for l in range(model.n_layers):
        model.weights.layer(l); model.weights.release(l)
    dequantize = time.perf_counter() - start
    out[n] = {"pass": total / model.n_layers, "dequantize": dequantize / model.n_layers}
print(json.dumps(out))
"""


# --- dequantization throughput ------------------------------------------------------------------------


F16_FIELDS = {"Q4_0": (0,), "Q8_0": (0,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}


def random_blocks(rng, dtype: str, rows: int, cols: int) -> np.ndarray:  # -> [rows, bytes] uint8, scales in 1e-4 .. 1e-2
    from attn_cli.models.sources.quants import DECODERS

    _, per_block, block_bytes, _ = DECODERS[dtype]
    raw = rng.integers(0, 256, (rows, cols // per_block * block_bytes), dtype=np.uint8)
    blocks = raw.reshape(-1, block_bytes)
    for offset in F16_FIELDS[dtype]:
        blocks[:, offset : offset + 2] = rng.uniform(1e-4, 1e-2, len(blocks)).astype(np.float16).view(np.uint8).reshape(-1, 2)
    return raw


def quants_compiled():
    from attn_cli.models.sources import quants

    return quants.COMPILED


def throughput(cases: dict, rounds: int) -> list[tuple]:
    """(label, GB/s attn into reused memory, GB/s attn into new memory, GB/s gguf.quants, the two ratios) per case, best of
    `rounds` interleaved rounds, the values checked equal. A forward pass dequantizes each layer into the arrays of the
    layer before it (Weights.read's `into`), so the first figure is attn's own case; gguf.quants.dequantize always
    allocates its result (and its temporaries), so the second is given beside it: the same work, into new pages."""
    from gguf import GGMLQuantizationType, quants as theirs

    from attn_cli.models.sources import quants as ours

    best = {label: [np.inf, np.inf, np.inf] for label in cases}
    for _ in range(rounds):
        for label, (blocks, dtype) in cases.items():
            reused = ours.dequantize(blocks, dtype)  # touched once: the layer before's arrays
            for side in (0, 1, 2):
                start = time.perf_counter()
                if side == 0:
                    got = ours.dequantize(blocks, dtype, reused)
                elif side == 1:
                    got = ours.dequantize(blocks, dtype)
                else:
                    got = theirs.dequantize(blocks, GGMLQuantizationType[dtype])
                best[label][side] = min(best[label][side], time.perf_counter() - start)
                np.testing.assert_array_max_ulp(reused, got, maxulp=0)
                del got
            del reused
    rows = []
    for label, (blocks, dtype) in cases.items():
        gb = blocks.shape[0] * blocks.shape[1] // ours.DECODERS[dtype][2] * ours.DECODERS[dtype][1] * 4 / 1e9
        into, new, g = best[label]
        rows.append((label, gb / into, gb / new, gb / g, g / into, g / new))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write the file here (kept), rather than into a temporary folder")
    parser.add_argument("--runs", type=int, default=3, help="runs of each command (the smallest peak and time are printed)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of each dequantization")
    parser.add_argument("--skip", nargs="*", default=[], choices=["memory", "layers", "dequantize"])
    parser.add_argument("--numpy", action="store_true", help="time attn's NumPy decoder alone, as where its C module was not built")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attn-bench-big-") as scratch:
        path = args.out or Path(scratch) / f"bench-8b-shaped-{args.layers}L.Q4_K.gguf"
        if args.out and args.out.exists():
            print(f"using {path} as it is ({path.stat().st_size / 2**20:,.0f} MiB)")
        else:
            seconds = write_file(path, args.layers)
            print(f"wrote {path}: {path.stat().st_size / 2**20:,.0f} MiB, {args.layers} layers, in {seconds:.1f} s")
        from attn_cli.models.sources.gguf_file import read_file

        layers_in_file = read_file(path).metadata["llama.block_count"]
        layer_f32 = 4 * (D * (HEADS + 2 * KV_HEADS) * D_HEAD + HEADS * D_HEAD * D + 3 * D * FF + 2 * D) / 2**20
        print(f"Llama-3-8B shapes: d {D}, FFN {FF}, {HEADS} q heads / {KV_HEADS} kv heads, vocabulary {VOCAB:,} (untied), "
              f"{layers_in_file} layers; one layer's weights as float32: {layer_f32:,.0f} MiB ({layer_f32 * 2**20 / 1e6:,.0f} MB) -> "
              f"target peak RssAnon <= {layer_f32 + 400:,.0f} MiB")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared: other work runs beside this)")
        attn = [sys.executable, "-m", "attn_cli"]
        if "memory" not in args.skip:
            print(f"\ncommands, new processes (best of {args.runs}); peaks sampled every {SAMPLE_SECONDS * 1000:.0f} ms from /proc/PID/status")
            for n in (16, 512):
                text = TEXT[:n]
                for label, cmd in ((f"attn predict --json", [*attn, "predict", text, "--model", path, "--json"]),
                                   (f"attn inspect --layer 1 --json", [*attn, "inspect", text, "--model", path, "--layer", "1", "--json"])):
                    runs = [sampled(cmd) for _ in range(args.runs)]
                    best = min(runs, key=lambda r: r["RssAnon"])
                    seconds = min(r["seconds"] for r in runs)
                    verdict = "ok" if best["RssAnon"] <= layer_f32 + 400 else "OVER"
                    extra = ""
                    if "predict" in label:
                        extra = f"  predicts {json.loads(best['stdout'])['predictions'][0]['token']!r}"
                    print(f"  n = {n:>3}  {label:<30} {seconds:6.1f} s   peak RssAnon {best['RssAnon']:7.0f} MiB ({verdict})   "
                          f"file mapped and resident at most {best['RssFile']:6.0f} MiB   VmHWM {best['VmHWM']:6.0f} MiB{extra}")
        if "layers" not in args.skip:
            timed = json.loads(subprocess.run([sys.executable, "-c", PER_LAYER, str(path), TEXT], capture_output=True, text=True,
                                              check=True).stdout)
            print("\nseconds per layer of a first forward pass (each layer dequantized as it is reached), one process:")
            for n, t in timed.items():
                print(f"  n = {n:>3}: {t['pass']:6.2f} s per layer, of which dequantizing the layer alone takes {t['dequantize']:5.2f} s")
        if "dequantize" not in args.skip:
            rng = np.random.default_rng(1)
            cases = {f"{dtype} random [4096, 14336]": (random_blocks(rng, dtype, D, FF), dtype) for dtype in ("Q4_K", "Q5_K", "Q6_K", "Q8_0", "Q4_0")}
            from attn_cli.models.sources.gguf_file import read_file

            file = read_file(path)
            info = file.tensors["blk.0.ffn_up.weight"]
            cases["Q4_K this file's blk.0.ffn_up"] = (file.raw(info).reshape(info.dims[1], -1), "Q4_K")
            if args.numpy:
                from attn_cli.models.sources import quants

                quants.COMPILED = None
            print(f"\ndequantization ({'NumPy' if args.numpy or quants_compiled() is None else 'C'} decoder), GB/s of float32 written (best of {args.rounds} interleaved rounds; same values, 0 ULP); attn into the"
                  f" memory of the layer before, as a pass does, and into new memory, as gguf.quants.dequantize always writes:")
            for label, into, new, theirs, ratio, ratio_new in throughput(cases, args.rounds):
                print(f"  {label:<32} attn {into:5.2f} GB/s (new memory {new:5.2f})   gguf.quants.dequantize {theirs:5.2f} GB/s   "
                      f"gguf's time / attn's: {ratio:4.2f}x (new memory {ratio_new:4.2f}x)")


if __name__ == "__main__":
    main()
