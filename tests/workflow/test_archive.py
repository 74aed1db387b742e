"""Archive: deterministic packing, manifest verification, secrets; end to end: archive, rebuild, report."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from workflow_runs import snakemake

from specsweep.archive import archive

REPO = Path(__file__).resolve().parents[2]
PLANTED = "planted-9f8e7d6c5b4a-secret"


def members(tmp_path: Path) -> dict[str, bytes | Path]:
    (tmp_path / "run.json").write_text('{"tok_s": 61.5}\n')
    return {
        "results/a/run.json": tmp_path / "run.json",
        "results/summary.csv": b"configuration,runs\nbase,5\n",
        "README.md": b"hello\n",
    }


def test_pack_is_deterministic_and_normalised(tmp_path):
    one = archive.pack(members(tmp_path), tmp_path / "one.tar.gz", "sweep")
    os.utime(tmp_path / "run.json", (1, 1))  # a file's own mtime must not leak into the archive
    two = archive.pack(members(tmp_path), tmp_path / "two.tar.gz", "sweep")
    assert one.path.read_bytes() == two.path.read_bytes()
    with tarfile.open(one.path) as tar:
        infos = tar.getmembers()
    assert [i.name for i in infos] == sorted(i.name for i in infos)
    assert {(i.mtime, i.uid, i.gid, i.uname, i.gname, i.mode) for i in infos} == {(archive.MTIME, 0, 0, "", "", 0o644)}
    with gzip.open(one.path) as gz:
        gz.read()
    assert one.path.read_bytes()[4:8] == b"\0\0\0\0"  # gzip header mtime 0


def test_manifest_lists_every_file_and_verifies(tmp_path):
    packed = archive.pack(members(tmp_path), tmp_path / "a.tar.gz", "sweep")
    top, files = archive.read_members(packed.path)
    assert top == "sweep"
    manifest = archive.parse_manifest(files.pop(archive.MANIFEST).decode())
    assert manifest == {name: archive.sha256_bytes(data) for name, data in files.items()}
    assert archive.verify(packed.path) == []


def test_verify_finds_changed_missing_and_extra_files(tmp_path):
    packed = archive.pack(members(tmp_path), tmp_path / "a.tar.gz", "sweep")
    _top, files = archive.read_members(packed.path)
    files["results/summary.csv"] = b"configuration,runs\nbase,6\n"
    del files["README.md"]
    files["extra.txt"] = b"x"
    tampered = tmp_path / "t.tar.gz"
    with tarfile.open(tampered, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"sweep/{name}")
            info.size = len(data)
            tar.addfile(info, __import__("io").BytesIO(data))
    problems = archive.verify(tampered)
    assert any(p.startswith("README.md: listed") for p in problems)
    assert any(p.startswith("extra.txt: present but not listed") for p in problems)
    assert any(p.startswith("results/summary.csv: sha256") for p in problems)
    assert archive.main(["verify", str(tampered)]) == 1
    assert archive.main(["verify", str(packed.path)]) == 0


def test_secret_values_are_redacted_when_packing(tmp_path):
    data = members(tmp_path)
    data["results/a/server.log"] = f"started with key {PLANTED}\n".encode()
    packed = archive.pack(data, tmp_path / "a.tar.gz", "sweep", secrets=[PLANTED, "ab"])
    assert packed.redacted == ["results/a/server.log"]
    _top, files = archive.read_members(packed.path)
    assert files["results/a/server.log"] == b"started with key <redacted>\n"
    assert archive.verify(packed.path) == []


def test_the_verify_job_writes_a_certificate_or_fails_naming_the_problems(tmp_path):
    packed = archive.pack(members(tmp_path), tmp_path / "a.tar.gz", "sweep")
    progress = io.StringIO()
    archive.write_verification(str(packed.path), str(tmp_path / "ok.txt"), progress)
    assert "3 files, every sha256 matches MANIFEST.sha256" in (tmp_path / "ok.txt").read_text()
    _top, files = archive.read_members(packed.path)
    files["README.md"] = b"changed\n"
    tampered = tmp_path / "t.tar.gz"
    with tarfile.open(tampered, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"sweep/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(RuntimeError, match="does not verify"):
        archive.write_verification(str(tampered), str(tmp_path / "bad.txt"), progress)
    assert "README.md: sha256" in progress.getvalue() and not (tmp_path / "bad.txt").exists()


def test_the_rebuild_keeps_the_callers_python_path_after_the_archived_code(monkeypatch):
    """On a GPU node Snakemake was importable only through PYTHONPATH (a --target install): the rebuild in an
    empty folder replaced that path with code/src and failed with "No module named snakemake"."""
    monkeypatch.setenv("PYTHONPATH", f"/node/site{os.pathsep}/node/sgsite")
    assert archive.rebuild_pythonpath().split(os.pathsep) == ["code/src", "/node/site", "/node/sgsite"]
    monkeypatch.delenv("PYTHONPATH")
    assert archive.rebuild_pythonpath() == "code/src"


def unpacked_manifest(folder: Path, files: dict[str, str]) -> None:
    """The manifest of ``files`` (name -> archived text), dated as tar unpacks it: the archive's fixed mtime."""
    manifest = folder / archive.MANIFEST
    manifest.write_text(archive.manifest_text({n: archive.sha256_bytes(text) for n, text in files.items()}))
    os.utime(manifest, (archive.MTIME, archive.MTIME))


def test_the_rebuild_job_compares_rebuilt_files_with_the_manifest(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "summary.csv").write_text("a\n")
    unpacked_manifest(tmp_path, {"results/summary.csv": "a\n"})
    archive.write_rebuild_check(tmp_path, ["results/summary.csv"], {}, str(tmp_path / "check.txt"), io.StringIO())
    assert (tmp_path / "check.txt").read_text() == "identical  results/summary.csv\n"
    (tmp_path / "results" / "summary.csv").write_text("b\n")
    with pytest.raises(RuntimeError, match="differs from the archive in 1 files"):
        archive.write_rebuild_check(tmp_path, ["results/summary.csv"], {}, str(tmp_path / "again.txt"), io.StringIO())


def test_a_file_the_rebuild_did_not_make_is_refused_not_called_identical(tmp_path):
    """bench_serve.json was never rerun by the rebuild: doubled, with its manifest line updated, it passed as
    "identical" (issue 35 item 4). A file as old as the unpacked manifest was not rebuilt, whatever it holds."""
    (tmp_path / "results").mkdir()
    kept = tmp_path / "results" / "bench_serve.json"
    kept.write_text("{}\n")
    os.utime(kept, (archive.MTIME, archive.MTIME))  # as unpacked: no job of the rebuild wrote it
    unpacked_manifest(tmp_path, {"results/bench_serve.json": "{}\n"})
    said = io.StringIO()
    with pytest.raises(RuntimeError, match="differs from the archive in 1 files"):
        archive.write_rebuild_check(tmp_path, ["results/bench_serve.json"], {}, str(tmp_path / "c.txt"), said)
    assert "results/bench_serve.json: not rebuilt (as old as MANIFEST.sha256" in said.getvalue()
    assert not (tmp_path / "c.txt").exists()


def test_derived_files_no_rebuild_makes_are_listed_as_not_checked(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "summary.csv").write_text("a\n")
    unpacked_manifest(tmp_path, {"results/summary.csv": "a\n"})
    said = io.StringIO()
    why = {"results/provenance.json": "the sweep's machine"}
    archive.write_rebuild_check(tmp_path, ["results/summary.csv"], why, str(tmp_path / "check.txt"), said)
    assert (tmp_path / "check.txt").read_text() == (
        "identical  results/summary.csv\nnot checked  results/provenance.json  (the sweep's machine)\n"
    )
    assert "results/provenance.json: not checked (the sweep's machine)" in said.getvalue()
    assert "1 not checked" in said.getvalue()


def unpacked_with_table(tmp_path: Path, archived: str, rebuilt: str, copy: str | None) -> Path:
    """An unpacked archive whose results/costmodel.csv was ``archived`` and is now ``rebuilt``; ``copy``: its
    as-archived copy (None: an archive packed before copies were kept)."""
    (tmp_path / "results").mkdir(parents=True)
    (tmp_path / "results" / "costmodel.csv").write_text(rebuilt)
    if copy is not None:
        (tmp_path / archive.AS_ARCHIVED / "results").mkdir(parents=True)
        (tmp_path / archive.AS_ARCHIVED / "results" / "costmodel.csv").write_text(copy)
    unpacked_manifest(tmp_path, {"results/costmodel.csv": archived})
    return tmp_path


NOISE = ("a,b\nx,-3.85247e-14\n", "a,b\nx,-5.77871e-14\n")  # a zero residual, rebuilt on another machine


def test_the_archives_own_check_accepts_floating_point_noise_and_nothing_else(tmp_path):
    """One rule for the archive's own check and the tests: a table's numbers within FLOAT_NOISE of the archived
    table (its as-archived copy), nothing else; the h200-load archive failed its README's command on this."""
    folder = unpacked_with_table(tmp_path / "noise", NOISE[0], NOISE[1], copy=NOISE[0])
    archive.write_rebuild_check(folder, ["results/costmodel.csv"], {}, str(folder / "check.txt"), io.StringIO())
    assert (folder / "check.txt").read_text() == "within 1e-09  results/costmodel.csv\n"
    for name, (archived, rebuilt, copy) in {
        "real-change": ("a,b\nx,295.101\n", "a,b\nx,295.102\n", "a,b\nx,295.101\n"),
        "no-copy": (*NOISE, None),  # nothing to compare the numbers with
        "copy-not-archived": (NOISE[0], NOISE[1], NOISE[1]),  # a copy that is not what the manifest recorded
    }.items():
        folder = unpacked_with_table(tmp_path / name, archived, rebuilt, copy)
        with pytest.raises(RuntimeError, match="differs from the archive in 1 files"):
            archive.write_rebuild_check(folder, ["results/costmodel.csv"], {}, str(folder / "check.txt"), io.StringIO())


def test_the_pack_job_keeps_config_prompts_inputs_code_and_readme(tmp_path, default_config, monkeypatch):
    monkeypatch.chdir(tmp_path)  # inputs are relative to the working directory, as in a job
    Path("prompts.txt").write_text("hello\n")
    Path("results/a").mkdir(parents=True)
    Path("results/a/launch.json").write_text("{}")
    default_config["benchmark"]["prompts"] = "prompts.txt"
    Path("results/summary.csv").write_text("configuration\na\n")
    Path("results/figures").mkdir()
    Path("results/figures/t.png").write_bytes(b"\x89PNG")
    inputs = {"launches": ["results/a/launch.json"], "aggregates": ["results/summary.csv", "results/figures/t.png"]}
    packed = archive.pack_sweep(default_config, "prompts.txt", inputs, str(REPO), "sweep", "s.tar.gz", io.StringIO())
    _top, files = archive.read_members(packed.path)
    assert files["config/prompts.txt"] == b"hello\n" and files["results/a/launch.json"] == b"{}"
    # each rebuilt text table twice (the rebuild's check compares its numbers with the copy), figures once
    assert files[f"{archive.AS_ARCHIVED}/results/summary.csv"] == files["results/summary.csv"]
    assert f"{archive.AS_ARCHIVED}/results/figures/t.png" not in files
    assert yaml.safe_load(files["config/config.yaml"])["benchmark"]["prompts"] == "config/prompts.txt"
    assert default_config["benchmark"]["prompts"] == "prompts.txt"  # the job's config is not changed
    assert "code/Snakefile" in files and "code/src/specsweep/jobs.py" in files and b"sweep" in files["README.md"]
    assert archive.verify(packed.path) == []


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "a/../../x", archive.MANIFEST, ""])
def test_unsafe_member_names_are_refused(tmp_path, name):
    with pytest.raises(ValueError):
        archive.pack({name: b"x"}, tmp_path / "a.tar.gz", "sweep")


def test_code_snapshot_holds_the_workflow():
    code = archive.code_files(REPO)
    for name in (
        "Snakefile",
        "workflow/rules/archive.smk",
        "scripts/pack_archive.py",
        "src/specsweep/archive/archive.py",
        "envs/requirements.txt",
        "pyproject.toml",
    ):
        assert name in code
    assert not any("__pycache__" in name for name in code)


# End to end on the real llama-server: a tiny sweep with a secret planted in its environment.


@pytest.fixture(scope="module")
def archived(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("sweep")
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    config["benchmark"]["prompts"] = str(REPO / "config" / "prompts.txt")
    config["configurations"]["ngram"]["env"] = {"SPECSWEEP_CONFIG_TOKEN": PLANTED + "-config"}
    # Engines get a clean environment: the planted caller's secret reaches them only passed through.
    config["environment"] = {"pass_through": ["SPECSWEEP_TEST_TOKEN"]}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "SPECSWEEP_TEST_TOKEN": PLANTED}
    done = snakemake(workdir, "all", env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    packed = snakemake(workdir, "archive", env=env)
    assert packed.returncode == 0, packed.stderr[-4000:]
    return workdir


def the_archive(workdir: Path) -> Path:
    [found] = (workdir / "results" / "archive").glob("specsweep-*.tar.gz")
    return found


@pytest.mark.engine
def test_archive_holds_the_sweep_and_verifies(archived):
    path = the_archive(archived)
    assert archive.verify(path) == []
    assert (archived / "results" / "archive" / path.name.replace(".tar.gz", ".verified.txt")).is_file()
    _top, files = archive.read_members(path)
    for name in (
        "README.md",
        "config/config.yaml",
        "config/prompts.txt",
        "results/summary.csv",
        "results/runs.csv",
        "results/provenance.json",
        "results/ngram/provenance.json",
        "results/ngram/server.log",
        "results/ngram/profile.csv",
        "results/ngram/runs/run_1.json",
        "results/baseline/launch.json",
        "results/figures/throughput.png",
        "results/figures/acceptance.svg",
        "results/paper/macros.tex",
        "results/paper/summary_table.tex",
        "results/engine/llama.json",
        "results/models/smollm2-135m.json",
        "code/Snakefile",
        "code/src/specsweep/analyse/aggregate.py",
    ):
        assert name in files, name
    assert b'"machine_captured": "at launch"' in files["results/ngram/provenance.json"]


@pytest.mark.engine
def test_no_planted_secret_anywhere_in_the_archive(archived):
    path = the_archive(archived)
    _top, files = archive.read_members(path)
    leaks = [name for name, data in files.items() if PLANTED.encode() in data]
    assert leaks == []
    assert PLANTED.encode() not in gzip.decompress(path.read_bytes())  # names and headers too
    assert b"SPECSWEEP_TEST_TOKEN" in files["results/ngram/launch.json"]  # it was there, redacted


@pytest.mark.engine
def test_packing_again_gives_the_same_bytes(archived):
    path = the_archive(archived)
    before, (_top, old) = path.read_bytes(), archive.read_members(path)
    # the pack job alone: the rebuild and verification after it are the fixture's (and cost a minute more)
    again = snakemake(archived, "--forcerun", "archive_pack", "--", "archive_pack")
    assert again.returncode == 0, again.stderr[-3000:]
    _top, new = archive.read_members(path)
    assert {n: d for n, d in new.items() if n.startswith(("results/", "config/"))} == {
        n: d for n, d in old.items() if n.startswith(("results/", "config/"))
    }
    assert path.read_bytes() == before  # the checkout (code/, README's commit) does not change within a test


@pytest.mark.engine
def test_rebuild_from_the_archive_is_byte_identical_without_the_engine(archived, tmp_path):
    path = the_archive(archived)
    with tarfile.open(path) as tar:
        tar.extractall(tmp_path, filter="data")
    [folder] = tmp_path.iterdir()
    readme = (folder / "README.md").read_text()
    assert archive.REBUILD_COMMAND in readme
    originals = {n: (folder / n).read_bytes() for n in ("results/summary.csv", "results/figures/throughput.png")}
    # The README's command, run as documented: the archived code, no engine on PATH or in any cache.
    env = {**os.environ, "PYTHONPATH": "code/src", "SPECSWEEP_CACHE": str(tmp_path / "empty-cache")}
    done = subprocess.run(
        [sys.executable, "-m", *archive.REBUILD_COMMAND.split(" ", 1)[1].split()],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    for rule in ("summary", "figures", "rebuild"):
        assert f"rule {rule}:" in log or f"localrule {rule}:" in log, rule
    for rule in ("engine", "model", "bench", "provenance"):
        assert f"rule {rule}:" not in log and f"localrule {rule}:" not in log, rule
    check = (folder / "results" / "archive" / "rebuild-check.txt").read_text()
    assert "identical  results/summary.csv" in check and "identical  results/figures/throughput.svg" in check
    assert {n: (folder / n).read_bytes() for n in originals} == originals
    assert not (tmp_path / "empty-cache").exists()


@pytest.mark.engine
def test_report_has_figures_and_captions(archived):
    done = snakemake(archived, "--report", "results/report.html")
    assert done.returncode == 0, done.stderr[-3000:]
    html = (archived / "results" / "report.html").read_text()
    for text in (
        "throughput.png",
        "acceptance.png",
        "summary.csv",
        "macros.tex",
        "provenance.json",
        "Decode throughput per configuration",
    ):
        assert text in html, text


def test_a_swept_secret_env_value_stays_out_of_summary(default_config):
    """Grid axes become summary.csv columns; an env axis named like a secret must not carry its value."""
    from run_records import runs_of

    from specsweep.analyse.aggregate import summarise
    from specsweep.plan.config import expand, validate_schema

    default_config["configurations"]["ngram"]["grid"]["env"] = {"HF_TOKEN": ["sekrit01", "sekrit02"]}
    del default_config["configurations"]["ngram"]["grid"]["name"]  # (the default name holds the value: see config)
    configurations = expand(validate_schema(default_config))
    run = {
        "run": 0,
        "prompt_index": 0,
        "tokens": 500,
        "text_sha256": "t",
        "speculation": None,
        "client": {"decode_tokens_per_s": 60.0, "ttft_s": 0.1, "itl_median_s": 0.01},
        "engine": {},
    }
    frame = summarise(configurations, runs_of({name: [run] for name in configurations}), {})
    swept = frame.loc[frame["env:HF_TOKEN"].notna(), "env:HF_TOKEN"]
    assert len(swept) == 6 and set(swept) == {"<redacted>"}


def test_config_redaction_keeps_the_config_valid(default_config):
    """The archived config must still validate: counts named *_tokens stay, secrets go."""
    from specsweep.plan.config import expand, validate_schema
    from specsweep.record.redact import redact_mapping

    default_config["engines"]["llama"]["env"] = {"HF_TOKEN": PLANTED}
    default_config["engines"]["llama"]["args"]["--api-key"] = PLANTED
    redacted = redact_mapping(validate_schema(default_config))
    assert PLANTED not in repr(redacted)
    counts = {key: default_config["benchmark"][key] for key in ("max_tokens", "warmup_max_tokens")}
    assert {key: redacted["benchmark"][key] for key in counts} == counts
    assert redacted["engines"]["llama"]["args"]["-c"] == 2048
    assert len(expand(validate_schema(redacted))) == len(expand(validate_schema(default_config)))
    grid = redact_mapping({"grid": {"env": {"MY_TOKEN": [PLANTED, PLANTED + "2"]}}})
    assert grid == {"grid": {"env": {"MY_TOKEN": ["<redacted>1", "<redacted>2"]}}}  # still distinct axis values


def test_the_archived_config_is_never_redacted_by_value(tmp_path):
    """The H200 archive had `max_tokens: <redacted>`: an environment secret whose value was an ordinary
    number. The config's secrets are redacted by key; value substitution never touches it."""
    data = members(tmp_path)
    config = f"benchmark:\n  max_tokens: 500\nengines:\n  e:\n    env:\n      NOTE: {PLANTED}\n".encode()
    data["config/config.yaml"] = config
    data["results/a/server.log"] = f"key {PLANTED}\n".encode()
    packed = archive.pack(
        data, tmp_path / "a.tar.gz", "sweep", secrets=[PLANTED, "500"], redacted_by_key=["config/config.yaml"]
    )
    _top, files = archive.read_members(packed.path)
    assert files["config/config.yaml"] == config
    assert files["results/a/server.log"] == b"key <redacted>\n"
    assert files["results/a/run.json"] == b'{"tok_s": 61.5}\n'


EXAMPLE_ARCHIVES = sorted((REPO / "docs" / "examples").glob("*/*.tar.gz"))


def test_there_are_example_archives():
    assert EXAMPLE_ARCHIVES, "docs/examples/ holds no archive: the test below would check nothing"


@pytest.mark.workflow
@pytest.mark.parametrize("path", EXAMPLE_ARCHIVES, ids=[p.parent.name for p in EXAMPLE_ARCHIVES])
def test_a_committed_example_archive_rebuilds_in_an_empty_folder_with_its_own_command(path, tmp_path):
    log = io.StringIO()
    problems = archive.rebuild_in(path, tmp_path, log)
    assert problems == [], log.getvalue()[-4000:]


@pytest.mark.parametrize("path", EXAMPLE_ARCHIVES, ids=[p.parent.name for p in EXAMPLE_ARCHIVES])
def test_a_committed_example_archive_checks_its_tables_by_the_one_rule(path):
    """Its own rebuild check is the one the tests apply: every rebuilt text table has its as-archived copy, so
    another machine's floating-point noise (and nothing else) is accepted by the archive's own command."""
    _top, files = archive.read_members(path)
    tables = [n for n in files if n.startswith("results/") and n.endswith(archive.TEXT_TABLES)]
    aggregates = [n for n in tables if n.endswith(("summary.csv", "runs.csv", "costmodel.csv", "load.csv"))]
    assert aggregates, "no rebuilt table in the archive"
    for name in aggregates:
        assert files.get(f"{archive.AS_ARCHIVED}/{name}") == files[name], name
    assert b"within 1e-09" in files["README.md"] or f"{archive.FLOAT_NOISE:g}".encode() in files["README.md"]


@pytest.mark.parametrize(
    ("archived", "rebuilt", "name", "equal"),
    [
        (b"a,b\nx,-3.85247e-14\n", b"a,b\nx,-5.77871e-14\n", "results/costmodel.csv", True),  # a zero residual's noise
        (b"a,b\nx,295.101\n", b"a,b\nx,295.102\n", "results/costmodel.csv", False),  # a real change
        (b"a,b\nx,ok\n", b"a,b\nx,stale\n", "results/summary.csv", False),
        (b"a,b\nx,1\n", b"a,b,c\nx,1,2\n", "results/summary.csv", False),  # another shape
        (b"predicted 312.1 (-0.0 %)\n", b"predicted 312.1 (+0.0 %)\n", "results/costmodel.md", True),
        (b"predicted 312.1 (-0.1 %)\n", b"predicted 312.1 (+0.1 %)\n", "results/costmodel.md", False),
        (b"\x89PNG-a", b"\x89PNG-b", "results/figures/throughput.png", False),  # figures stay byte-identical
    ],
)
def test_rebuilt_tables_may_differ_from_the_archived_ones_only_in_floating_point_noise(archived, rebuilt, name, equal):
    assert archive.tables_equal(archived, rebuilt, name) is equal


@pytest.mark.parametrize(
    ("given", "said"), [("missing.tar.gz", "no such file"), ("text.tar.gz", "not a specsweep archive")]
)
def test_the_archive_commands_name_a_file_that_is_not_an_archive(tmp_path, capsys, given, said):
    """They printed tarfile's traceback (FileNotFoundError, ReadError: not a gzip file)."""
    from specsweep.archive import markdown

    (tmp_path / "text.tar.gz").write_text("not an archive\n")
    path = str(tmp_path / given)
    assert archive.main(["verify", path]) == 2
    assert markdown.main([path, "summary"]) == 2
    printed = capsys.readouterr().err
    assert printed.count(f"{path}: {said}") == 2 and "Traceback" not in printed
