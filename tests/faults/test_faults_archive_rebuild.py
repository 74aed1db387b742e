"""The archive's rebuild vouches only for what it rebuilt (stand-in engine): a load sweep with crossed
factors, archived, then unpacked and rebuilt with its README's command as a reviewer would."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import snakemake, write_config
from support import executable_standin, kill_all, leftovers, standin_model

from specsweep.archive import archive

FACTORS = {"threads": {"t1": {"-t": 1, "baseline": True}, "t2": {"-t": 2}}, "batch": {"b1": {"-b": 64}, "b2": {}}}
LOAD = {"concurrency": [1], "requests_per_window": 4, "windows": 1, "slo": {}}


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> Path:
    """The archive of a finished sweep with load levels (bench_serve.json) and factors (effects.csv)."""
    workdir = tmp_path_factory.mktemp("sweep")
    standin = executable_standin(workdir / "bin")
    configurations = {"cpu": {"factors": ["threads", "batch"], "name": "{threads}-{batch}"}}
    write_config(workdir, standin, standin_model(workdir / "model.gguf"), configurations, runs=2, load=LOAD)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    (workdir / "config.yaml").write_text(yaml.safe_dump({**config, "factors": FACTORS}, sort_keys=False))
    try:
        for target in ("all", "archive"):
            done = snakemake(workdir, target)
            assert done.returncode == 0, done.stderr[-4000:]
    finally:
        kill_all(leftovers(standin))
    [path] = (workdir / "results" / "archive").glob("specsweep-*.tar.gz")
    return path


def rebuilt(path: Path, into: Path, tamper: dict[str, bytes]) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Unpack ``path``, replace each ``tamper`` member and its manifest line (as a forger would, so that
    ``sha256sum -c`` passes), and run the README's rebuild command there."""
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    [folder] = into.iterdir()
    manifest = (folder / archive.MANIFEST).read_text()
    for name, data in tamper.items():
        old = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        (folder / name).write_bytes(data)
        os.utime(folder / name, (archive.MTIME, archive.MTIME))  # as unpacked
        manifest = manifest.replace(f"{old}  {name}\n", f"{hashlib.sha256(data).hexdigest()}  {name}\n")
    (folder / archive.MANIFEST).write_text(manifest)
    os.utime(folder / archive.MANIFEST, (archive.MTIME, archive.MTIME))
    env = {**os.environ, "PYTHONPATH": archive.rebuild_pythonpath(), "SPECSWEEP_CACHE": str(into / "no-engine")}
    argv = archive.rebuild_argv(archive.archived_rebuild_command(folder))
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)
    return done, folder


def doubled(data: bytes) -> bytes:
    record = json.loads(data)
    for result in record["results"]:
        result["output_throughput"] *= 2
    return json.dumps(record, indent=2).encode()


def test_every_derived_file_is_rebuilt_and_compared_or_listed_as_not_checked(packed, tmp_path):
    done, folder = rebuilt(packed, tmp_path, {})
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    check = (folder / "results" / "archive" / "rebuild-check.txt").read_text()
    listed = {line.split("  ")[1] for line in check.splitlines()}
    for name in ("results/bench_serve.json", "results/effects.csv", "results/figures/interaction.png"):
        assert f"identical  {name}\n" in check, name
    assert "not checked  results/provenance.json  (" in check
    measured = ("/runs/", "/load/", "/launch.json", "/server.log", "results/engine/", "results/models/")
    derived = {
        line.split("  ", 1)[1]
        for line in (folder / archive.MANIFEST).read_text().splitlines()
        if line.split("  ", 1)[1].startswith("results/") and not any(m in line for m in measured)
    }
    assert derived and derived <= listed, sorted(derived - listed)


def test_a_tampered_bench_serve_or_effects_table_fails_the_rebuild(packed, tmp_path):
    """bench_serve.json doubled (its manifest line updated) rebuilt as "identical"; effects.csv and its figure
    were not checked at all (issue 35 item 4)."""
    _top, files = archive.read_members(packed)
    tamper = {
        "results/bench_serve.json": doubled(files["results/bench_serve.json"]),
        "results/effects.csv": files["results/effects.csv"].replace(b"decode_tok_s", b"decode_tok_z", 1),
    }
    done, folder = rebuilt(packed, tmp_path, tamper)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said[-4000:]
    for name in tamper:
        assert f"{name}: sha256 " in said, name
    assert not (folder / "results" / "archive" / "rebuild-check.txt").exists()
