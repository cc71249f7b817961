"""Nearest-neighbour search: attn's NumPy 3CosAdd/3CosMul against gensim's on the same vectors.

Run by hand: python tests/benchmarks/bench_neighbors.py
Prints milliseconds per query and the ratio to a floor measured in the same run: one
matrix-vector product over the unit vectors, the least any exhaustive search must do.
"""

import time
import warnings

import numpy as np

from attn_cli.lesson import directions as nb
from attn_cli.vectors.loading import load

QUERY = dict(positive=["cats", "dog"], negative=["cat"])


def per_call_ms(fn, repeat: int = 30) -> float:
    fn()  # warm caches (unit vectors, gensim norms)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best * 1000


def main() -> None:
    from gensim.models import KeyedVectors

    warnings.simplefilter("ignore", DeprecationWarning)  # gensim's init_sims in most_similar_cosmul
    vectors = load()
    kv = KeyedVectors(vector_size=vectors.vector_size)
    kv.add_vectors(vectors.index_to_key, np.asarray(vectors.vectors))
    q = np.ones(vectors.vector_size, dtype=np.float32)

    floor = per_call_ms(lambda: vectors.unit @ q)
    rows = {
        "floor: unit @ q": floor,
        "attn 3CosAdd": per_call_ms(lambda: nb.most_similar(vectors, topn=10, **QUERY)),
        "gensim most_similar": per_call_ms(lambda: kv.most_similar(topn=10, **QUERY)),
        "attn 3CosMul": per_call_ms(lambda: nb.most_similar_cosmul(vectors, topn=10, **QUERY)),
        "gensim most_similar_cosmul": per_call_ms(lambda: kv.most_similar_cosmul(topn=10, **QUERY)),
    }
    print(f"{len(vectors):,} keys x {vectors.vector_size}")
    for name, ms in rows.items():
        print(f"{name:28} {ms:8.2f} ms   {ms / floor:5.1f} x floor")


if __name__ == "__main__":
    main()
