"""Security (group 7): no shell ever sees a config value, secrets never reach the disk, names stay in
results/, and a server bound beyond loopback is never silent.

The checks that read a sweep's outputs share the session's tiny stand-in sweep (conftest.Sweep: a
keep-going run, a rerun, the plan, the archive), planted with hostile flag values and with secrets in
the environment, in config ``env:`` and as a secret flag's value.
"""

from __future__ import annotations

import copy
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
from conftest import HOSTILE_ARGS, PWNED, SWEEP_SECRETS, run_session, session_spec, snakemake, write_config

from specsweep.plan.config import expand, validate_schema
from specsweep.plan.launchplan import plan

SECRETS = list(SWEEP_SECRETS.values())


def test_hostile_argument_values_pass_verbatim_and_never_run(sweep):
    assert all(sweep.steps[s].returncode == 0 for s in ("rerun", "plan", "archive"))
    assert not [p for p in PWNED if p.exists()], "a config value was run by a shell"
    argv = json.loads((sweep.results / "hostile" / "launch.json").read_text())["argv"]
    for flag, value in HOSTILE_ARGS.items():
        assert argv[argv.index(flag) + 1] == value  # one element, unchanged
    echoed = (sweep.results / "hostile" / "server.log").read_text()  # the stand-in logs its argv list
    assert all(repr(value) in echoed for value in HOSTILE_ARGS.values())


def test_commands_sh_quotes_every_value_so_a_shell_reads_back_the_exact_argv(sweep):
    script = (sweep.results / "commands.sh").read_text()
    line = next(x for x in script.splitlines() if "--alias" in x)
    planned = json.loads((sweep.results / "plan" / "hostile.json").read_text())["argv"]
    assert planned[planned.index("--chat-template") + 1] == HOSTILE_ARGS["--chat-template"]
    # A real shell expands the line's words (command substitution would run here if a value were
    # unquoted) and hands them to a function that prints them instead of launching anything.
    words = subprocess.run(
        ["/bin/sh", "-c", 'show() { for a; do printf "%s\\0" "$a"; done; }; show ' + line],
        capture_output=True,
        text=True,
        check=True,
        env={"MY_API_KEY": "k"},
    ).stdout
    assert not [p for p in PWNED if p.exists()], "commands.sh ran a config value"
    words = words.split("\0")[:-1]
    # the secret comes from the caller's environment; variables other configurations set are removed (env -u)
    assert words[0] == "env" and "MY_API_KEY=k" in words[: words.index(planned[0])]
    assert words[1:3] == ["-u", "HF_TOKEN"]
    assert words[words.index(planned[0]) :] == planned


def _every_file(root: Path) -> dict[str, bytes]:
    """Every file under results/ and logs/, with every archive member as its own entry."""
    files: dict[str, bytes] = {}
    for folder in (root / "results", root / "logs"):
        for path in folder.rglob("*"):
            if path.is_file():
                files[str(path.relative_to(root))] = path.read_bytes()
                if path.name.endswith(".tar.gz"):
                    with tarfile.open(fileobj=io.BytesIO(path.read_bytes()), mode="r:gz") as tar:
                        for member in tar.getmembers():
                            if member.isfile():
                                files[f"{path.name}!{member.name}"] = tar.extractfile(member).read()
    return files


def test_no_secret_reaches_any_file_or_the_archive(sweep):
    files = _every_file(sweep.workdir)
    assert any("!" in name for name in files), "the archive was not read"
    for expected in (
        "results/hostile/launch.json",
        "results/hostile/provenance.json",
        "results/provenance.json",
        "results/commands.sh",
        "results/hostile/server.log",
    ):
        assert expected in files
    leaks = [(name, secret) for name, data in files.items() for secret in SECRETS if secret.encode() in data]
    assert leaks == []
    launch = json.loads(files["results/hostile/launch.json"])
    assert launch["env_set"]["MY_API_KEY"] == "<redacted>" and launch["env"]["SPECSWEEP_FAULT_TOKEN"] == "<redacted>"
    assert "<redacted>" in files["results/hostile/server.log"].decode()  # the echoed --hf-token value
    assert 'MY_API_KEY="${MY_API_KEY}"' in files["results/commands.sh"].decode()


def test_no_partial_file_is_left_by_a_finished_sweep(sweep):
    assert [p for p in sweep.workdir.rglob("*.partial")] == []


@pytest.mark.parametrize(
    "name",
    [f"x; touch {PWNED[0]}", f"$(touch {PWNED[1]})", "../../escape"],
    ids=["semicolon", "substitution", "escape"],
)
def test_a_hostile_configuration_name_is_refused_and_writes_nothing(tmp_path, standin, model_file, name):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    write_config(work, standin, model_file, {"baseline": {"baseline": True}, name: {}})
    done = snakemake(work, "results/commands.sh")
    assert done.returncode != 0
    assert (
        f"configuration error: invalid configuration at 'configurations': '{name}' is not a name: letters, digits"
        in done.stderr
    )
    assert not [p for p in PWNED if p.exists()]
    assert {p.name for p in work.iterdir()} <= {"config.yaml", ".snakemake"}  # no results/, no logs/
    assert not (tmp_path / "escape").exists() and not (tmp_path / "a" / "escape").exists()


def test_a_host_beyond_loopback_is_warned_in_the_console_and_launch_json(tmp_path, standin, model_file, monkeypatch):
    spec = session_spec(tmp_path, standin, model_file, runs=1)
    spec["host"] = "0.0.0.0"
    error, progress = run_session(spec, monkeypatch)
    assert error is None, progress
    assert "cfg: WARNING: engines/llama/host is '0.0.0.0': the server will accept connections" in progress
    launch = json.loads((tmp_path / "results" / "cfg" / "launch.json").read_text())
    assert launch["warnings"] == [progress.split("cfg: WARNING: ")[1].splitlines()[0]]
    spec["host"] = "127.0.0.1"
    error, progress = run_session(spec, monkeypatch)
    assert error is None and "engines/llama/host" not in progress
    assert json.loads((tmp_path / "results" / "cfg" / "launch.json").read_text())["warnings"] == []


@pytest.mark.parametrize(
    ("host", "warned"),
    [("127.0.0.1", False), ("localhost", False), ("::1", False), ("0.0.0.0", True), ("192.168.1.5", True)],
)
def test_the_plan_warns_about_a_host_beyond_loopback(default_config, host, warned):
    config = copy.deepcopy(default_config)
    config["engines"]["llama"]["host"] = host
    config = validate_schema(config)
    baseline = expand(config)["baseline"]
    planned = plan(baseline, config["engines"]["llama"], config["models"])
    assert any("engines/llama/host" in w for w in planned["warnings"]) == warned
