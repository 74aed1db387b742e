"""Where downloaded and built artefacts live: a per-user cache shared by every clone."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_root() -> Path:
    """``$SPECSWEEP_CACHE``, else ``$XDG_CACHE_HOME/specsweep``, else ``~/.cache/specsweep``."""
    explicit = os.environ.get("SPECSWEEP_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "specsweep"


def sha256_bytes(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()
