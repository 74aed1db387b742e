"""This repository's workflow run as a user runs it: ``python -m snakemake`` in a working directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def snakemake_argv(
    workdir: Path,
    *args: str,
    configfile: Path | None = None,
    cores: int | None = 1,
    snakefile: Path = REPO / "Snakefile",
) -> list[str]:
    """The argv: the repository's Snakefile (or another copy's), ``workdir`` as working directory,
    ``workdir/config.yaml`` unless another ``configfile``; ``cores=None`` leaves ``--cores`` out (``-n``)."""
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(snakefile),
        "--directory",
        str(workdir),
        "--configfile",
        str(configfile or workdir / "config.yaml"),
        *(["--cores", str(cores)] if cores is not None else []),
        *args,
    ]


def snakemake(
    workdir: Path,
    *args: str,
    configfile: Path | None = None,
    cores: int | None = 1,
    snakefile: Path = REPO / "Snakefile",
    env: dict[str, str] | None = None,
    timeout: float = 3600,
) -> subprocess.CompletedProcess[str]:
    argv = snakemake_argv(workdir, *args, configfile=configfile, cores=cores, snakefile=snakefile)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
