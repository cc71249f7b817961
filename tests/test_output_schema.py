"""README's tables of each command's JSON keys and CSV columns, checked against real output: every
key documented is written (by one of the runs below) with the documented type, and every key
written is documented."""

import csv
import io
import json
import re
from pathlib import Path

import pytest

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
LESSON_SET_SENTENCE = "the mole xqzvw"

JSON_RUNS = {
    "inspect": [
        (["inspect", LESSON_SET_SENTENCE, "--head", "identity", "--head", "random", "--oov", "skip", "--stage", "masked",
          "--embeddings", "--neighbors", "2", "--sense-set", "lesson", "--no-scale", "--json"], None),
        (["inspect", "the cat", "--head", "identity", "--stage", "scores", "--json"], None),
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


@pytest.mark.parametrize("command", list(JSON_RUNS))
def test_json_keys_and_types_are_those_readme_documents(run, command):
    types = documented("json-schema", command)
    seen = set()
    for args, stdin in JSON_RUNS[command]:
        result = run(*args, input=stdin)
        assert result.exit_code == 0, result.stderr
        for line in result.stdout.splitlines() if "--jsonl" in args else [result.stdout]:
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
    types = documented("csv-columns", command)
    seen = set()
    for args, stdin in CSV_RUNS[command]:
        result = run(*args, input=stdin)
        assert result.exit_code == 0, result.stderr
        rows = list(csv.DictReader(io.StringIO(result.stdout), delimiter="\t" if "--tsv" in args else ","))
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
