"""A sweep as one deterministic ``.tar.gz``: results, provenance, code, and a sha256 manifest.

Deterministic so that packing the same files twice gives the same bytes (a hash of the archive
can go into a paper): members sorted by name, fixed mtime/uid/gid/mode, no owner names, and a
gzip header without time or file name. ``MANIFEST.sha256`` is in ``sha256sum`` format, so a
reviewer can check an unpacked archive with ``sha256sum -c MANIFEST.sha256`` and no specsweep.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TextIO

from specsweep.record.atomic import atomic_open
from specsweep.record.cache import sha256_bytes, sha256_file
from specsweep.record.redact import redact_values

MANIFEST = "MANIFEST.sha256"
MTIME = 946684800  # 2000-01-01T00:00:00Z: the same for every member, so no input looks newer than its output
# What the code snapshot holds: enough to rerun aggregation and figures with the code that made them.
CODE_PATTERNS = (
    "Snakefile",
    "pyproject.toml",
    "envs/*",
    "scripts/*.py",
    "workflow/**/*.smk",
    "workflow/**/*.rst",
    "workflow/**/*.yaml",
    "src/specsweep/**/*.py",
    "docs/*.md",
)


@dataclass
class Packed:
    path: Path
    files: dict[str, str]  # member name (below the top folder) -> sha256
    redacted: list[str] = field(default_factory=list)  # members in which a secret value was replaced


def code_files(source: Path) -> dict[str, Path]:
    """The workflow and library sources under ``source`` (a specsweep checkout), by relative name."""
    found: dict[str, Path] = {}
    for pattern in CODE_PATTERNS:
        for path in sorted(source.glob(pattern)):
            if path.is_file() and "__pycache__" not in path.parts:
                found[path.relative_to(source).as_posix()] = path
    return found


def manifest_text(files: dict[str, str]) -> str:
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(files.items()))


def parse_manifest(text: str) -> dict[str, str]:
    entries = {}
    for line in text.splitlines():
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise ValueError(f"{MANIFEST}: malformed line {line!r}")
        entries[name] = digest
    return entries


def pack(
    members: dict[str, bytes | Path],
    out: Path,
    top: str,
    secrets: Iterable[str] = (),
    redacted_by_key: Iterable[str] = (),
    declared: Iterable[str] = (),
) -> Packed:
    """Write ``out`` with every member under ``top/`` plus a manifest of their sha256. ``secrets`` are replaced
    by value in every member except ``redacted_by_key`` (e.g. the config, whose secret keys are redacted already:
    a value substitution there could only alter a key that is not secret)."""
    secrets, verbatim, declared = list(secrets), set(redacted_by_key), list(declared)
    contents: dict[str, bytes] = {}
    redacted = []
    for name in sorted(members):
        _check_name(name)
        source = members[name]
        data = source.read_bytes() if isinstance(source, Path) else source
        clean = data if name in verbatim else redact_values(data, secrets, declared)
        if clean != data:
            redacted.append(name)
        contents[name] = clean
    files = {name: sha256_bytes(data) for name, data in contents.items()}
    contents[MANIFEST] = manifest_text(files).encode()
    with (
        atomic_open(out, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for name in sorted(contents):
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(contents[name]), MTIME, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(contents[name]))
    return Packed(out, files, redacted)


def _check_name(name: str) -> None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not name or name == MANIFEST:
        raise ValueError(f"archive member name {name!r} is not a plain relative path")


def read_members(archive: Path) -> tuple[str, dict[str, bytes]]:
    """The top folder and every regular file (relative to it) of an archive; a missing file or one that is not
    a .tar.gz is a ValueError naming it (not a traceback from tarfile)."""
    if not Path(archive).is_file():
        raise ValueError(f"{archive}: no such file; give the path of a specsweep archive (<name>.tar.gz)")
    try:
        opened = tarfile.open(archive, "r:gz")  # noqa: SIM115 (closed by the with below; a failure here is worded)
    except (tarfile.ReadError, EOFError, OSError) as error:
        raise ValueError(f"{archive}: not a specsweep archive (a .tar.gz): {error}") from None
    with opened as tar:
        members = tar.getmembers()
        tops = {m.name.split("/", 1)[0] for m in members}
        if len(tops) != 1:
            raise ValueError(f"{archive}: expected one top folder, found {sorted(tops)}")
        top = tops.pop()
        files = {}
        for member in members:
            if not member.isfile():
                raise ValueError(f"{archive}: {member.name} is not a regular file")
            handle = tar.extractfile(member)
            assert handle is not None
            files[member.name.split("/", 1)[1]] = handle.read()
    return top, files


def verify(archive: Path) -> list[str]:
    """Problems found (empty when the manifest lists exactly the files present, with their sha256)."""
    _top, files = read_members(archive)
    if MANIFEST not in files:
        return [f"{MANIFEST} is missing"]
    return verify_files(
        parse_manifest(files.pop(MANIFEST).decode()), {name: sha256_bytes(data) for name, data in files.items()}
    )


def verify_files(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    problems = [f"{name}: listed in {MANIFEST} but missing" for name in sorted(expected.keys() - actual.keys())]
    problems += [f"{name}: present but not listed in {MANIFEST}" for name in sorted(actual.keys() - expected.keys())]
    problems += [
        f"{name}: sha256 {actual[name]} differs from {MANIFEST} ({expected[name]})"
        for name in sorted(expected.keys() & actual.keys())
        if expected[name] != actual[name]
    ]
    return problems


# Relative and absolute tolerance between a rebuilt table's numbers and the archived ones: the one rule of every
# rebuild check (the archive's own, its rebuild in an empty folder, the tests). Tables rebuilt with another
# numeric library differ in floating-point noise only (a zero residual printed as -3.9e-14 vs -5.8e-14).
FLOAT_NOISE = 1e-9
TEXT_TABLES = (".csv", ".md", ".tex")  # tables compared number by number; anything else (figures) byte by byte
# Where an archive keeps a second copy of each rebuilt text table: the rebuild overwrites results/, and the
# numbers are compared with these (whose sha256 is the manifest's entry for the table).
AS_ARCHIVED = "as-archived"


def rebuild_problems(folder: Path, names: Iterable[str]) -> tuple[list[str], list[str]]:
    """Compare rebuilt files in an unpacked archive with the archived ones: (problems, tables accepted within
    FLOAT_NOISE). A file is identical when its sha256 is the manifest's; a text table that differs is accepted
    when its ``AS_ARCHIVED`` copy is the archived one and every number agrees within FLOAT_NOISE (tables_equal).
    A file no newer than the unpacked manifest was not made by the rebuild: comparing it would vouch for the
    archived bytes themselves (bench_serve.json, never rerun, passed as "identical" whatever it held)."""
    names = list(names)
    manifest = folder / MANIFEST
    expected = parse_manifest(manifest.read_text())
    wanted = {n: expected[n] for n in names if n in expected}
    problems = [f"{n}: not in {MANIFEST}, nothing to compare with" for n in names if n not in expected]
    unpacked_at = manifest.stat().st_mtime
    for name in [n for n in wanted if (folder / n).is_file() and (folder / n).stat().st_mtime <= unpacked_at]:
        problems.append(f"{name}: not rebuilt (as old as {MANIFEST}: no job of the rebuild made it)")
        del wanted[name]
    actual = {n: sha256_bytes((folder / n).read_bytes()) for n in wanted if (folder / n).is_file()}
    within = [
        n
        for n in sorted(wanted.keys() & actual.keys())
        if wanted[n] != actual[n] and _within_noise(folder, n, wanted[n])
    ]
    return problems + verify_files(wanted, {**actual, **{n: wanted[n] for n in within}}), within


def _within_noise(folder: Path, name: str, digest: str) -> bool:
    """A rebuilt text table whose archived copy (``AS_ARCHIVED``) has the manifest's ``digest`` and the same
    numbers within FLOAT_NOISE."""
    copy = folder / AS_ARCHIVED / name
    if not name.endswith(TEXT_TABLES) or not copy.is_file():
        return False
    archived = copy.read_bytes()
    return sha256_bytes(archived) == digest and tables_equal(archived, (folder / name).read_bytes(), name)


# Forced: every job that makes a rebuilt file from archived records alone (the others follow from their
# outputs); allowed: those and the jobs downstream of them, so no engine can be launched.
REBUILD_COMMAND = (
    "PYTHONPATH=code/src snakemake --snakefile code/Snakefile --cores 1 --forcerun summary load_tables "
    "bench_serve effects --allowed-rules summary figures cycle_breakdown effects load_tables load_figures "
    "bench_serve search rebuild -- rebuild"
)


def rebuild_argv(command: str = REBUILD_COMMAND, python: str = sys.executable) -> list[str]:
    """A rebuild command (``PYTHONPATH=code/src snakemake ...``) as an argv for ``python``, run in the
    unpacked folder with PYTHONPATH=code/src."""
    return [python, "-m", *command.split(" ", 1)[1].split()]


def archived_rebuild_command(folder: Path) -> str:
    """The rebuild command an unpacked archive's own README gives: the archived code knows its own
    rules, which a later specsweep's ``REBUILD_COMMAND`` may not match."""
    prefix = REBUILD_COMMAND.split(" snakemake ", 1)[0] + " snakemake "
    for line in (folder / "README.md").read_text(encoding="utf-8").splitlines():
        if line.strip().startswith(prefix):
            return line.strip()
    raise ValueError(f"{folder / 'README.md'}: no rebuild command (a line starting {prefix!r})")


def rebuild_pythonpath() -> str:
    """The archived code first, then the caller's PYTHONPATH: where Snakemake itself may live (a GPU node's
    ``--target`` install has no other way in; replacing the path left the rebuild without Snakemake there)."""
    inherited = os.environ.get("PYTHONPATH")
    return os.pathsep.join(["code/src", inherited] if inherited else ["code/src"])


def rebuild_in(archive: Path, workdir: Path, log: TextIO) -> list[str]:
    """Unpack ``archive`` into ``workdir`` and run its README's rebuild command there, no engine reachable;
    return the problems (empty when the archive's own check passed: write_rebuild_check in its code)."""
    with tarfile.open(archive) as tar:
        tar.extractall(workdir, filter="data")
    [folder] = [p for p in workdir.iterdir() if p.is_dir()]
    env = {**os.environ, "PYTHONPATH": rebuild_pythonpath(), "SPECSWEEP_CACHE": str(workdir / "no-engine-cache")}
    argv = rebuild_argv(archived_rebuild_command(folder))
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, check=False)
    log.write(done.stdout + done.stderr)
    check = folder / "results" / "archive" / "rebuild-check.txt"
    if done.returncode == 0 and check.is_file():
        return []
    return [f"the archive's own rebuild command failed in {folder} (exit {done.returncode}; its output is above)"]


def tables_equal(archived: bytes, rebuilt: bytes, name: str) -> bool:
    """Byte-identical, or (for a text table: CSV, Markdown, LaTeX) the same text where every number
    agrees within ``FLOAT_NOISE`` (so ``-0.0 %`` equals ``+0.0 %``)."""
    if archived == rebuilt:
        return True
    if not name.endswith(TEXT_TABLES):
        return False
    parts_a = _NUMBER.split(archived.decode())
    parts_b = _NUMBER.split(rebuilt.decode())
    if len(parts_a) != len(parts_b):
        return False
    # re.split with one group alternates text, number, text, ...: odd positions are numbers.
    return all(
        a == b if i % 2 == 0 else math.isclose(float(a), float(b), rel_tol=FLOAT_NOISE, abs_tol=FLOAT_NOISE)
        for i, (a, b) in enumerate(zip(parts_a, parts_b, strict=True))
    )


_NUMBER = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)")


def readme(top: str, commit: str | None, dirty: bool | None) -> str:
    """The short how-to placed at the top of every archive."""
    code = f"commit {commit}{' with uncommitted changes' if dirty else ''}" if commit else "an unknown commit"
    return f"""# {top}: a specsweep sweep, archived

Everything a number from this sweep rests on: the sweep's config (`config/`), every measured run
(`results/<configuration>/runs/`), each server's log, launch record and per-request profile,
`results/summary.csv`, `results/runs.csv`, the figures, the paper macros and table, provenance
(`results/provenance.json` and `results/<configuration>/provenance.json`: code version, engine
build, model sha256, argv, redacted environment, host, GPUs) and the workflow code that produced
them (`code/`, specsweep at {code}).

## Check it
    sha256sum -c MANIFEST.sha256                           # in this folder, no specsweep needed
    python -m specsweep.archive verify <archive>.tar.gz    # or the archive itself

## Rebuild the aggregates (no engine, no GPU)
With the pinned environment (`code/envs/requirements.txt`; `pip install -r` it), in this folder:

    {REBUILD_COMMAND}

It recomputes every table (profiles from the archived server logs, summary, runs, drift, cost model,
paper files, requests, categories, load tables, bench_serve.json, effects and the search's next values)
and the figures from the archived runs, load windows and logs only (`--allowed-rules` means no server can be
launched and nothing rebuilt upstream), then checks each against this manifest and writes
`results/archive/rebuild-check.txt`; it fails if any file differs or was not rebuilt, except a text table
(CSV, Markdown, LaTeX) whose every number agrees within {FLOAT_NOISE:g} (relative or absolute) with its
archived copy in `{AS_ARCHIVED}/`: another machine's numeric libraries round the last digits differently.
The provenance files describe the sweep's machine and environment, which no rebuild reproduces: the check
lists them as not checked (`sha256sum -c` above still shows them unaltered).
Environment variables and flags named like secrets (a word ending in token, key, secret, password or
credential) were redacted, and the values of declared secrets (api_key_env, from_env) wherever they occurred.
"""


def files_of(paths: Iterable[str]) -> list[str]:
    """The paths with each folder (a rule's directory output: results/bench_serve/) replaced by its files,
    sorted: what the archive packs and its rebuild compares, file by file."""
    return [
        str(found)
        for path in paths
        for found in (sorted(f for f in Path(path).rglob("*") if f.is_file()) if Path(path).is_dir() else [path])
    ]


def pack_sweep(
    config: dict[str, Any],
    prompts: str,
    inputs: dict[str, list[str]],
    source: str,
    name: str,
    out: str,
    progress: TextIO,
) -> Packed:
    """The archive job: the redacted config with its prompts, every input file, the code and a README."""
    import os

    import yaml

    from specsweep.archive import archive_prompts
    from specsweep.measure import machine
    from specsweep.plan import references
    from specsweep.record.redact import REDACTED, secret_values

    kept, note = archive_prompts.member(
        Path(prompts), Path.cwd(), (config.get("archive") or {}).get("include_prompts", True)
    )
    if note:
        print(note, file=progress)
    config = {
        **config,
        "benchmark": {**config["benchmark"], "prompts": archive_prompts.member_name(Path(prompts))},
    }  # where it is kept
    members: dict[str, bytes | Path] = {
        "config/config.yaml": yaml.safe_dump(config, sort_keys=False).encode(),
        archive_prompts.member_name(Path(prompts)): kept,
        archive_prompts.PROVENANCE: json.dumps(archive_prompts.provenance(Path(prompts)), indent=1).encode(),
    }
    members.update({path: Path(path) for paths in inputs.values() for path in paths})
    # The rebuild overwrites results/: its check compares the numbers of each text table with this copy.
    members.update({f"{AS_ARCHIVED}/{p}": Path(p) for p in inputs.get("aggregates", []) if p.endswith(TEXT_TABLES)})
    members.update({f"code/{n}": path for n, path in code_files(Path(source)).items()})
    git = machine.git_state(source) or {}
    members["README.md"] = readme(name, git.get("commit"), git.get("dirty")).encode()
    # the config's secrets are redacted by key (config is the redacted config): no value substitution there
    # declared secrets (api_key_env, {from_env}) too, whatever their names and form (the config holds their names)
    packed = pack(
        members,
        Path(out),
        name,
        secret_values(dict(os.environ)),
        redacted_by_key=["config/config.yaml"],
        declared=references.declared_values(config),
    )
    for member in packed.redacted:
        print(f"WARNING: {member}: a secret value from the environment was replaced by {REDACTED}", file=progress)
    print(f"{packed.path}: {len(packed.files)} files + manifest, {packed.path.stat().st_size} bytes", file=progress)
    return packed


def write_verification(archive: str, out: str, progress: TextIO) -> None:
    """The verify job: every member against the manifest; a short certificate, or an error listing problems."""
    from specsweep.record.atomic import atomic_write

    path = Path(archive)
    problems = verify(path)
    for problem in problems:
        print(problem, file=progress)
    if problems:
        raise RuntimeError(f"{path}: the manifest does not verify ({len(problems)} problems, see above)")
    _top, files = read_members(path)
    atomic_write(
        out,
        f"{path.name}\nsha256 {sha256_file(path)}\n{len(files) - 1} files, every sha256 matches {MANIFEST}\n",
    )
    print(f"{path}: {len(files) - 1} files verified against {MANIFEST}", file=progress)


def write_rebuilt_in_empty_folder(archive: str, out: str, progress: TextIO) -> None:
    """The archive's own rebuild command, run in an empty folder (no engine reachable): every table and figure
    byte-identical to the manifest, or an error. The archive target is verified only after this succeeded."""
    import tempfile

    from specsweep.record.atomic import atomic_write

    path = Path(archive)
    print(f"{path}: rebuilding it in an empty folder with its README's command", file=progress)
    with tempfile.TemporaryDirectory(prefix="specsweep-rebuild-") as empty:
        problems = rebuild_in(path, Path(empty), progress)
    if problems:
        raise RuntimeError(f"{path}: {problems[0]}")
    atomic_write(
        out,
        f"{path.name}\nsha256 {sha256_file(path)}\nrebuilt in an empty folder with its README's command "
        f"({REBUILD_COMMAND}): every table and figure identical to {MANIFEST}, or a table's numbers within "
        f"{FLOAT_NOISE:g} of the archived ones; provenance not checked (its results/archive/rebuild-check.txt "
        f"lists every file)\n",
    )
    print(f"{path}: rebuilt from the archive alone, identical", file=progress)


def write_rebuild_check(
    folder: Path, names: list[str], not_checked: dict[str, str], out: str, progress: TextIO
) -> None:
    """The rebuild job: rebuilt files must equal the archived ones byte for byte, or (a text table) in every
    number within FLOAT_NOISE. ``not_checked``: the derived files no rebuild makes, with why; they are listed
    so, as nothing may pass for checked that was not."""
    from specsweep.record.atomic import atomic_write

    problems, within = rebuild_problems(folder, names)
    for problem in problems:
        print(problem, file=progress)
    if problems:
        raise RuntimeError(f"the rebuild differs from the archive in {len(problems)} files (see above)")
    for name in within:
        print(f"{name}: equal to the archived table within floating-point noise ({FLOAT_NOISE:g})", file=progress)
    for name, why in not_checked.items():
        print(f"{name}: not checked ({why})", file=progress)
    noise = f"within {FLOAT_NOISE:g}"
    atomic_write(
        out,
        "".join(f"{noise if n in within else 'identical'}  {n}\n" for n in names)
        + "".join(f"not checked  {n}  ({why})\n" for n, why in not_checked.items()),
    )
    print(
        f"rebuilt {len(names)} files: {len(names) - len(within)} byte-identical to the archive, {len(within)} "
        f"{noise}; {len(not_checked)} not checked",
        file=progress,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m specsweep.archive", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["verify"])
    parser.add_argument("archive", type=Path)
    args = parser.parse_args(argv)
    try:
        problems = verify(args.archive)
    except ValueError as error:
        print(f"python -m specsweep.archive: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"{args.archive}: {'FAILED' if problems else 'manifest verified'}")
    return 1 if problems else 0
