"""`attn heads stats` and attn_cli.api: per-head figures against a plain loop, partials that merge exactly whatever the
split, every output (table, grid, CSV, JSON, Parquet), failed lines, and the documented Dask run on two worker processes."""

import json
import re
import sys
from functools import cache

import numpy as np
import pytest

from attn_cli import api
from attn_cli.analysis import detect
from tests import checkpoints, docs

SENTENCES = [
    "The old fisherman mended his nets on a quiet grey morning.",
    "A small dog chased the red ball across the wet garden.",
    "She said that the train to the city was late again.",
    "Thunder rolled over the hills and the rain began to fall.",
    "We planted tomatoes, beans and sunflowers in the spring.",
    "The teacher read the story aloud and the children listened.",
]


@cache
def minilm():
    return api.load_model(str(checkpoints.minilm_folder()))


def loop_figures(model, sentences: list[str]) -> dict:
    """Each head's means, query by query and key by key, in float64."""
    sums = {k: np.zeros((model.n_layers, model.n_heads)) for k in ("entropy", "distance", "first", "special", "self", "previous")}
    detected = {k: np.zeros((model.n_layers, model.n_heads)) for k in detect.PATTERNS}
    with_pattern = dict.fromkeys(detect.PATTERNS, 0)
    queries = later = 0
    for text in sentences:
        tokens = model.tokenize(text)
        n = len(tokens.ids)
        queries, later = queries + n, later + n - 1
        for l, weights in enumerate(model.forward(tokens).stacked("attn.pattern")):
            for h in range(model.n_heads):
                a = weights[h].astype(np.float64)
                for i in range(n):
                    sums["entropy"][l, h] -= sum(w * np.log(w) for w in a[i] if w > 0)
                    sums["distance"][l, h] += sum(a[i, j] * abs(i - j) for j in range(n))
                    sums["special"][l, h] += sum(a[i, j] for j in range(n) if tokens.special[j])
                    sums["self"][l, h] += a[i, i]
                    if i:
                        sums["first"][l, h] += a[i, 0]
                        sums["previous"][l, h] += a[i, i - 1]
        for name in detect.PATTERNS:
            pattern = detect.targets(name, tokens.ids, tokens.special)
            if pattern.any():
                with_pattern[name] += 1
                weights = model.forward(tokens).stacked("attn.pattern").astype(np.float64)
                detected[name] += (weights * pattern).sum(axis=(-2, -1)) / weights.sum(axis=(-2, -1))
    out = {k: v / (later if k in ("first", "previous") else queries) for k, v in sums.items()}
    out.update({f"detect_{k}": v / with_pattern[k] for k, v in detected.items() if with_pattern[k]})
    return out


def test_the_figures_of_every_head_match_a_plain_loop():
    model = minilm()
    stats = api.figures(api.head_stats(model, SENTENCES[:3]))
    want = loop_figures(model, SENTENCES[:3])
    for name, grid in want.items():
        assert np.allclose(stats.grid(name), grid, rtol=1e-9, atol=1e-9), name
    assert stats.sentences == 3 and stats.queries == sum(len(model.tokenize(s).ids) for s in SENTENCES[:3])
    assert stats.detect_sentences["duplicate"] == 2  # "the" twice in two of the three


def test_partials_merge_to_the_very_same_sums_whatever_the_split():
    model = minilm()
    whole = api.head_stats(model, SENTENCES)
    for split in ([2, 4], [1, 3, 5], [5]):
        parts = [api.head_stats(model, SENTENCES[a:b]) for a, b in zip([0, *split], [*split, len(SENTENCES)])]
        merged = api.merge(reversed(parts))
        for name in whole.sums:
            assert (merged.sums[name] == whole.sums[name]).all()
        assert api.figures(merged).to_dict() == api.figures(whole).to_dict()


def test_partials_of_different_models_or_options_do_not_merge():
    model = minilm()
    with pytest.raises(Exception, match="cannot merge"):
        api.merge([api.head_stats(model, SENTENCES[:1]), api.head_stats(model, SENTENCES[:1], error="abs")])


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes("\n".join(SENTENCES[:3]).encode() + b"\n\n\xff\xfe broken\n" + SENTENCES[3].encode() + b"\n")
    return path


def test_heads_stats_reports_failed_and_blank_lines_and_gives_the_others_figures(run, corpus):
    done = run("heads", "stats", corpus, "--model", checkpoints.minilm_folder(), "--json")
    assert done.exit_code == 2
    assert done.stderr.splitlines() == ["attn: line 5: not UTF-8 text: byte 0xff at byte offset 0", "attn: skipped 1 blank line",
                                        "attn: 1 of 5 lines failed"]
    doc = json.loads(done.stdout)
    assert (doc["sentences"], doc["failed"], doc["blank"]) == (4, 1, 1) and len(doc["heads"]) == 72
    assert doc == api.figures(api.head_stats(minilm(), SENTENCES[:4])).to_dict() | {"failed": 1, "blank": 1}


def test_heads_stats_reads_stdin_and_writes_every_format(run):
    text = "\n".join(SENTENCES[:2]) + "\n"
    args = ("heads", "stats", "-", "--model", checkpoints.minilm_folder())
    table = run(*args, input=text)
    assert table.exit_code == 0 and "over 2 sentences" in table.stdout and "even (baseline)" in table.stdout
    assert "head detector scores (mul)" in table.stdout
    grid = run(*args, "--grid", "previous", input=text).stdout
    assert "layer↓ head→" in grid and "previous: mean weight on the token before" in grid
    rows = run(*args, "--csv", input=text).stdout.splitlines()
    assert rows[0].startswith("layer,head,baseline,entropy,distance,first,special,self,previous,detect_previous") and len(rows) == 1 + 72 + 1
    assert rows[-1].startswith(",,even,")
    doc = json.loads(run(*args, "--json", input=text).stdout)
    assert doc["heads"][2]["previous"] > 0.9  # 0.2, MiniLM's previous-token head


def test_parquet_holds_the_rows_unrounded(run, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "heads.parquet"
    done = run("heads", "stats", "-", "--model", checkpoints.minilm_folder(), "--parquet", out, "--csv", input=SENTENCES[0] + "\n")
    assert done.exit_code == 0
    table = pq.read_table(out).to_pylist()
    stats = api.figures(api.head_stats(minilm(), SENTENCES[:1]))
    assert table == list(stats.rows_for_files()) and len(table) == 73
    again = run("heads", "stats", "-", "--model", checkpoints.minilm_folder(), "--parquet", out, input=SENTENCES[0] + "\n")
    assert again.exit_code == 2 and "exists; pass --force" in again.stderr and again.stdout == ""


def test_parquet_without_pyarrow_is_a_clear_error(run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    done = run("heads", "stats", "-", "--model", checkpoints.minilm_folder(), "--parquet", tmp_path / "x.parquet", input="a b\n")
    assert done.exit_code == 2 and done.stdout == "" and done.stderr.startswith("attn: --parquet needs pyarrow, which is not installed")


@pytest.mark.parametrize("args, message", [
    (("{corpus}",), "heads stats needs --model"),
    (("{corpus}", "--model", "{minilm}", "--grid", "first", "--json"), "--grid draws the terminal view"),
    (("{missing}", "--model", "{minilm}"), "no such file"),
])
def test_bad_usage_is_one_line(run, corpus, tmp_path, args, message):
    args = [a.format(corpus=corpus, minilm=checkpoints.minilm_folder(), missing=tmp_path / "nope.txt") for a in args]
    done = run("heads", "stats", *args)
    assert done.exit_code == 2 and done.stdout == "" and message in done.stderr and done.stderr.count("\n") == 1


def documented_dask_example() -> str:
    """The Python block of docs/heads-stats.md that runs heads stats on a Dask bag."""
    page = (docs.DOCS / "heads-stats.md").read_text(encoding="utf-8")
    return re.search(r"<!-- tested by tests/test_stats.py -->\s*```python\n(.*?)```", page, re.S)[1]


@pytest.mark.slow
def test_the_documented_dask_run_on_two_worker_processes_gives_the_commands_figures(run, tmp_path):
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client, LocalCluster

    paths = [tmp_path / "part-1.txt", tmp_path / "part-2.txt"]
    paths[0].write_text("\n".join(SENTENCES[:4]) + "\n\n", encoding="utf-8")
    paths[1].write_text("\n".join(SENTENCES[4:]) + "\n", encoding="utf-8")
    example: dict = {"__name__": "__main__"}  # defined here, sent to the workers by value
    exec(documented_dask_example(), example)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster):
        stats = example["heads_stats_on_dask"]([str(p) for p in paths], str(checkpoints.minilm_folder()))
        workers = len(cluster.workers)
    assert workers == 2
    command = run("heads", "stats", "-", "--model", checkpoints.minilm_folder(), "--json", input="".join(p.read_text() for p in paths))
    assert command.exit_code == 0 and stats.to_dict() == json.loads(command.stdout)  # the same figures, exactly


def test_sort_orders_the_heads_by_a_figure_and_top_cuts_the_tables(run, tmp_path):
    """--sort FIGURE: the heads largest first in the tables, JSON (sorted_by) and CSV; --top N: the terminal's first N;
    a figure that is not one: one line naming the choices, exit 2."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\nthe dog ran to the door\n", encoding="utf-8")
    args = ("heads", "stats", corpus, "--model", checkpoints.tiny_gpt2_folder())
    plain = json.loads(run(*args, "--json").stdout)
    doc = json.loads(run(*args, "--json", "--sort", "self", "--top", "2").stdout)
    assert plain["sorted_by"] is None and doc["sorted_by"] == "self" and len(doc["heads"]) == len(plain["heads"]) == 8
    assert [h["self"] for h in doc["heads"]] == sorted((h["self"] for h in plain["heads"]), reverse=True)
    assert sorted(doc["heads"], key=lambda h: (h["layer"], h["head"])) == plain["heads"]
    rows = run(*args, "--csv", "--sort", "self").stdout.splitlines()[1:]
    assert [tuple(r.split(",")[:2]) for r in rows[:-1]] == [(str(h["layer"]), str(h["head"])) for h in doc["heads"]]
    table = run(*args, "--sort", "self", "--top", "2", env={"COLUMNS": "100", "NO_COLOR": "1"}).stdout
    listed = [line.split()[0] for line in table.splitlines() if re.match(r"\s+\d+\.\d+\s", line)]
    best = [f"{h['layer']}.{h['head']}" for h in doc["heads"][:2]]
    assert listed == best * 2 and "self ↓" in table and "6 more heads not shown (8 in all)" in table
    bad = run(*args, "--sort", "selfish")
    assert bad.exit_code == 2 and bad.stdout == ""
    said = [line for line in bad.stderr.splitlines() if line.startswith("attn: ")]
    assert len(said) == 1 and "'selfish' is not one of 'entropy', 'distance'" in said[0] and "'detect_self'" in said[0]
    both = run(*args, "--grid", "self", "--sort", "self")
    assert both.exit_code == 2 and both.stderr.splitlines()[-1].startswith("attn: --grid draws every head in its place")
