"""What kind of file a path the user gave is, said at once: a FIFO or device opened as a model blocks the
server until the readiness timeout, a directory is not "missing", a binary file is not a prompts file."""

from __future__ import annotations

import stat
from pathlib import Path

# Bytes read to tell a text file from a binary one (a NUL or invalid UTF-8 there is enough to refuse it).
SNIFF_BYTES = 1 << 16


def kind_of(path: Path) -> str:
    """ "file", "directory", "missing", or what else it is (FIFO, socket, character device, block device)."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    kinds = [
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ]
    return next((kind for test, kind in kinds if test(mode)), "special file")


def not_a_text_file(path: Path) -> str | None:
    """Why the regular file ``path`` is not UTF-8 text (a NUL byte or invalid UTF-8 early on), or None."""
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if (nul := head.find(b"\0")) >= 0:
        return f"it holds a NUL byte at offset {nul} (a binary file?)"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        if len(head) < SNIFF_BYTES or error.start < len(head) - 4:  # not a character cut by the sniff window
            return f"byte {error.start} is not UTF-8 (a binary file?)"
    return None
