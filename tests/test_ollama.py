"""Ollama names resolved offline through a store's manifests to the GGUF blob; bad names and manifests refused in one line."""

import hashlib
import json
import shutil

import numpy as np
import pytest

from attn_cli.errors import DataError, InputError
from attn_cli.models.sources import gguf, ollama
from tests import checkpoints
from tests.exact import assert_copied

STORE = checkpoints.FIXTURES / "ollama"
MANIFEST = STORE / "manifests" / "registry.ollama.ai" / "library" / "tiny-llama" / "q8_0"


@pytest.fixture
def store(tmp_path):
    return fake_store(tmp_path)


def fake_store(tmp_path):
    """The committed store, with its model blob: the committed GGUF copied under the digest the manifest names."""
    root = tmp_path / "models"
    shutil.copytree(STORE, root)
    blob = checkpoints.gguf_fixture("tiny-llama", "Q8_0")
    layer = next(x for x in json.loads(MANIFEST.read_text())["layers"] if x["mediaType"] == ollama.MODEL_MEDIA_TYPE)
    digest = hashlib.sha256(blob.read_bytes()).hexdigest()
    assert layer == {"mediaType": ollama.MODEL_MEDIA_TYPE, "digest": f"sha256:{digest}", "size": blob.stat().st_size}
    shutil.copyfile(blob, root / "blobs" / f"sha256-{digest}")
    return root


def test_the_committed_manifest_is_ollamas_format():
    manifest = json.loads(MANIFEST.read_text())
    assert manifest["schemaVersion"] == 2 and manifest["config"]["digest"].startswith("sha256:")
    media = [layer["mediaType"] for layer in manifest["layers"]]
    assert media == ["application/vnd.ollama.image.model", "application/vnd.ollama.image.template", "application/vnd.ollama.image.params"]
    for entry in [manifest["config"], *manifest["layers"][1:]]:  # the small blobs are committed and match their digests
        data = (STORE / "blobs" / entry["digest"].replace(":", "-")).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["digest"][7:] and len(data) == entry["size"]


@pytest.mark.parametrize("spec, parts", [
    ("ollama:smollm2:135m", ("registry.ollama.ai", "library", "smollm2", "135m")),
    ("ollama:smollm2", ("registry.ollama.ai", "library", "smollm2", "latest")),
    ("ollama:user/name:tag", ("registry.ollama.ai", "user", "name", "tag")),
    ("ollama:example.com/ns/name:v1.2", ("example.com", "ns", "name", "v1.2")),
    ("ollama:localhost:5000/ns/name", ("localhost:5000", "ns", "name", "latest")),
])
def test_names(spec, parts):
    assert ollama.parse(spec) == parts


@pytest.mark.parametrize("spec", [
    "ollama:../../etc/passwd", "ollama:..", "ollama:name:..", "ollama:a/b/c/d", "ollama:/abs", "ollama:name:",
    "ollama:", "ollama:na me", "ollama:.hidden", "ollama:name:tag/../x", "ollama:../x/y:z", "ollama:host/../y:z",
])
def test_names_that_could_leave_the_store_are_refused(spec, store):
    with pytest.raises(InputError) as e:
        ollama.resolve(spec, store)
    assert "\n" not in str(e.value) and spec in str(e.value)


def test_a_model_resolves_to_its_gguf_blob(store, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    blob = ollama.resolve("ollama:tiny-llama:q8_0")
    assert blob.parent == store / "blobs" and blob.name.startswith("sha256-")
    src, direct = ollama.load("ollama:tiny-llama:q8_0"), gguf.load(checkpoints.gguf_fixture("tiny-llama", "Q8_0"))
    assert src.name == "tiny-llama:q8_0" and src.config == direct.config and sorted(src.tensors) == sorted(direct.tensors)
    for key, tensor in src.tensors.items():
        assert_copied(tensor.array(), direct.tensors[key].array())  # the same bytes, dequantized the same way


def test_the_store_defaults_to_home(tmp_path, monkeypatch):
    monkeypatch.delenv("OLLAMA_MODELS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ollama.store() == tmp_path / ".ollama" / "models"


def test_user_and_registry_namespaces(store):
    for where in (("registry.ollama.ai", "someone", "tiny"), ("example.com", "ns", "tiny")):
        target = store / "manifests" / where[0] / where[1] / where[2] / "v1"
        target.parent.mkdir(parents=True)
        shutil.copyfile(MANIFEST, target)
    assert ollama.resolve("ollama:someone/tiny:v1", store) == ollama.resolve("ollama:tiny-llama:q8_0", store)
    assert ollama.resolve("ollama:example.com/ns/tiny:v1", store) == ollama.resolve("ollama:tiny-llama:q8_0", store)
    assert ollama.available(store) == ["example.com/ns/tiny:v1", "someone/tiny:v1", "tiny-llama:q8_0"]


def test_no_such_model_lists_the_models_found(store):
    with pytest.raises(InputError) as e:
        ollama.resolve("ollama:smollm2:135m", store)
    assert str(e.value) == f"--model ollama:smollm2:135m: no such model in the Ollama store at {store}; it has tiny-llama:q8_0"
    with pytest.raises(InputError, match="no such model .* it has tiny-llama:q8_0"):
        ollama.resolve("ollama:tiny-llama", store)  # the tag defaults to latest, which this store lacks


def test_no_store(tmp_path):
    with pytest.raises(InputError, match=r"no Ollama store at .*nowhere \(set OLLAMA_MODELS"):
        ollama.resolve("ollama:smollm2", tmp_path / "nowhere")


def write_manifest(store, manifest) -> None:
    (store / MANIFEST.relative_to(STORE)).write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))


def model_layer(digest: str, size: int = 1) -> dict:
    return {"schemaVersion": 2, "layers": [{"mediaType": ollama.MODEL_MEDIA_TYPE, "digest": digest, "size": size}]}


@pytest.mark.parametrize("manifest, message", [
    ("{not json", "not an Ollama manifest (not valid JSON)"),
    ("\xff\xfe", "not an Ollama manifest"),
    ("[1, 2]", "no list of layers"),
    ({"layers": "x"}, "no list of layers"),
    ({"layers": [{"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64}]}, "found 0"),
    ({"layers": [{"mediaType": ollama.MODEL_MEDIA_TYPE}] * 2}, "found 2"),
    (model_layer("sha256:../../../../etc/passwd"), "is not sha256:<64 hex digits>"),
    (model_layer("sha256:" + "A" * 64), "is not sha256:<64 hex digits>"),
    (model_layer("sha256:" + "0" * 63 + "/"), "is not sha256:<64 hex digits>"),
    (model_layer("sha512:" + "0" * 64), "is not sha256:<64 hex digits>"),
    (model_layer("sha256:" + "0" * 64 + "\n"), "is not sha256:<64 hex digits>"),
    ({"layers": [{"mediaType": ollama.MODEL_MEDIA_TYPE, "digest": 5}]}, "is not sha256:<64 hex digits>"),
    (model_layer("sha256:" + "0" * 64), "is missing; the store is incomplete"),
])
def test_bad_manifests(store, manifest, message):
    write_manifest(store, manifest)
    with pytest.raises(DataError) as e:
        ollama.resolve("ollama:tiny-llama:q8_0", store)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_blob_that_is_a_folder_or_not_gguf(store):
    (store / "blobs" / ("sha256-" + "1" * 64)).mkdir()
    write_manifest(store, model_layer("sha256:" + "1" * 64))
    with pytest.raises(DataError, match="is missing"):
        ollama.resolve("ollama:tiny-llama:q8_0", store)
    (store / "blobs" / ("sha256-" + "2" * 64)).write_bytes(b"not a model at all, just some text")
    write_manifest(store, model_layer("sha256:" + "2" * 64, size=34))
    with pytest.raises(DataError, match="not a GGUF file"):
        ollama.load("ollama:tiny-llama:q8_0", store)


def test_a_huge_manifest_is_not_read(store):
    write_manifest(store, " " * (ollama.MAX_MANIFEST_BYTES + 1))
    with pytest.raises(DataError, match="a real one is under 1 KB"):
        ollama.resolve("ollama:tiny-llama:q8_0", store)
