"""Every command fuzzed through the real entry point: generated argv, options and stdin.

Arguments mix real words with arbitrary Unicode, control characters, bytes that are not UTF-8
(as Python hands them over: lone surrogates), huge and tiny numbers, empty strings, repeated
and unknown options and values of the wrong type; stdin is arbitrary bytes or lines of text.
The oracle (tests/oracle.py): exit 0, 1 or 2; no traceback, warning or internal error; every
stderr line an `attn: ...` message, the last one when the command failed; stdout valid UTF-8
without ANSI codes; --json / --jsonl output that parses; softmax equal to an exact decimal
reference. Files are written only inside a scratch folder.

Bounded: ATTN_FUZZ_EXAMPLES cases per test (default 20, the same cases every run). The long run (`pytest -m slow`: 250)
draws new cases each time and can write its counts:

    ATTN_FUZZ_EXAMPLES=1000 ATTN_FUZZ_REPORT=fuzz.json python -m pytest tests/test_fuzz.py -p no:warnings -q
"""

import csv
import io
import json
import math
import os
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from attn_cli.vectors import fast as fast_format
from attn_cli.io.files import printable
from attn_cli.vectors.loading import load
from attn_cli.vectors.store import Vectors
from tests import checkpoints
from tests.oracle import agrees, attn, check, softmax_reference
from tests.test_hostile_models import change_tensors, copy_model, edit_config, float32_of, read_tensors

EXAMPLES = int(os.environ.get("ATTN_FUZZ_EXAMPLES", "20"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, derandomize="ATTN_FUZZ_EXAMPLES" not in os.environ, database=None,
    suppress_health_check=list(HealthCheck),
)
CASES: dict[str, Counter] = {}  # command -> {"cases": n, "exit 0": n, ...}, reported by the long run
VOCABULARY = 3000  # the fuzz vectors: GloVe's most frequent keys, so that views and searches stay fast
ODD_KEYS = ["[/x]", "[red]hi", ":smile:", "\x1b[31mred", "\x1b]0;title\x07", "\x9b31mred", "\u202eevil", "caf\u00e9", "🙂",
            "=1+1", "@SUM(A1)", "+cmd", "-lrb-"]  # keys a file may hold: markup, escapes (C0 and C1), formulas

def bf16_weights(folder: Path) -> None:
    exact = float32_of(folder, "wte.weight").view(np.uint32) >> 16
    change_tensors(folder, wte__weight=("BF16", exact.astype("<u2").tobytes()))


HOSTILE_MODELS = {  # copies of the tiny GPT-2, damaged, in the scratch folder: --model values
    "model-bf16": bf16_weights,
    "model-f8": lambda m: change_tensors(m, h__0__ln_1__bias=("F8_E5M2", bytes(range(0x30, 0x70)))),
    "model-overflow": lambda m: change_tensors(m, h__0__attn__c_attn__weight=np.full((64, 192), 1e20, np.float32)),
    "model-surrogate": lambda m: edit_config(m, _name_or_path="\udc80x"),
    "model-list-type": lambda m: edit_config(m, model_type=["gpt2"]),
    "model-one-layer": lambda m: edit_config(m, n_layer=1),
}
SPECIAL = [
    "", " ", "-", "\t", "nan", "NaN", "inf", "-inf", "+Infinity", "1e308", "-1e308", "1e309", "-1e999", "5e-324", "0",
    "-0", "1", "-1", "2.5", "1,2", "1,,2", ",", "1, 2", "0x10", "1_000", "\u0663", "abc", "[/x]", "[red]hi[/red]",
    ":smile:", "\x1b[31mred", "\x1b]0;title\x07", "\x00", "\x7f", "caf\udce9", "\udcff\udcfe", "\u202eevil", "\u200b",
    "\ufeffthe", "the cat sat", "A fluffy blue creature roamed the verdant forest.", "x" * 3000, "the " * 600,
    "\u00e9" * 50, "日本語", "🙂", "--json", "-h", "--bogus", "-x", "0.1", "-5", "99999999999999999999",
]  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    if os.environ.get("ATTN_FUZZ_REPORT"):
        counts = {name: dict(sorted(c.items())) for name, c in sorted(CASES.items())}
        Path(os.environ["ATTN_FUZZ_REPORT"]).write_text(json.dumps(counts, indent=2) + "\n")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A folder to run in, holding small vectors, corrupt files and TSV files to hand to commands."""
    folder = tmp_path_factory.mktemp("fuzz")
    glove = load()
    keys = glove.index_to_key[:VOCABULARY] + ODD_KEYS
    rng = np.random.default_rng(0)
    matrix = np.vstack([np.asarray(glove.vectors[:VOCABULARY]), rng.normal(size=(len(ODD_KEYS), 50))]).astype(np.float32)
    fast_format.write_fast(Vectors(keys, matrix), folder / "small")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "garbage.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "lying.txt").write_text("3 2\n" + "".join(f"w{i} 1 2\n" for i in range(6)))
    (folder / "nan.txt").write_text("2 2\ncat nan 1\ndog 1 1\n")
    (folder / "links.tsv").write_text("the small cat sat\tcat\tsmall\na red car\tcar\tred\n")
    (folder / "cases.tsv").write_text("one mole of carbon\tmole\tchemistry\tbefore\n")
    (folder / "latin1.tsv").write_bytes("caf\xe9\tcaf\xe9\tthe\n".encode("latin-1"))
    (folder / "probes.txt").write_text("dog dogs\n# a comment\none two\n")
    (folder / "head.npz").write_bytes(b"PK\x03\x04 not really a zip")
    (folder / "existing.svg").write_text("mine\n")
    (folder / "out-existing.npz").write_text("mine\n")
    rng = np.random.default_rng(1)
    meta = json.dumps({"name": "odd", "description": "a lone \ud800 from a file"})
    np.savez(folder / "odd.npz", w_q=rng.normal(size=(50, 4)), w_k=rng.normal(size=(50, 4)), w_v=np.eye(50), meta=np.array(meta))
    for name, damage in HOSTILE_MODELS.items():
        damage(copy_model(checkpoints.tiny_gpt2_folder(), folder / name))
    return folder


@pytest.fixture(autouse=True)
def in_scratch(scratch, monkeypatch):
    monkeypatch.chdir(scratch)  # relative paths a case writes land in the scratch folder
    monkeypatch.delenv("ATTN_VECTORS", raising=False)


# --- what the cases are made of ---------------------------------------------------------------


def mostly(good, bad):
    """Usually `good`, sometimes `bad`: most cases get past the parser and reach the work."""
    return st.one_of(good, good, good, good, good, bad)


words = st.sampled_from(load().index_to_key[:VOCABULARY] + ODD_KEYS)
surrogates = st.text(st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF), min_size=1, max_size=3)  # bytes that were not UTF-8
nasty = st.one_of(st.sampled_from(SPECIAL), st.text(max_size=20), surrogates, st.text(st.characters(max_codepoint=0x1F), max_size=5))
text = mostly(words, nasty)
sentence = mostly(st.lists(text, min_size=1, max_size=12).map(" ".join), nasty)
integer = mostly(st.integers(0, 12).map(str), st.sampled_from(["-1", "99999999999", "1e3", "abc", "", "513", "100000", "101"]))
number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-(10**400), 10**400).map(str), st.sampled_from(SPECIAL)
)
stdin_bytes = st.one_of(
    st.lists(sentence, max_size=6).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogateescape")),
    st.lists(st.one_of(words.map(str.encode), st.binary(max_size=8)), max_size=20).map(b" ".join),
    st.binary(max_size=300),
)
JUNK = st.one_of(st.sampled_from(["--bogus", "-q", "--json=1", "--", "-", "--help"]), nasty)


def argv(command: list[str], flags: list[str], valued: dict, extra, *, required=(), max_items: int = 5):
    """argv for `command`: its `required` positional arguments, then flags, options with generated values
    and `extra` positional arguments in any order, possibly repeated; now and then junk (an unknown
    option, an argument too many)."""
    items = [st.sampled_from(flags).map(lambda f: [f])] if flags else []
    items += [st.tuples(st.just(name), values).map(list) for name, values in valued.items()]
    items.append(extra.map(lambda p: [p]))
    optional = st.lists(st.one_of(items), max_size=max_items).map(lambda parts: [a for part in parts for a in part])
    junk = st.lists(JUNK, max_size=1)
    return st.tuples(st.tuples(*required) if required else st.just(()), optional, mostly(st.just([]), junk)).map(
        lambda t: [*command, *t[0], *t[1], *t[2]]
    )


def run_case(name: str, args: list[str], stdin: bytes = b"", env: dict | None = None):
    args = [a.replace("\x00", "") for a in args]  # a process's arguments are C strings: they cannot hold a NUL
    outcome = attn(*args, stdin=stdin, env=env)
    counts = CASES.setdefault(name, Counter())
    counts["cases"] += 1
    counts[f"exit {outcome.code}"] += 1
    if os.environ.get("ATTN_FUZZ_WHY") and outcome.code:
        counts["why: " + outcome.stderr.strip().split("\n")[-1][:50]] += 1
    return check(outcome)


# --- the lesson's commands --------------------------------------------------------------------


@FUZZ
@given(argv(["softmax"], ["--log", "--json", "--csv", "--tsv", "--spreadsheet"], {"-t": number, "--temperature": number}, number, required=[number]), stdin_bytes)
def test_softmax(args, stdin):
    run_case("softmax", args, stdin if "-" in args else b"")


finite_or_infinite = st.one_of(st.floats(allow_nan=False), st.sampled_from([math.inf, -math.inf, 1e308, -1e308, 5e-324]))
temperatures = st.one_of(st.just(0.0), st.floats(min_value=5e-324, max_value=1.7e308), st.sampled_from([1e-300, 0.5, 1.0, 2.0, 1e308]))


@FUZZ
@given(st.lists(finite_or_infinite, min_size=1, max_size=12), temperatures, st.booleans(), st.booleans())
def test_softmax_agrees_with_an_exact_reference(values, temperature, through_stdin, log):
    """The probabilities the command prints are softmax(x / T) computed in exact decimals, wherever it
    exists; +inf values share the mass, and an all -inf list is refused."""
    numbers = [repr(v) for v in values]
    args = ["softmax", "-t", repr(temperature), "--json", *(["--log"] if log else [])]
    outcome = run_case("softmax (reference)", [*args, "-"] if through_stdin else [*args, *numbers],
                       stdin=" ".join(numbers).encode() if through_stdin else b"")
    if all(v == -math.inf for v in values):
        assert outcome.code == 2
        return
    assert outcome.code == 0, outcome
    probabilities = json.loads(outcome.text)["probabilities"]
    assert agrees(probabilities, softmax_reference(values, temperature)), (probabilities, softmax_reference(values, temperature))
    assert math.fsum(probabilities) == pytest.approx(1.0, abs=1e-12)


long_paths = st.tuples(st.integers(200, 5000), nasty).map(lambda t: "x" * t[0] + t[1])  # the OS refuses the name: OSError, not attn's checks
VECTOR_OPTIONS = {"--vectors": mostly(st.just("small"), st.one_of(st.sampled_from(["empty.txt", "garbage.bin", "lying.txt", "nan.txt", "missing", ".", "~nosuchuser/v"]), long_paths)),
                  "--limit": mostly(st.sampled_from(["1000", "50", "5000"]), integer)}


@FUZZ
@given(argv(["analogy"], ["--json", "--trust-pickle", "--csv", "--tsv", "--spreadsheet"], {
    "-p": text, "--probe": text, "--probes-file": st.sampled_from(["probes.txt", "-", "latin1.tsv", "missing.txt", "."]),
    "--top": integer, "-k": integer, "--method": st.sampled_from(["cosadd", "cosmul", "bad"]),
    "--oov": st.sampled_from(["error", "skip", "zero", "bad"]), **VECTOR_OPTIONS,
}, text, required=[text, text], max_items=4), stdin_bytes)
def test_analogy(args, stdin):
    run_case("analogy", [*args, "--vectors", "small"] if "--vectors" not in args else args, stdin)


@FUZZ
@given(st.lists(words, min_size=2, max_size=3), st.lists(text, max_size=6), st.sampled_from(["zero", "skip"]),
       st.sampled_from([[], ["--json"], ["--method", "cosmul"], ["--top", "0"]]))
def test_analogy_any_probes(inputs, probes, oov, options):
    """Input words that are keys, probes that are anything: the analogy is shown, or one line says why."""
    args = ["analogy", "--vectors", "small", "--oov", oov, *options, *[a for p in probes for a in ("-p", p)], "--", *inputs]
    outcome = run_case("analogy (any probes)", args)
    if outcome.code:
        assert any(why in outcome.stderr for why in ("have the same vector", "not UTF-8", "no such option", "unknown word")), outcome


@FUZZ
@given(argv(["similarity"], ["--json", "--csv", "--tsv", "--spreadsheet"], VECTOR_OPTIONS, text, required=[text, text], max_items=8))
def test_similarity(args):
    run_case("similarity", [*args, "--vectors", "small"] if "--vectors" not in args else args)


# --- inspect ----------------------------------------------------------------------------------

HEADS = st.sampled_from(["identity", "random", "random:1", "random:0", "random:99999", "adjective", "context", "nope",
                         "head.npz", "missing.npz", "links.tsv", ".", "odd.npz", "~nosuchuser/h.npz"])


@FUZZ
@given(argv(["inspect"], ["--json", "--jsonl", "--csv", "--tsv", "--spreadsheet", "--no-position", "--no-scale", "--per-head", "--transpose",
                        "--embeddings", "--force"], {
    "--head": HEADS, "--mask": st.sampled_from(["causal", "none", "both"]), "--stage": st.sampled_from(["scores", "masked", "weights", "x"]),
    "--focus": st.one_of(text, integer), "--neighbors": integer, "--max-tokens": integer, "--seed": integer,
    "--oov": st.sampled_from(["error", "skip", "zero"]), "--sense": st.one_of(text, st.lists(words, max_size=3).map(lambda w: "s=" + ",".join(w))),
    "--sense-set": st.sampled_from(["lesson", "links.tsv", "latin1.tsv", "missing.tsv", "nope"]),
    "--svg": st.sampled_from(["out.svg", "existing.svg", "missing/x.svg", "."]), "--html": st.sampled_from(["out.html", "existing.svg"]),
    **VECTOR_OPTIONS,
}, st.nothing(), required=[st.one_of(sentence, st.just("-"))], max_items=4), stdin_bytes)
def test_inspect(args, stdin):
    run_case("inspect", [*args, "--vectors", "small"] if "--vectors" not in args else args, stdin)


output_modes = st.sampled_from([[], ["--json"], ["--jsonl"], ["--json", "--stage", "masked"], ["--transpose", "--per-head"], ["--csv"],
                                ["--tsv", "--spreadsheet"]])


@FUZZ
@given(sentence, output_modes, st.sampled_from([[], ["--head", "identity"], ["--head", "random:3", "--mask", "none"], ["--focus", "0"]]))
def test_inspect_any_sentence(text, mode, options):
    """Any text as the sentence, unknown words zeroed: it is shown, or refused in one line (no words,
    bytes that are not UTF-8, too many tokens); never half-done."""
    outcome = run_case("inspect (any sentence)", ["inspect", text, "--oov", "zero", "--vectors", "small", *mode, *options])
    if outcome.code != 0:
        assert outcome.stdout == b"" and outcome.code == 2, outcome


@FUZZ
@given(stdin_bytes, output_modes)
def test_inspect_any_stdin(stdin, mode):
    """Any bytes on stdin, a line at a time: every line gets its result or its one error, in order."""
    outcome = run_case("inspect - (any stdin)", ["inspect", "-", "--oov", "skip", "--vectors", "small", *mode], stdin)
    if "--jsonl" in mode:
        lines = stdin.split(b"\n")
        lines = lines[:-1] if lines[-1] == b"" else lines
        lines[:1] = [line.removeprefix(b"\xef\xbb\xbf") for line in lines[:1]]
        kept = [k for k, line in enumerate(lines, 1) if line.rstrip(b"\r").strip()]  # blank lines are skipped, numbers kept
        out = outcome.text.splitlines()
        assert [json.loads(line)["line"] for line in out] == kept, outcome  # each object names its input line


def controls_escaped(text: str) -> str:
    """`text` with its control characters (C0, DEL, C1) as Python writes them, \\x1b, and nothing else changed: a line break
    and a tab stay as they are (a quoted CSV cell holds them)."""
    return "".join(repr(c)[1:-1] if unicodedata.category(c) == "Cc" and c not in "\n\t" else c for c in text)


@FUZZ
@given(st.lists(words, min_size=2, max_size=6), st.sampled_from([[], ["--json"], ["--csv"], ["--tsv"], ["--csv", "--spreadsheet"]]))
@example(["the", "\u202eevil", "\x1b[31mred"], ["--csv"])
@example(["the", "\u202eevil"], [])
def test_similarity_prints_keys_literally(keys, mode):
    """Keys that look like Rich markup, emoji codes, escape sequences or formulas are printed as they
    are: JSON exactly; CSV/TSV with control characters escaped and every other character as it is (a
    right-to-left mark or a joiner is data there), and with --spreadsheet a formula-looking cell after
    a '; the view with every character a terminal would not print as it is escaped."""
    outcome = run_case("similarity (odd keys)", ["similarity", "--vectors", "small", *mode, "--", *keys])
    assert outcome.code == 0, outcome
    if mode == ["--json"]:
        assert json.loads(outcome.text)["words"] == keys
    elif mode:
        rows = list(csv.DictReader(io.StringIO(outcome.text), delimiter="\t" if "--tsv" in mode else ","))
        quote = "--spreadsheet" in mode
        shown = [("'" if quote and controls_escaped(k).startswith(("=", "+", "-", "@")) else "") + controls_escaped(k) for k in keys]
        assert [(r["a"], r["b"]) for r in rows] == [(a, b) for i, a in enumerate(shown) for b in shown[i + 1:]], outcome
    else:
        for key in keys:
            assert printable(key) in outcome.text, outcome  # control characters escaped, nothing else changed


@FUZZ
@given(argv(["inspect", "--model", str(checkpoints.tiny_gpt2_folder())], ["--json", "--jsonl", "--words", "--hide-special", "--transpose"], {
    "--head": st.one_of(st.sampled_from(["0.1", "1.3", "1", "2.0", "0.9", "a.b", "-1.0", ""]), text),
    "--layer": integer, "--focus": st.one_of(text, integer), "--neighbors": integer,
    "--stage": st.sampled_from(["masked", "weights", "scores"]), "--model": st.sampled_from(["missing-model", ".", "links.tsv", "~nosuchuser/m", *HOSTILE_MODELS]),
}, st.nothing(), required=[st.one_of(sentence, st.just("-"))], max_items=3), stdin_bytes)
def test_inspect_model(args, stdin):
    run_case("inspect --model", args, stdin)


# --- heads, model, vectors ----------------------------------------------------------------------


@FUZZ
@given(argv(["heads", "list"], ["--json"], VECTOR_OPTIONS, st.nothing(), max_items=3))
def test_heads_list(args):
    run_case("heads list", args)


@FUZZ
@given(argv(["heads", "eval"], ["--json"], {
    "--head": HEADS, "--mask": st.sampled_from(["causal", "none", "x"]), "--seed": integer,
    "--sense-set": st.sampled_from(["lesson", "links.tsv", "missing.tsv"]), "--vectors": st.just("small"),
    "--oov": st.sampled_from(["error", "skip", "zero", "bad"]),
}, st.nothing(), required=[mostly(st.sampled_from(["links.tsv", "cases.tsv"]), st.sampled_from(["latin1.tsv", "empty.txt", "missing.tsv", ".", "-"]))],
    max_items=3))
def test_heads_eval(args):
    run_case("heads eval", args)


@FUZZ
@given(
    st.sampled_from(["links.tsv", "latin1.tsv", "empty.txt", "missing.tsv", "cases.tsv", "."]),
    st.sampled_from(["out.npz", "new.npz", "out-existing.npz", "x.txt", "missing/x.npz", "."]),
    argv([], ["--json", "--force"], {
        "--steps": st.sampled_from(["1", "2", "0", "-1", "x", "100001", "9223372036854775808"]), "--d-k": st.sampled_from(["1", "4", "0", "513", "x"]),
        "--holdout": st.sampled_from(["0", "0.5", "0.95", "-1", "nan", "-nan", "inf", "-inf", "1e-320"]), "--mask": st.sampled_from(["causal", "none", "x"]),
        "--seed": integer, "--vectors": st.just("small"), "--oov": st.sampled_from(["skip", "zero", "bad"]),
    }, st.sampled_from(["extra", "links.tsv"]), max_items=4),
)
def test_heads_train(links, out, options):
    if "--steps" not in options:
        options = [*options, "--steps", "1"]  # training is the one command whose cost grows with an option
    run_case("heads train", ["heads", "train", links, out, *options])


@FUZZ
@given(argv(["heads", "find"], ["--json"], {
    "--model": st.sampled_from([str(checkpoints.tiny_gpt2_folder()), "missing-model", ".", "~nosuchuser/m", *HOSTILE_MODELS]), "--top": integer,
    "--sort": st.sampled_from(["top", "exact", "weight", "beyond", "x"]),
}, st.nothing(), required=[mostly(st.sampled_from(["adjective", "determiner", "previous", "links.tsv"]), st.sampled_from(["latin1.tsv", "missing.tsv", "nope"]))],
    max_items=3))
def test_heads_find(args):
    run_case("heads find", args)


@FUZZ
@given(argv(["model", "info"], ["--json"], {}, st.nothing(), required=[mostly(st.sampled_from([str(checkpoints.tiny_gpt2_folder()), *HOSTILE_MODELS]),
                                                                                 st.one_of(st.sampled_from(["small", "missing", ".", "~nosuchuser/x"]), text, long_paths))], max_items=2))
def test_model_info(args):
    run_case("model info", args)


@FUZZ
@given(argv(["vectors", "info"], ["--json", "--trust-pickle"], {"--limit": integer}, st.nothing(), required=[
    st.sampled_from(["small", "empty.txt", "garbage.bin", "lying.txt", "nan.txt", "probes.txt", "missing", ".", "head.npz"])], max_items=2))
def test_vectors_info(args):
    run_case("vectors info", args)


@FUZZ
@given(
    st.sampled_from(["small", "lying.txt", "nan.txt", "garbage.bin", "missing", "small/keys.txt", "probes.txt", "."]),
    st.sampled_from(["out-vectors", "out-existing.npz", "missing/out", ".", "small/vectors.npy"]),
    argv([], ["--json", "--force", "--trust-pickle"], {"--limit": integer}, st.sampled_from(["extra"]), max_items=3),
)
def test_vectors_convert(source, destination, options):
    if destination.startswith("small"):
        options = [o for o in options if o != "--force"]  # the other tests read these vectors
    run_case("vectors convert", ["vectors", "convert", source, destination, *options])


@FUZZ
@given(st.lists(st.one_of(nasty, st.sampled_from(["inspect", "softmax", "heads", "vectors", "model", "--version", "--help"])), max_size=4))
def test_anything_at_all(args):
    run_case("any argv", args)


# --- hostile checkpoints: config values, dtypes, bytes ------------------------------------------------------

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=8), surrogates,
              st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDBFF), min_size=1, max_size=2), st.sampled_from(SPECIAL)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)), max_leaves=6,
)
CONFIG_KEYS = ["model_type", "n_layer", "n_head", "n_embd", "n_inner", "n_positions", "n_ctx", "vocab_size", "activation_function",
               "layer_norm_epsilon", "_name_or_path", "num_attention_heads", "num_hidden_layers", "hidden_size"]  # what attn reads of GPT-2's


def hostile_copy(damage) -> Path:
    """A copy of the tiny GPT-2 in the scratch folder (the current one), damaged by `damage(folder)`."""
    import tempfile

    folder = copy_model(checkpoints.tiny_gpt2_folder(), Path(tempfile.mkdtemp(dir=".", prefix="model-")) / "m")
    damage(folder)
    return folder


model_modes = st.sampled_from([[], ["--json"], ["--jsonl"], ["--head", "1.0", "--csv"], ["--words", "--focus", "0"]])


@FUZZ
@given(st.dictionaries(st.sampled_from(CONFIG_KEYS), st.one_of(json_values, st.integers(1, 1000)), min_size=1, max_size=3), model_modes)
def test_inspect_model_any_config_values(changes, mode):
    """Any JSON value for the config keys attn reads (lists, objects, strings, NaN, lone surrogates): the model
    runs, or one line names config.json or the tensor the config disagrees with (exit 1)."""
    folder = hostile_copy(lambda m: edit_config(m, **changes))
    outcome = run_case("inspect --model (any config)", ["inspect", "the cat", "--model", str(folder), *mode])
    assert outcome.code in (0, 1), outcome
    if outcome.code:
        assert str(folder) in outcome.stderr or "tokenizer" in outcome.stderr, outcome


TENSORS = ["wte.weight", "wpe.weight", "h.0.attn.c_attn.weight", "h.0.ln_1.bias", "h.1.mlp.c_proj.weight", "ln_f.weight"]
DTYPE_SIZES = {"F32": 4, "F16": 2, "F64": 8, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I32": 4, "U8": 1, "BOOL": 1, "C64": 8}


@FUZZ
@given(st.sampled_from(TENSORS), st.sampled_from(sorted(DTYPE_SIZES)), st.integers(0, 2**32 - 1), model_modes)
def test_inspect_model_any_tensor_dtype(name, dtype, seed, mode):
    """One tensor stored in any dtype safetensors has, its bytes random (NaN, inf, 3e38 and subnormals
    among them): the model runs, or one line names the tensor (exit 1)."""

    def damage(folder):
        shape = read_tensors(folder / "model.safetensors")["transformer." + name][1]
        raw = np.random.default_rng(seed).integers(0, 256, int(np.prod(shape)) * DTYPE_SIZES[dtype], dtype=np.uint8).tobytes()
        change_tensors(folder, **{name.replace(".", "__"): (dtype, raw)})

    folder = hostile_copy(damage)
    outcome = run_case("inspect --model (any dtype)", ["inspect", "the cat", "--model", str(folder), *mode])
    assert outcome.code in (0, 1), outcome
    if outcome.code:
        assert name in outcome.stderr or "overflows float32" in outcome.stderr, outcome


@FUZZ
@given(st.sampled_from(["config.json", "vocab.json", "merges.txt", "model.safetensors"]), st.integers(0, 10**9), st.binary(min_size=1, max_size=8),
       st.booleans())
def test_model_info_any_bytes_in_a_file(file, where, junk, replace):
    """Bytes that are not UTF-8 (or not the format at all) spliced into a checkpoint's files: it loads, or one line says which file."""

    def damage(folder):
        data = (folder / file).read_bytes()
        at = where % (len(data) + 1)
        (folder / file).write_bytes(data[:at] + junk + data[at + len(junk) if replace else at :])

    folder = hostile_copy(damage)
    outcome = run_case("model info (any bytes)", ["model", "info", str(folder), "--json"])
    assert outcome.code in (0, 1), outcome
