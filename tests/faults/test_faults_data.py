"""Data loss and silent wrongness: nothing measured is lost, and no file claims more than is on disk.

The sweep lifecycle (``lifecycle``) runs Snakemake as a user would, step by step, on one folder:
a failed keep-going sweep, its retry, a deleted run file, a description edit, a parameter change
whose relaunch fails. Session-level cases (full disk, paused client, machine lock) drive the
session directly; ``kill -9`` of Snakemake runs a sweep and kills it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml
from conftest import (
    executable_standin,
    failed_dirs,
    leftovers,
    results_of,
    session_spec,
    snakemake,
    spawn_driver,
    wait_for,
    write_config,
)
from workflow_runs import snakemake_argv

from specsweep.analyse.aggregate import summarise
from specsweep.plan import design
from specsweep.plan.config import ConfigError, Configuration, validate_schema
from specsweep.record.atomic import DamagedFile
from specsweep.record.results import read_run

SUMMARY = Path("results/summary.csv")


def bench_jobs(done: subprocess.CompletedProcess[str]) -> int:
    return (done.stdout + done.stderr).count("rule bench:")


def configurations_in(workdir: Path) -> dict[str, Configuration]:
    return design.configurations_of(validate_schema(yaml.safe_load((workdir / "config.yaml").read_text())))


def edit_config(workdir: Path, edit) -> None:
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    edit(config)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


class Lifecycle:
    """One folder, the steps a user takes; each step's Snakemake result and what was on disk after it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.standin = executable_standin(workdir / "bin")
        model = workdir / "model.gguf"
        model.write_bytes(b"GGUF stand-in")
        self.fault = workdir / "fault-on"
        self.fault.touch()
        write_config(
            workdir,
            self.standin,
            model,
            {
                "baseline": {"baseline": True},
                "other": {"args": {"--spec-draft-n-max": 4}},
                "dies": {
                    "args": {"--spec-draft-n-max": 6},
                    "env": {"STANDIN_MODE": "die-during=3", "STANDIN_ONLY_IF": str(self.fault)},
                },
            },
            runs=2,
        )
        self.steps: dict[str, subprocess.CompletedProcess[str]] = {}
        self.seen: dict[str, object] = {}

        # 1. a sweep that fails in one configuration, then the README's own retry of the same target
        self.step("keep-going", "--keep-going", str(SUMMARY))
        self.seen["provisional"] = pd.read_csv(workdir / SUMMARY)
        self.seen["provisional-mtime"] = (workdir / SUMMARY).stat().st_mtime
        self.fault.unlink()
        self.step("retry", str(SUMMARY))
        self.seen["retried"] = pd.read_csv(workdir / SUMMARY)

        # 2. a run file deleted after a complete sweep
        self.seen["deleted-run"] = json.loads((self.results / "other" / "runs" / "run_1.json").read_text())
        (self.results / "other" / "runs" / "run_1.json").unlink()
        self.step("deleted", str(SUMMARY))
        self.seen["after-deleted"] = pd.read_csv(workdir / SUMMARY)
        self.seen["after-deleted-runs"] = sorted(p.name for p in (self.results / "other" / "runs").iterdir())

        # 3. a damaged run file: the summary names it and sets it aside; the same command then measures it again
        (self.results / "dies" / "runs" / "run_0.json").write_text('{"run": 0, "tok')
        self.step("damaged", str(SUMMARY))
        self.step("after-damaged", str(SUMMARY))
        self.seen["after-damaged"] = pd.read_csv(workdir / SUMMARY)

        # 4. free text edited: nothing to do
        edit_config(workdir, lambda c: c["configurations"]["other"].update(description="a new description"))
        self.step("description", "-n", str(SUMMARY))

        # 5. parameters changed for two configurations, and the first relaunch (in the design's seeded
        #    order) fails at start: the previous sessions are kept in history/, the one not reached is `stale`.
        #    The order is seeded by the edited config's content (and its paths, which differ between test
        #    workers), so the failing one is chosen where it comes first in the order of the edited config.
        def change(failing: str, changed: str):
            def edit(config):
                config["configurations"][failing]["env"] = {"STANDIN_MODE": "exit-at-start"}
                config["configurations"][changed]["args"] = {"--spec-draft-n-max": 8}

            return edit

        original = (workdir / "config.yaml").read_text()
        for first, second in (("other", "dies"), ("dies", "other")):
            (workdir / "config.yaml").write_text(original)
            edit_config(workdir, change(first, second))
            order = [n for n in design.session_order(configurations_in(workdir)) if n in ("other", "dies")]
            if order == [first, second]:
                break
        else:
            raise AssertionError("neither edit puts its failing configuration first in the seeded order")
        self.relaunched = [first, second]
        self.step("changed", str(SUMMARY))
        self.seen["stale"] = pd.read_csv(workdir / SUMMARY)

    def step(self, name: str, *args: str) -> None:
        self.steps[name] = snakemake(self.workdir, *args)
        self.seen[f"left-{name}"] = [p.pid for p in leftovers(self.standin)]

    @property
    def results(self) -> Path:
        return self.workdir / "results"


@pytest.fixture(scope="module")
def lifecycle(tmp_path_factory: pytest.TempPathFactory) -> Lifecycle:
    return Lifecycle(tmp_path_factory.mktemp("lifecycle"))


def test_a_provisional_summary_never_satisfies_the_target(lifecycle):
    failed = lifecycle.steps["keep-going"]
    assert failed.returncode != 0
    provisional = lifecycle.seen["provisional"].set_index("configuration")
    assert provisional.loc["dies", "status"].startswith("failed (results/dies/failed/")
    assert lifecycle.seen["provisional-mtime"] == 0  # older than any input: never up to date
    retry = lifecycle.steps["retry"]  # before: "Nothing to be done", rc 0, dies never measured again
    assert retry.returncode == 0, retry.stderr[-3000:]
    assert bench_jobs(retry) == 1 and "Nothing to be done" not in retry.stderr
    retried = lifecycle.seen["retried"]
    # every run measured; one the rate check sets aside (a client starved by the tests beside it) still counts here
    assert (retried["status"] == "ok").all() and (retried["runs"] + retried["runs_excluded"] == 2).all()
    assert (retried["runs"] >= 1).all()


def test_a_deleted_run_file_is_noticed_and_its_configuration_measured_again(lifecycle):
    done = lifecycle.steps["deleted"]  # before: "Nothing to be done"; summary.csv claimed 2 runs with 1 on disk
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        "results/summary.csv will be remade: a run file it rests on is missing "
        "(results/other/runs/run_1.json)" in done.stderr
    )
    assert bench_jobs(done) == 1
    assert lifecycle.seen["after-deleted"].set_index("configuration").loc["other", "runs"] == 2
    assert "run_1.json" in lifecycle.seen["after-deleted-runs"]  # (step 5 may relaunch `other` later)
    # the run that was still there is not lost: the previous session is in history/
    kept = sorted((lifecycle.results / "other" / "history").iterdir())[0]  # (step 4 kept a later one)
    assert (kept / "runs" / "run_0.json").exists() and not (kept / "runs" / "run_1.json").exists()


def test_a_damaged_run_file_is_named_set_aside_and_measured_again(lifecycle):
    damaged = lifecycle.steps["damaged"]
    path = "results/dies/runs/run_0.json"
    assert damaged.returncode != 0
    assert f"{path}: damaged (not a run record: " in damaged.stderr and f"set aside as {path}.damaged" in damaged.stderr
    assert "dies: damaged (" not in damaged.stderr  # it was set aside: the provisional summary says what is missing
    again = lifecycle.steps["after-damaged"]  # before: "Nothing to be done" with the provisional summary in place
    assert again.returncode == 0, again.stderr[-3000:]
    assert bench_jobs(again) == 1
    assert (lifecycle.seen["after-damaged"]["status"] == "ok").all()
    assert any((lifecycle.results / "dies" / "history").glob("*/runs/run_0.json.damaged"))  # kept as evidence


def test_editing_a_description_reruns_nothing(lifecycle):
    done = lifecycle.steps["description"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Nothing to be done" in done.stdout + done.stderr


def test_a_failed_relaunch_after_a_parameter_change_loses_nothing_and_stale_rows_say_so(lifecycle):
    done = lifecycle.steps["changed"]
    assert done.returncode != 0  # the first relaunch fails at start
    output = done.stdout + done.stderr
    first, second = lifecycle.relaunched
    previous = {"other": 4, "dies": 6}  # --spec-draft-n-max each was measured with
    for name in (first, second):  # both were about to run: both previous sessions kept first
        assert f"{name}: the previous session (completed, " in output
        history = sorted((lifecycle.results / name / "history").iterdir())
        newest = history[-1]
        # (a run file set aside as .damaged in step 3 stays beside the runs as evidence)
        assert {p.name for p in (newest / "runs").glob("run_*.json")} == {"run_0.json", "run_1.json"}
        assert (newest / "launch.json").exists() and (newest / "server.log").exists()
        measured = json.loads((newest / "measured_under.json").read_text())
        assert measured["benchmark"]["runs"] == 2
        assert measured["configuration"]["args"] == {"--spec-draft-n-max": previous[name]}
    stale = lifecycle.seen["stale"].set_index("configuration")
    assert stale.loc[first, "status"].startswith("failed (")
    # the second was not reached: its old runs are listed as stale, labelled with the parameters they had
    assert stale.loc[second, "status"] == "stale" and stale.loc[second, "--spec-draft-n-max"] == previous[second]
    assert stale.loc["baseline", "status"] == "ok"
    assert all(not left for key, left in lifecycle.seen.items() if key.startswith("left-"))


def test_duplicate_keys_are_refused_by_snakemake_naming_key_and_line(tmp_path, standin, model_file):
    write_config(tmp_path, standin, model_file, {"baseline": {"baseline": True}})
    text = (tmp_path / "config.yaml").read_text()
    (tmp_path / "config.yaml").write_text(text + "benchmark:\n  runs: 1\n")
    line = text.count("\n") + 1
    done = snakemake(tmp_path, "-n", "all")
    assert done.returncode != 0
    assert f"line {line}: duplicate key 'benchmark' (first at line " in done.stdout + done.stderr
    assert not (tmp_path / "results").exists()


def test_a_schema_error_quotes_a_huge_value_only_in_part(default_config):
    default_config["benchmark"]["runs"] = ["x" * 100] * 10_000
    with pytest.raises(ConfigError) as error:
        validate_schema(default_config)
    assert "'benchmark/runs'" in str(error.value) and len(str(error.value)) < 600


# --- sessions ----------------------------------------------------------------------------------


def test_a_corrupt_run_file_is_named_in_the_error(tmp_path):
    from specsweep.record.results import load_runs

    path = tmp_path / "results" / "cfg" / "runs" / "run_0.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"run": 0, "tok')
    with pytest.raises(DamagedFile) as error:  # before: a bare JSONDecodeError naming no file
        load_runs([path])
    assert str(error.value).startswith(f"{path}: damaged (") and "delete it and rerun" in str(error.value)


def _unshare_tmpfs(
    size: str, folder: Path, command: list[str], copy_to: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with ``folder`` on a private tmpfs of ``size``; its content copied to ``copy_to`` after."""
    script = (
        'd=$2; out=$3; mount -t tmpfs -o size="$1" tmpfs "$d" || exit 97; shift 3; "$@"; rc=$?; '
        'cp -a "$d"/. "$out"/; exit $rc'
    )
    copy_to.mkdir(parents=True)
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", size, str(folder), str(copy_to), *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_a_full_disk_keeps_the_original_error_and_every_completed_run(tmp_path, standin, model_file):
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to give the session a small private disk")
    disk = tmp_path / "disk"
    disk.mkdir()
    spec = session_spec(
        disk, standin, model_file, env={"STANDIN_MODE": "fill-disk-during=3", "STANDIN_FILL": str(disk / "filler")}
    )
    spec["cache"] = str(tmp_path / "cache")
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    driver = [sys.executable, str(Path(__file__).with_name("drive_session.py")), str(tmp_path / "spec.json")]
    done = _unshare_tmpfs("1m", disk, driver, tmp_path / "after", {**os.environ, "SPECSWEEP_CACHE": spec["cache"]})
    if done.returncode == 97:
        pytest.skip(f"no private tmpfs here (unshare -rm; mount): {done.stderr.strip()[-300:]}")
    output = done.stdout + done.stderr
    assert done.returncode != 0
    original = "the server died during run 2/3 (1 completed) with signal SIGKILL"
    assert f"cfg: FAILED ({original}" in output  # the console has the original error, not ENOSPC
    [kept] = failed_dirs({"results": str(tmp_path / "after" / "results" / "cfg")})
    assert original in (kept / "error.txt").read_text()
    assert json.loads((kept / "launch.json").read_text())["status"] in ("ready", "failed")  # whole, never 0 bytes
    assert json.loads((kept / "runs" / "run_0.json").read_text())["tokens"] == 16  # the completed run is kept
    assert not (tmp_path / "after" / "results" / "cfg" / ".error-reserve").exists()
    assert leftovers(standin) == []


def test_a_paused_client_run_is_excluded_kept_and_counted(tmp_path, standin, model_file):
    """Ctrl-Z then fg of the client (SIGSTOP/SIGCONT) during run 2: the client's rate is wrong, the engine's is not."""
    spec = session_spec(tmp_path, standin, model_file, max_tokens=400, warmup_max_tokens=4, rate_tolerance_pct=10)
    driver = spawn_driver(spec, tmp_path)
    log = results_of(spec) / "server.log"
    assert wait_for(lambda: log.exists() and "completion 3:" in log.read_text(), 60, step_s=0.005)
    time.sleep(0.1)  # mid-decode (400 tokens, under a second; all fit the socket buffer, so the stand-in never
    # waits for the paused client, as llama-server, whose slots do not wait for HTTP). Earlier is caught too.
    os.kill(driver.pid, signal.SIGSTOP)
    time.sleep(2.0)  # past the engine's end: the client's decode interval runs to the resume
    os.kill(driver.pid, signal.SIGCONT)
    output, _ = driver.communicate(timeout=60)
    assert driver.returncode == 0, output[-3000:]
    assert "cfg: WARNING: run 2/3 is excluded from the statistics (kept in " in output
    runs = [read_run(results_of(spec) / "runs" / f"run_{i}.json") for i in range(3)]
    assert [bool(r.excluded) for r in runs] == [False, True, False]
    assert "the engine" in runs[1].excluded and "tok/s" in runs[1].excluded
    print(f"paused client: run 2 {runs[1].excluded}")
    configuration = Configuration(name="cfg", engine="llama", kind="llamacpp", baseline=True, args={}, env={})
    row = summarise({"cfg": configuration}, {"cfg": runs}, {}).iloc[0]
    assert row["runs"] == 2 and row["runs_excluded"] == 1
    assert "1 run(s) excluded: client and engine rates disagree" in row["warnings"]
    assert leftovers(standin) == []


def test_a_sweep_waiting_on_the_machine_lock_says_who_holds_it_and_for_how_long(
    tmp_path, standin, model_file, monkeypatch
):
    from specsweep.record.locks import holding, measure_lock_path

    spec = session_spec(tmp_path, standin, model_file)
    monkeypatch.setenv("SPECSWEEP_CACHE", spec["cache"])  # the lock of the driver's cache on this node

    class Lines(list):
        def write(self, text):
            self.append(text)

        def flush(self):
            pass

    with holding(measure_lock_path(), "engine other-build", Lines()):
        driver = spawn_driver(spec, tmp_path)
        line = wait_for(lambda: driver.stdout.readline(), 30)
        time.sleep(0.2)
    output, _ = driver.communicate(timeout=60)
    assert driver.returncode == 0, output[-3000:]
    assert "cfg: waiting for exclusive use of the machine (" in line
    assert f"held by engine other-build (pid {os.getpid()} on " in line and " s\n" in line
    assert leftovers(standin) == []


# --- kill -9 of Snakemake ----------------------------------------------------------------------


def _job_processes(workdir: Path) -> list[psutil.Process]:
    """Snakemake's job scripts working in ``workdir`` (the process walk of job_guard, from outside)."""
    found = []
    for process in psutil.process_iter(["cmdline", "cwd", "status"]):
        if (
            process.info["status"] != psutil.STATUS_ZOMBIE
            and process.info["cwd"] == str(workdir)
            and any(".snakemake/scripts/" in arg for arg in process.info["cmdline"] or [])
        ):
            found.append(process)
    return found


def test_kill_9_of_snakemake_takes_its_job_along_and_the_documented_recovery_works(tmp_path, standin, model_file):
    stall = tmp_path / "stall-on"
    stall.touch()
    write_config(
        tmp_path,
        standin,
        model_file,
        {"baseline": {"baseline": True, "env": {"STANDIN_MODE": "stall-mid-stream=2", "STANDIN_ONLY_IF": str(stall)}}},
        warmup_requests=0,
        request_timeout_s=120,
    )
    env = {**os.environ, "SPECSWEEP_CACHE": str(tmp_path / "cache")}
    job = subprocess.Popen(
        snakemake_argv(tmp_path, str(SUMMARY)),
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log = tmp_path / "results" / "baseline" / "server.log"
    assert wait_for(lambda: log.exists() and "stalling mid-stream" in log.read_text(), 60)
    # while it runs, --unlock is refused, naming the live run
    unlock = snakemake(tmp_path, "--unlock")
    assert unlock.returncode != 0 and "another run of this folder is still alive" in unlock.stderr
    assert f"pid {job.pid}: " in unlock.stderr
    os.kill(job.pid, signal.SIGKILL)  # Snakemake alone, as `kill -9 <pid>` does
    killed = time.monotonic()
    gone = wait_for(lambda: not leftovers(standin) and not _job_processes(tmp_path), 15)
    print(f"kill -9 of Snakemake: its job and engine gone after {time.monotonic() - killed:.2f} s")
    job.communicate(timeout=30)
    left = [p.pid for p in leftovers(standin) + _job_processes(tmp_path)]
    for pid in left:  # never leave a mess, even when failing
        os.kill(pid, signal.SIGKILL)
    assert gone, f"the job or engine outlived Snakemake's kill -9: {left}"
    [kept] = failed_dirs({"results": str(tmp_path / "results" / "baseline")})
    assert json.loads((kept / "runs" / "run_0.json").read_text())["run"] == 0  # the completed run is kept
    # the README's recovery: --unlock (safe: nothing alive now), then the same target with --rerun-incomplete
    stall.unlink()
    plain = snakemake(tmp_path, str(SUMMARY))
    assert plain.returncode != 0 and "--rerun-incomplete" in plain.stderr
    assert snakemake(tmp_path, "--unlock").returncode == 0
    again = snakemake(tmp_path, "--rerun-incomplete", str(SUMMARY))
    assert again.returncode == 0, again.stderr[-3000:]
    assert (pd.read_csv(tmp_path / SUMMARY)["status"] == "ok").all()
    assert (kept / "runs" / "run_0.json").exists()


# --- archive -----------------------------------------------------------------------------------


def test_the_archive_is_called_verified_only_after_its_own_rebuild_succeeds(sweep):
    """`snakemake archive` packs, checks the manifest, then runs the archive README's rebuild command in an
    empty folder; the archived config keeps every number (no value redaction of non-secret keys)."""
    from specsweep.archive import archive

    done = sweep.steps["archive"]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rebuilt from the archive alone, identical" in done.stderr
    assert done.stderr.index("rebuilt from the archive alone") < done.stderr.index("files verified against")
    [rebuilt] = (sweep.results / "archive").glob("*.rebuilt.txt")
    assert "rebuilt in an empty folder with its README's command" in rebuilt.read_text()
    assert [p.name for p in (sweep.results / "archive").glob("*.verified.txt")] == [
        rebuilt.name.replace(".rebuilt.", ".verified.")
    ]
    [packed] = (sweep.results / "archive").glob("*.tar.gz")
    config = yaml.safe_load(archive.read_members(packed)[1]["config/config.yaml"])
    assert config["benchmark"]["max_tokens"] == 16 and config["benchmark"]["warmup_max_tokens"] == 4
