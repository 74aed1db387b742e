"""Where the lock that keeps measurements on one machine apart lives: on the node, never on a shared disk.

On a cluster the cache of engines and models may sit on a shared filesystem (NFS, Lustre), but a
lock file there is neither node-local (it would serialise every node's measurements) nor reliable
(flock over NFS depends on the server). The measuring lock therefore lives in a node-local
directory, one lock per node and cache; the cache name keeps sweeps that use separate caches
(separate users, the tests) as independent as they were with the lock inside the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

from specsweep.cache import cache_root, sha256_bytes

# Node-local, and shared by every job on the node: /run/lock (tmpfs, world-writable on Debian and
# most distributions), else /dev/shm. Not $TMPDIR: Slurm sites often give each job a private one.
NODE_LOCAL_DIRS = ("/run/lock", "/dev/shm", "/tmp")


def lock_dir() -> Path:
    """``$SPECSWEEP_LOCK_DIR`` (must be node-local), else the first writable of ``NODE_LOCAL_DIRS``."""
    explicit = os.environ.get("SPECSWEEP_LOCK_DIR")
    if explicit:
        return Path(explicit).expanduser()
    for candidate in NODE_LOCAL_DIRS:
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return Path(candidate)
    raise RuntimeError(f"no writable node-local directory among {', '.join(NODE_LOCAL_DIRS)}; "
                       f"set SPECSWEEP_LOCK_DIR to a directory on this machine's own disk")


def measure_lock_path() -> Path:
    """The measuring lock of this node and cache: ``<lock_dir>/specsweep-measure-<cache hash>.lock``."""
    cache = cache_root().expanduser().resolve()
    return lock_dir() / f"specsweep-measure-{sha256_bytes(str(cache))[:16]}.lock"
