"""Build the shipped heads `adjective` and `context`, and measure them, reproducibly.

    python data/heads/build_heads.py            # adjective.npz, context.npz, *.metrics.json, *.md, training samples
    python data/heads/build_heads.py --check    # rebuild in memory, compare with the shipped files

Training data: sentences from the grammar in sentences.py, over the words of pos_words.tsv
(hand-written) and lexicon.tsv (from lemminflect, see build_lexicon.py), with fixed seeds. A
seeded share of the words is held out of training altogether. The context head's value map is
also fitted on running text: the Lee background corpus, read from gensim's test data (see
corpus_sentences), where every gensim wheel ships it.

Measured on sets that are *not* the training distribution, all written by hand:
- eval/adjectives_natural.tsv, eval/adjectives_long.tsv, eval/adjectives_natural3.tsv (links: noun ->
  its own adjectives) and eval/senses_natural*.tsv with eval/sense_words*.tsv (ambiguous words in
  natural sentences): the held-out sets, never used to choose anything (the third of each was
  written blind after the heads were built);
- dev/adjectives.tsv, dev/senses.tsv, dev/sense_words.tsv: the development set, on which the
  choices made from data (the heads' shapes, the context head's beta, value scale and corpus-map share, and the
  training of its W_V) are made; its figures are reported apart.
Every figure stands beside the same figure for baselines (previous token, even attention, the
identity head, even attention over the content words), computed by attn_cli.evaluation, the
code behind `attn heads eval`.

The steps live in builder/, one module each, as attn_cli/heads is split: settings (every constant),
words, measures, adjective, context, value_map (the context head's trained W_V) and cards; this
script measures the built heads, writes them and checks a rebuild.
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))  # the repository: attn_cli
sys.path.insert(0, str(Path(__file__).resolve().parent))  # data/heads: sentences.py, builder/

from attn_cli.core.attention import Head  # noqa: E402
from builder.adjective import build_adjective  # noqa: E402
from builder.cards import ADJECTIVE_DESCRIPTION, CONTEXT_DESCRIPTION, adjective_card, adjective_summary, context_card, context_summary, head_meta  # noqa: E402
from builder.context import alone_figures, build_context, plain_value_map, start_value_map  # noqa: E402
from builder.measures import even_through_value_map, link_figures, long_links, sense_figures, sentence_links  # noqa: E402
from builder.settings import HERE, MASKS, SENSE_SETS, SETS  # noqa: E402


def value_map_references(adjective, context, start: Head, scale: float, sense_set, vectors) -> dict:
    """What each step of the value map adds, on one sense set: the same heads with W_V = s (I - m m^T)
    ("plain_value_map") and with W_V as its dev training starts ("start_value_map", see start_value_map),
    and even attention over the content words through the shipped W_V. {mask: {reference: figures}}"""
    out = {mask: {} for mask in MASKS}
    for mask, share in even_through_value_map(adjective, context, *sense_set, vectors).items():
        out[mask]["even_content_value_map"] = {"after": share}
    for name, head in (("plain_value_map", plain_value_map(context, scale, vectors)), ("start_value_map", start)):
        for mask, f in sense_figures([adjective, head], *sense_set, vectors).items():
            out[mask][name] = {k: f["heads"][k] for k in ("after", "mean_cos")}
    return out


def measure(adjective, context, data, vectors) -> dict:
    """Every shipped figure: the adjective head on the link sets, both heads on the sense sets."""
    adjective_metrics = {name: link_figures([adjective], SETS[name][0], vectors) for name in ("natural", "long", "natural3", "dev")}
    adjective_metrics["natural3_long"] = link_figures([adjective], long_links(SETS["natural3"][0]), vectors)
    adjective_metrics["unseen_words"] = link_figures([adjective], sentence_links(data["adjective"]["unseen"]), vectors)
    context_metrics = {name: sense_figures([adjective, context], *SETS[name], vectors) for name in SENSE_SETS}
    choice = data["context"]["value_choice"]
    start = start_value_map(context, choice, vectors)  # the corpus map is fitted once
    for name in SENSE_SETS:
        for mask, f in value_map_references(adjective, context, start, choice["scale"] * choice["boost"], SETS[name], vectors).items():
            context_metrics[name][mask].update(f)
        context_metrics[name]["alone"] = alone_figures(adjective, context, SETS[name][0], vectors)
    for key in ("value_choice", "value_training", "corpus"):
        context_metrics[key] = data["context"][key]
    return {"adjective": adjective_metrics, "context": context_metrics}


def write_links(path, sentences, header):
    rows = [f"{link.sentence}\t{link.query}\t{link.key}" for link in sentence_links(sentences)]
    path.write_text("\n".join([header, "sentence\tquery\tkey"] + rows) + "\n", encoding="utf-8")


def build_all(vectors):
    adjective, adj_data = build_adjective(vectors)
    context, ctx_data = build_context(vectors, adjective)
    data = {"adjective": adj_data, "context": ctx_data}
    metrics = measure(adjective, context, data, vectors)
    adj_meta = head_meta("adjective", ADJECTIVE_DESCRIPTION, metrics["adjective"], adjective_summary(metrics["adjective"]))
    ctx_meta = head_meta("context", CONTEXT_DESCRIPTION, metrics["context"], context_summary(metrics["context"]))
    return {"adjective": (adjective, adj_meta, adj_data), "context": (context, ctx_meta, ctx_data)}


CHECK_RTOL = 1e-9  # of the array's largest entry: BLAS kernels add in different orders (2.9e-13 seen between two), a real change is far larger


def check(built) -> bool:
    """Compare a rebuild with the shipped files, array by array: each within CHECK_RTOL of the shipped array's scale.

    Not bit for bit: the build multiplies and sums through BLAS, and OpenBLAS chooses its kernel by
    CPU (and OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS), so the last bits of a float64 may differ from
    one machine to the next, on the same code and data.
    """
    from attn_cli.heads.registry import load_head

    ok = True
    print(f"tolerance: max |rebuilt - shipped| <= {CHECK_RTOL:.0e} x max |shipped| per array")
    for name, (head, _, _) in built.items():
        shipped = load_head(HERE / f"{name}.npz", head.w_q.shape[0])
        for key in ("w_q", "w_k", "w_v", "b_q", "distance", "sink"):
            mine, theirs = getattr(head, key), getattr(shipped, key)
            if mine is None or theirs is None:
                print(f"{name} {key}: {'absent' if mine is None else 'present'} in the rebuild, {'absent' if theirs is None else 'present'} in the shipped file")
                ok &= mine is None and theirs is None
                continue
            mine, theirs = np.asarray(mine, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
            if mine.shape != theirs.shape:
                print(f"{name} {key}: shape {list(mine.shape)} rebuilt, {list(theirs.shape)} shipped")
                ok = False
                continue
            diff = float(np.max(np.abs(mine - theirs), initial=0.0))
            scale = float(np.max(np.abs(theirs), initial=0.0))
            within = diff <= CHECK_RTOL * scale
            print(f"{name} {key}: max |rebuilt - shipped| = {diff:.2e} ({diff / scale if scale else 0.0:.1e} of max |shipped| {scale:.3g}) "
                  f"{'ok' if within else 'DIFFERS'}")
            ok &= within
    print("the rebuild matches the shipped heads" if ok else "the rebuild differs from the shipped heads")
    return ok


def main():
    from attn_cli.heads.registry import save_head
    from attn_cli.vectors.loading import load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="rebuild in memory and compare with the shipped files")
    args = parser.parse_args()
    built = build_all(load())
    for name, (_, meta, _) in built.items():
        print(f"{name}: {meta['summary']}")
    if args.check:
        sys.exit(0 if check(built) else 1)
    write_links(HERE / "adjective_train.tsv", built["adjective"][2]["train"],
                "# the adjective head's training sentences (generated by build_heads.py; the format of `attn heads train`)")
    for name, (head, meta, _) in built.items():
        save_head(head, HERE / f"{name}.npz", meta)
        (HERE / f"{name}.metrics.json").write_text(json.dumps(meta["metrics"], indent=1) + "\n", encoding="utf-8")
    (HERE / "adjective.md").write_text(adjective_card(built["adjective"][1], built["adjective"][2]), encoding="utf-8")
    (HERE / "context.md").write_text(context_card(built["context"][1], built["context"][2]), encoding="utf-8")
    print("wrote", ", ".join(f"{name}.npz" for name in built))


if __name__ == "__main__":
    main()
