"""The fixture kernels are faithful kernel-builder artifacts: metadata that the `kernels`
library's own parser and digest check accept, the ops namespace = metadata id = .so stem,
and the binary traits a non-Python loader must cope with (BIND_NOW, an undefined
PyModule_Create2, an exported PyInit_<ns>, no libpython, no CUDA libraries)."""

import json
import subprocess

import pytest

from conftest import fixture_variant_dir


@pytest.mark.parametrize("version", [1, 2])
def test_metadata_parses_and_digest_matches(version):
    from kernels._rust import Digest, Metadata

    variant = fixture_variant_dir(version)
    meta = Metadata.read_from_file(variant / "metadata.json")
    assert meta.version == version
    assert str(meta.backend.backend_type).lower().endswith("cpu")
    # Raises on any missing, extra or changed file.
    meta.digest.validate(Digest.hash_variant(meta.digest.algorithm, variant))
    raw = json.loads((variant / "metadata.json").read_text())
    assert set(raw["digest"]["files"]) == {"__init__.py", "_ops.py", f"{meta.id}.abi3.so"}
    ops_lines = (variant / "_ops.py").read_text().splitlines()
    assert f"from . import {meta.id}" in ops_lines and f"ops = torch.ops.{meta.id}" in ops_lines


def test_digest_check_catches_a_changed_file(tmp_path):
    import shutil

    from kernels._rust import Digest, Metadata

    copy = tmp_path / "variant"
    shutil.copytree(fixture_variant_dir(1), copy)
    (copy / "__init__.py").write_text((copy / "__init__.py").read_text() + "\n# tampered\n")
    meta = Metadata.read_from_file(copy / "metadata.json")
    with pytest.raises(Exception):
        meta.digest.validate(Digest.hash_variant(meta.digest.algorithm, copy))


@pytest.mark.parametrize("version", [1, 2])
def test_shared_object_traits(version):
    variant = fixture_variant_dir(version)
    ns = json.loads((variant / "metadata.json").read_text())["id"]
    so = variant / f"{ns}.abi3.so"
    dyn = subprocess.run(["readelf", "-d", str(so)], check=True, capture_output=True, text=True).stdout
    assert "BIND_NOW" in dyn and "NOW" in dyn.split("FLAGS_1", 1)[1].splitlines()[0]
    needed = [line.split("[", 1)[1].rstrip("]") for line in dyn.splitlines() if "(NEEDED)" in line]
    assert "libtorch_cpu.so" in needed and "libc10.so" in needed
    assert not any("python" in n or "cuda" in n or "cudart" in n for n in needed), needed
    assert "RUNPATH" not in dyn and "RPATH" not in dyn

    syms = subprocess.run(["nm", "-D", str(so)], check=True, capture_output=True, text=True).stdout
    entries = {tuple(line.split()[-2:]) for line in syms.splitlines() if line.strip()}
    assert ("U", "PyModule_Create2") in entries
    assert ("T", f"PyInit_{ns}") in entries
    python_undefined = {name for kind, name in entries if kind == "U" and name.startswith(("Py", "_Py"))}
    assert python_undefined == {"PyModule_Create2"}


def test_versions_have_distinct_namespaces():
    ids = {json.loads((fixture_variant_dir(v) / "metadata.json").read_text())["id"] for v in (1, 2)}
    assert len(ids) == 2
