"""Declared secrets (misuse): the value of ``engines/<e>/api_key_env`` and of every ``{from_env: NAME}`` never
reaches a file or an archive member, whatever the variable is called and however short the value is (an
engine echoes its argv into its log); a variable's *name* is never redacted, so the archive still rebuilds.
The sweep provenance records only the environment an engine gets, never the whole calling one."""

from __future__ import annotations

import io
import json
import os
import random
import re
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import executable_standin, snakemake, write_config

from specsweep.record.redact import REDACTED, redact_mapping, redact_values

VALUES = {
    "SRV_AUTH": "SEKRETapiVAL" + os.urandom(6).hex(),  # the API key: a name that does not look secret
    "MYREF": "SEKRETrefVAL" + os.urandom(6).hex(),
    "SHORTREF": str(random.randint(100000, 999999)),  # all digits: a form ordinary data takes too
}


def _as_a_word(value: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<![\w.])" + re.escape(value.encode()) + rb"(?![\w]|\.\d)")


def _every_file(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            files[str(path.relative_to(root))] = data = path.read_bytes()
            if path.name.endswith(".tar.gz"):
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                    for member in tar.getmembers():
                        if member.isfile():
                            files[f"{path.name}!{member.name}"] = tar.extractfile(member).read()
    return files


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    work = tmp_path_factory.mktemp("declared")
    standin = executable_standin(work / "bin")
    (work / "model.gguf").write_bytes(b"GGUF stand-in")
    write_config(
        work,
        standin,
        work / "model.gguf",
        {
            "baseline": {"baseline": True},
            "referenced": {"args": {"--alias": {"from_env": "MYREF"}, "--seed-note": {"from_env": "SHORTREF"}}},
        },
        runs=2,
    )
    config = yaml.safe_load((work / "config.yaml").read_text())
    config["engines"]["llama"]["api_key_env"] = "SRV_AUTH"  # the stand-in then requires the key, as llama-server
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    steps = {target: snakemake(work, target, env=VALUES) for target in ("all", "archive")}
    return work, steps


def test_the_sweep_archives_verifies_and_rebuilds(sweep):
    work, steps = sweep
    for target, done in steps.items():
        assert done.returncode == 0, f"{target}: {done.stderr[-3000:]}"
    rebuilt = list((work / "results" / "archive").glob("*rebuil*"))
    assert rebuilt, sorted(p.name for p in (work / "results" / "archive").iterdir())
    files = _every_file(work)
    [archived] = [data for name, data in files.items() if "!" in name and name.endswith("/config/config.yaml")]
    engine = yaml.safe_load(archived)["engines"]["llama"]
    assert engine["api_key_env"] == "SRV_AUTH"  # a variable's name, not a secret: the archive must validate


def test_no_declared_secret_reaches_any_file_or_archive_member(sweep):
    work, _ = sweep
    files = _every_file(work)
    assert any("!" in name for name in files), "the archive was not read"
    assert "results/referenced/server.log" in files and "results/provenance.json" in files
    leaks = [
        (name, variable)
        for name, data in files.items()
        for variable, value in VALUES.items()
        if (value.encode() in data if len(value) > 8 else _as_a_word(value).search(data))
    ]
    assert leaks == []
    echoed = files["results/referenced/server.log"].decode()  # the stand-in logs its argv
    assert f"'--alias', '{REDACTED}'" in echoed and f"'--seed-note', '{REDACTED}'" in echoed


def test_the_sweep_provenance_records_only_what_engines_get(sweep):
    work, _ = sweep
    env = json.loads((work / "results" / "provenance.json").read_text())["env"]
    assert not set(VALUES) & set(env)  # neither passed through nor a default: no engine got them
    assert "PATH" in env


def test_a_variable_name_is_never_redacted_but_a_secret_key_still_is():
    config = {"engines": {"x": {"api_key_env": "SRV_AUTH", "env": {"HF_TOKEN": "hf_abc"}}}}
    assert redact_mapping(config) == {"engines": {"x": {"api_key_env": "SRV_AUTH", "env": {"HF_TOKEN": REDACTED}}}}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("argv ['--seed-note', '4242']", f"argv ['--seed-note', '{REDACTED}']"),
        ("--api-key=4242 ok", f"--api-key={REDACTED} ok"),
        ("n_ctx = 142420, t = 0.4242 s, id 4242a", "n_ctx = 142420, t = 0.4242 s, id 4242a"),  # other data stays
    ],
)
def test_a_short_declared_secret_is_redacted_where_it_stands_alone(text, expected):
    assert redact_values(text, [], declared=["4242"]) == expected
    assert redact_values(text.encode(), [], declared=["4242"]) == expected.encode()
