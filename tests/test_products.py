"""x W^T straight from a GGUF tensor's blocks (attn_cli.models.sources.products) against gguf.quants, llama.cpp's own
package: random blocks of every type the products read, dequantized by gguf.quants and multiplied in float64, through
both paths (the optional C products, _products.c, and the NumPy fallback that stands in for it).

Activations stay float32 and sums are float32 sums in another order than the reference's, so the tolerance is float32
rounding of a sum of k terms: 1e-5 of the sum of the terms' magnitudes (k = 512 values, float32's epsilon 6e-8)."""

import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attn_cli.models.sources import products
from attn_cli.models.sources.gguf_file import GGML_TYPES

BY_NAME = {name: (per_block, block_bytes) for name, per_block, block_bytes in GGML_TYPES.values()}
F16_FIELDS = {"Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,)}


def random_blocks(rng: np.random.Generator, dtype: str, rows: int, k: int) -> np.ndarray:  # -> [rows, row bytes] uint8
    """Random codes in every field; scales f16 values of magnitude 1e-3 to 1 (so that sums are of like terms)."""
    if dtype in ("F16", "BF16"):
        w = rng.standard_normal((rows, k)).astype(np.float32)
        return w.astype(np.float16).view(np.uint8) if dtype == "F16" else (w.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    per_block, block_bytes = BY_NAME[dtype]
    raw = rng.integers(0, 256, (rows, k // per_block * block_bytes), dtype=np.uint8)
    b = raw.reshape(-1, block_bytes)
    for offset in F16_FIELDS[dtype]:
        scales = (rng.choice([-1, 1], len(b)) * 10 ** rng.uniform(-3, 0, len(b))).astype(np.float16)
        b[:, offset : offset + 2] = scales.view(np.uint8).reshape(-1, 2)
    return raw


def dequantized(blocks: np.ndarray, dtype: str) -> np.ndarray:  # -> [rows, k] float64, by gguf.quants
    from gguf import GGMLQuantizationType, quants as theirs

    if dtype == "F16":
        return blocks.view(np.float16).astype(np.float64)
    if dtype == "BF16":
        return (blocks.view(np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return theirs.dequantize(blocks, GGMLQuantizationType[dtype]).astype(np.float64)


def check(got: np.ndarray, x: np.ndarray, w: np.ndarray) -> None:
    want = x.astype(np.float64) @ w.T
    bound = 1e-5 * (np.abs(x.astype(np.float64)) @ np.abs(w).T) + 1e-30
    worst = float((np.abs(got - want) / bound).max())
    assert worst <= 1.0, f"an error of {worst:.2f} times the bound"


@pytest.fixture(params=["compiled", "numpy"])
def path(request, monkeypatch):
    """Each test once through the C products (skipped where they were not built) and once through NumPy alone."""
    if request.param == "compiled" and products.COMPILED is None:
        pytest.skip("the C products were not built (no C compiler at install)")
    if request.param == "numpy":
        monkeypatch.setattr(products, "COMPILED", None)
    return request.param


def test_the_c_products_are_built_where_a_compiler_is():
    import shutil
    import sysconfig

    if not (shutil.which(sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc")):
        pytest.skip("no C compiler here")
    assert products.COMPILED is not None, "attn_cli/models/sources/_products.c was not built: pip install -e . again"
    assert "compiled" in products.kernel()


@pytest.mark.parametrize("dtype", sorted(products.TYPES))
@pytest.mark.parametrize("n", [1, 3, 17])
def test_a_product_from_blocks_is_the_dequantized_product(path, dtype, n):
    rng = np.random.default_rng(sum(map(ord, dtype)) + n)
    blocks = random_blocks(rng, dtype, 300, 512)
    x = rng.standard_normal((n, 512)).astype(np.float32)
    for threads in (1, 2):
        check(products.product(x, blocks, dtype, threads=threads), x, dequantized(blocks, dtype))


@pytest.mark.parametrize("dtype", ["Q4_1", "Q6_K", "Q8_0"])
def test_threads_split_rows_without_changing_a_value(dtype):
    """Each row is one thread's sum, whichever thread: 1, 2 and 5 threads give the same bits."""
    rng = np.random.default_rng(1)
    blocks, x = random_blocks(rng, dtype, 1000, 256), rng.standard_normal((2, 256)).astype(np.float32)
    one = products.product(x, blocks, dtype, threads=1)
    for threads in (2, 5):
        assert np.array_equal(products.product(x, blocks, dtype, threads=threads), one)


def test_parts_fill_their_columns_and_an_order_gathers_them(path):
    """Q, K and V as three parts of one weight, K's rows in the file's order: the product is the joined weight's."""
    rng = np.random.default_rng(2)
    parts = [random_blocks(rng, "Q4_K", 64, 256), random_blocks(rng, "Q6_K", 32, 256), random_blocks(rng, "Q8_0", 32, 256)]
    order = rng.permutation(32)
    w = products.Blocks([(parts[0], "Q4_K", None), (parts[1], "Q6_K", order), (parts[2], "Q8_0", None)])
    assert w.shape == (256, 128)
    x = rng.standard_normal((4, 256)).astype(np.float32)
    joined = np.concatenate([dequantized(parts[0], "Q4_K"), dequantized(parts[1], "Q6_K")[order], dequantized(parts[2], "Q8_0")])
    check(w.product(x, threads=2), x, joined)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(products.TYPES)), st.integers(1, 70), st.integers(1, 3), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_any_shape(dtype, rows, blocks_per_row, n, seed):
    rng = np.random.default_rng(seed)
    per_block = BY_NAME[dtype][0] if dtype not in ("F16", "BF16") else 256
    blocks = random_blocks(rng, dtype, rows, blocks_per_row * per_block)
    x = rng.standard_normal((n, blocks_per_row * per_block)).astype(np.float32)
    check(products.product(x, blocks, dtype, threads=1 + seed % 3), x, dequantized(blocks, dtype))


def test_mismatched_shapes_are_refused():
    if products.COMPILED is None:
        pytest.skip("the C products were not built")
    blocks = np.zeros((4, 20), np.uint8)  # 4 rows of one Q4_1 block: 32 values
    with pytest.raises(ValueError):
        products.COMPILED.product([("Q4_1", blocks, 4, 0, None)], np.zeros((1, 31), np.float32), np.zeros((1, 4), np.float32), 1)
    with pytest.raises(ValueError):
        products.COMPILED.product([("Q4_1", blocks, 4, 0, None)], np.zeros((1, 32), np.float32), np.zeros((1, 3), np.float32), 1)
    with pytest.raises(ValueError):
        products.COMPILED.product([("Q2_K", blocks, 4, 0, None)], np.zeros((1, 32), np.float32), np.zeros((1, 4), np.float32), 1)
    with pytest.raises(ValueError):  # an order that writes outside the part's columns
        products.COMPILED.product([("Q4_1", blocks, 4, 0, np.array([0, 1, 2, 4], np.int32))], np.zeros((1, 32), np.float32), np.zeros((1, 4), np.float32), 1)
    with pytest.raises(ValueError):  # parts of rows of other lengths
        products.COMPILED.product([("Q4_1", blocks, 4, 0, None), ("Q4_1", np.zeros((2, 40), np.uint8), 2, 4, None)], np.zeros((1, 32), np.float32),
                                  np.zeros((1, 6), np.float32), 1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_runs_products_on_threads_of_its_own():
    """The pool's workers are threads of the parent: a child (multiprocessing's fork) starts its own."""
    rng = np.random.default_rng(3)
    blocks, x = random_blocks(rng, "Q4_0", 512, 64), rng.standard_normal((1, 64)).astype(np.float32)
    want = products.product(x, blocks, "Q4_0", threads=2)
    child = os.fork()
    if child == 0:
        ok = np.array_equal(products.product(x, blocks, "Q4_0", threads=2), want)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_many_calls_in_a_row_on_threads_give_each_its_own_rows():
    """Calls of every size, one after another as a generation makes them (some too small to wake the pool): a worker that
    wakes late must claim nothing of a call that has ended, nor of the next."""
    rng = np.random.default_rng(4)
    cases = [(random_blocks(rng, "Q8_0", rows, 64), rng.standard_normal((1, 64)).astype(np.float32)) for rows in (8, 64, 65, 300, 1000)]
    want = [products.product(x, b, "Q8_0", threads=1) for b, x in cases]
    for i in range(1500):
        j = (i * 7) % len(cases)
        assert np.array_equal(products.product(cases[j][1], cases[j][0], "Q8_0", threads=2 + i % 2), want[j])


def test_products_from_several_python_threads_at_once_are_each_right():
    """The pool serves one caller at a time; another (a Dask worker thread, a prefetch) runs its product alone meanwhile."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(5)
    blocks, xs = random_blocks(rng, "Q4_K", 700, 256), [rng.standard_normal((1, 256)).astype(np.float32) for _ in range(8)]
    want = [products.product(x, blocks, "Q4_K", threads=1) for x in xs]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: [products.product(xs[i % 8], blocks, "Q4_K", threads=2) for _ in range(50)], range(16)))
    for i, runs in enumerate(got):
        for run in runs:
            assert np.array_equal(run, want[i % 8])
