"""README's tables of each command's JSON keys and CSV columns, checked against real output: every
key documented is written (by one of the runs below) with the documented type, and every key
written is documented."""

import csv
import io
import json
import re
from pathlib import Path

import pytest

from tests import docs

README = docs.text()  # README and docs/, where each command's JSON keys and CSV columns are documented
LESSON_SET_SENTENCE = "the mole xqzvw"

JSON_RUNS = {
    "inspect": [
        (["inspect", LESSON_SET_SENTENCE, "--head", "identity", "--head", "random", "--oov", "skip", "--stage", "masked",
          "--embeddings", "--neighbors", "2", "--sense-set", "lesson", "--no-scale", "--json"], None),
        (["inspect", "the cat", "--head", "identity", "--stage", "scores", "--json"], None),
        (["inspect", "the fluffy cat", "--json"], None),  # the shipped heads carry distance costs
        (["inspect", "-", "--head", "identity", "--jsonl"], "the cat\n"),
    ],
    "softmax": [(["softmax", "1", "2", "-inf", "--log", "--json"], None)],
    "analogy": [(["analogy", "cats", "cat", "--json"], None), (["analogy", "cats", "cat", "dog", "--json"], None)],
    "similarity": [(["similarity", "cat", "dog", "car", "--json"], None)],
}
CSV_RUNS = {
    "inspect": [(["inspect", "the cat", "--head", "identity", "--csv"], None), (["inspect", "-", "--head", "identity", "--tsv"], "the cat\n")],
    "softmax": [(["softmax", "1", "2", "--log", "--csv"], None)],
    "analogy": [(["analogy", "cats", "cat", "--csv"], None), (["analogy", "cats", "cat", "dog", "--tsv"], None)],
    "similarity": [(["similarity", "cat", "dog", "car", "--csv"], None)],
}


def documented(kind: str, command: str) -> dict[str, str]:
    """{key: type} from the README table after `<!-- kind: command -->`."""
    marker = f"<!-- {kind}: {command} -->\n"
    assert README.count(marker) == 1, marker
    table = README.split(marker)[1].split("\n\n")[0].splitlines()[2:]
    types = {}
    for row in table:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip("|"))]
        names = re.findall(r"`([^`]+)`", cells[0])
        spec = cells[1].split(", ")
        assert len(spec) in (1, len(names)), row
        for i, name in enumerate(names):
            types[name] = spec[i] if len(spec) > 1 else spec[0]
    return types


def scalar_fits(value, spec: str) -> bool:
    kinds = {
        "string": lambda v: isinstance(v, str), "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None, "object": lambda v: isinstance(v, dict),
    }
    return any(kinds[alt](value) for alt in spec.split(" or "))


def fits(value, spec: str) -> bool:
    """A JSON value against "integer", "boolean or null", "array [n][n] of number or null", ..."""
    if spec.startswith("array"):
        element = spec.split(" of ", 1)[1]
        depth = max(1, spec.split(" of ")[0].count("["))
        items = [value]
        for _ in range(depth):
            if not all(isinstance(x, list) for x in items):
                return False
            items = [y for x in items for y in x]
        return all(scalar_fits(x, element) for x in items)
    return scalar_fits(value, spec)


def paths(obj, prefix: str = ""):
    """(key path, value) of every key: `heads[].name` for the key of the objects in a list."""
    for key, value in obj.items():
        path = f"{prefix}{key}"
        yield path, value
        if isinstance(value, dict):
            yield from paths(value, path + ".")
        elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            for item in value:
                yield from paths(item, path + "[].")


def outputs(run, runs):
    """(arguments, stdout) of each run, which must succeed."""
    for args, stdin in runs:
        result = run(*args, input=stdin)
        assert result.exit_code == 0, result.stderr
        yield args, result.stdout


@pytest.mark.parametrize("command", list(JSON_RUNS))
def test_json_keys_and_types_are_those_readme_documents(run, command):
    types, seen = documented("json-schema", command), set()
    for args, stdout in outputs(run, JSON_RUNS[command]):
        for line in stdout.splitlines() if "--jsonl" in args else [stdout]:
            for path, value in paths(json.loads(line)):
                assert path in types, f"{command}: {path} is written but not documented in README"
                assert fits(value, types[path]), f"{command}: {path} = {str(value)[:80]} is not {types[path]}"
                seen.add(path)
    assert set(types) - seen == set(), f"{command}: documented but never written"


def cell_fits(text: str, spec: str) -> bool:
    def one(alt: str) -> bool:
        if alt == "empty":
            return text == ""
        if alt in ("integer", "number"):
            try:
                int(text) if alt == "integer" else float(text)
            except ValueError:
                return False
            return True
        return alt == "string" and text != ""
    return any(one(alt) for alt in spec.split(" or "))


@pytest.mark.parametrize("command", list(CSV_RUNS))
def test_csv_columns_and_types_are_those_readme_documents(run, command):
    types, seen = documented("csv-columns", command), set()
    for args, stdout in outputs(run, CSV_RUNS[command]):
        rows = list(csv.DictReader(io.StringIO(stdout), delimiter="\t" if "--tsv" in args else ","))
        assert rows, args
        for column in rows[0]:
            assert column in types, f"{command}: column {column} is written but not documented in README"
            assert all(cell_fits(row[column], types[column]) for row in rows), f"{command}: column {column} is not {types[column]}"
            seen.add(column)
    assert set(types) - seen == set(), f"{command}: documented but never written"


def test_csv_loads_as_one_row_per_head_query_and_key(run):
    """The tidy form: as many rows as heads x n x n, the weights of each query summing to 1."""
    result = run("inspect", "A fluffy blue creature", "--head", "identity", "--head", "random", "--csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 2 * 4 * 4
    for head in ("identity", "random"):
        for q in range(4):
            weights = [float(r["weight"]) for r in rows if r["head"] == head and r["query"] == str(q)]
            assert sum(weights) == pytest.approx(1, abs=1e-6)


# --- every number the view shows is in the JSON ------------------------------------------------------

SCREEN_FIELDS = {  # what the inspect view shows -> where the JSON has it
    "token list, 'without a vector'": ("tokens", "unknown"),
    "head heading": ("heads[].name", "heads[].d_k", "heads[].description"),
    "--no-scale line": ("heads[].mean_top_weight", "heads[].mean_top_weight_scaled"),
    "heatmap cells": ("heads[].weights",),
    "--per-head table": ("heads[].delta_norms", "heads[].delta_context_norms", "heads[].delta_self_norms", "heads[].cosines", "heads[].context_cosines"),
    "shift table": ("input_norms", "delta_norms", "delta_context_norms", "cosines", "context_cosines", "neighbors.input", "neighbors.output"),
    "sense meter": ("senses[].senses[].before", "senses[].senses[].after", "senses[].senses[].change", "senses[].nearest_before", "senses[].nearest_after"),
}


def flat(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines()]


def test_inspect_json_holds_every_number_the_view_shows(run):
    options = ["the mole xqzvw sat", "--head", "identity", "--head", "random", "--oov", "skip", "--per-head", "--neighbors", "2",
               "--no-scale", "--sense-set", "lesson"]
    screen = flat(run("inspect", *options, env={"COLUMNS": "200", "NO_COLOR": "1"}).stdout)
    out = json.loads(run("inspect", *options, "--json").stdout)
    assert {path for fields in SCREEN_FIELDS.values() for path in fields} <= set(dict(paths(out)))
    tokens = out["tokens"]
    assert f"without a vector: {', '.join(out['unknown'])}" in screen
    for head in out["heads"]:
        assert any(line.startswith(f"head {head['name']} d_k={head['d_k']}") for line in screen)
        assert " ".join(head["description"].split()) in screen
        assert f"without /√d_k: mean top weight {head['mean_top_weight']:.2f} (with: {head['mean_top_weight_scaled']:.2f})" in screen
        rows = zip(tokens, head["delta_norms"], head["delta_context_norms"], head["delta_self_norms"], head["cosines"], head["context_cosines"])
        for token, d, c, s, cos, ccos in rows:
            assert f"{token} {d:.2f} {c:.2f} {s:.2f} {cos:.3f} {ccos:.3f}" in screen
    rows = zip(tokens, out["input_norms"], out["delta_norms"], out["delta_context_norms"], out["cosines"], out["context_cosines"],
               out["neighbors"]["input"], out["neighbors"]["output"])
    for token, norm, d, c, cos, ccos, before, after in rows:
        assert f"{token} {norm:.2f} {d:.2f} {c:.2f} {cos:.3f} {ccos:.3f} {', '.join(before)} {', '.join(after)}" in screen
    assert out["senses"] and out["unknown"] == ["xqzvw"]
    for row in out["senses"]:
        assert f"{row['index']}:{row['token']} nearer to {row['nearest_before']} before / {row['nearest_after']} after" in screen
        for sense in row["senses"]:
            assert any(f"{sense['name']} {sense['before']:.3f} {sense['after']:.3f}" in line for line in screen)


def test_softmax_json_holds_every_number_the_table_shows(run):
    screen = flat(run("softmax", "1000", "1001", "1002", "--log", env={"NO_COLOR": "1"}).stdout)
    out = json.loads(run("softmax", "1000", "1001", "1002", "--log", "--json").stdout)
    for value, e, p, lp in zip(out["values"], out["exps"], out["probabilities"], out["log_probabilities"]):
        assert any(line.startswith(f"{value:.6g} {e:.4f} {p:.4f}") and line.endswith(f"{lp:.4f}") for line in screen)
    assert f"sum of exp = {out['sum_of_exps']:.6g}; probabilities sum to {out['probability_sum']:.6f}" in screen


# --- one format option -----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "tsv"])
@pytest.mark.parametrize("args", [["softmax", "-1", "2"], ["similarity", "cat", "dog"], ["inspect", "the cat", "--head", "identity"]])
def test_each_flag_is_the_format_option(run, args, fmt):
    short, long = run(*args, f"--{fmt}"), run(*args, "--format", fmt)
    assert short.exit_code == long.exit_code == 0 and short.stdout == long.stdout and short.stdout.strip()


def test_two_formats_or_a_format_a_command_lacks_are_usage_errors(run):
    both = run("softmax", "1", "2", "--json", "--csv")
    assert both.exit_code == 2 and both.stdout == "" and "--json and --csv exclude each other" in both.stderr
    lacking = run("heads", "list", "--csv")
    assert lacking.exit_code == 2 and lacking.stdout == "" and lacking.stderr.startswith("attn: --csv: ")
    value = run("inspect", "the cat", "--head", "identity", "--focus", "--json")  # an option's value is not a format flag
    assert value.exit_code == 2 and "--focus '--json' is not one of the tokens" in value.stderr


@pytest.mark.parametrize("stage, columns", [(None, []), ("weights", []), ("masked", ["scaled"]), ("scores", ["score", "scaled"])])
def test_a_checkpoints_csv_has_the_score_columns_its_pass_kept(run, stage, columns):
    """With --model, `score` and `scaled` are columns only where the pass kept them, filled (never empty on every row)."""
    folder = Path(__file__).parent / "fixtures" / "models" / "tiny-gpt2"
    result = run("inspect", "the cat sat", "--model", folder, "--layer", "0", "--csv", *(["--stage", stage] if stage else []))
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == ["layer", "head", "query", "key", "query_token", "key_token", *columns, "weight"]
    for column in columns:
        visible = [row[column] for row in rows if int(row["key"]) <= int(row["query"])]
        hidden = [row[column] for row in rows if int(row["key"]) > int(row["query"])]
        assert all(float(cell) == float(cell) for cell in visible) and set(hidden) == {""}
