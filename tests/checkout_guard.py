"""The suite never reads or writes the checkout's own ``results/``, ``logs/`` and ``.snakemake/``.

A test that runs the workflow in the repository depends on what the user last ran there (after
``make run`` a dry run says "Nothing to be done") and may damage it. ``CheckoutGuard`` is a pytest
plugin (tests/conftest.py registers it for the repository): a test that opens (reads or writes), creates,
changes or removes a file under those paths, or creates, changes or removes a folder there, fails at its
teardown, with the paths; and the session fails if their snapshot (names, sizes, mtimes, inodes) differs at
its end. Listing a folder is not using it: any Snakemake a test starts lists results/ and logs/ once
``make run`` made them (the Snakefile's folder is on ``sys.path``, and Snakemake's plugin discovery,
``pkgutil.iter_modules``, lists every folder there). Opens and changes are seen by inotify on Linux (a
process that only stats a path is not); elsewhere only the snapshot is compared. Under
pytest-xdist each worker watches its own tests and the controller alone compares the snapshot (a
worker's snapshot walk opens the folders, which the other workers' inotify would see).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import sys
from pathlib import Path

import pytest

GUARDED = ("results", "logs", ".snakemake")

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_OPEN, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x20, 0x40, 0x80, 0x100, 0x200
IN_Q_OVERFLOW, IN_ISDIR = 0x4000, 0x40000000
IN_NONBLOCK, IN_CLOEXEC = 0o4000, 0o2000000
CHANGES = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
# What an event says of its path, weakest first (one event has one kind; a path's strongest is shown).
RANK = [
    (IN_OPEN, "opened"),
    (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE, "changed"),
    (IN_DELETE | IN_MOVED_FROM, "removed"),
    (IN_CREATE | IN_MOVED_TO, "created"),
]
EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then the name, NUL-padded


def snapshot(root: Path) -> dict[str, tuple[str, int, int, int]]:
    """Every path under the guarded folders of ``root`` -> (kind, size, mtime_ns, inode)."""
    found = {}
    for name in GUARDED:
        top = root / name
        if not os.path.lexists(top):
            continue
        for path in [top, *_below(top)]:
            info = path.lstat()
            kind = "dir" if path.is_dir() and not path.is_symlink() else "file"
            found[str(path.relative_to(root))] = (kind, info.st_size, info.st_mtime_ns, info.st_ino)
    return found


def _below(top: Path) -> list[Path]:
    if not top.is_dir() or top.is_symlink():
        return []
    paths = []
    for folder, dirs, files in os.walk(top):
        paths += [Path(folder) / n for n in dirs + files]
    return paths


def differences(before: dict, after: dict) -> list[str]:
    return [
        f"{path}: {'created' if path not in before else 'removed' if path not in after else 'changed'}"
        for path in sorted(before.keys() | after.keys())
        if before.get(path) != after.get(path)
    ]


class Watch:
    """inotify watches on the checkout (for the guarded names) and on every guarded folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = self.libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.folders: dict[int, Path] = {}
        self.unwatched: list[Path] = []  # past fs.inotify.max_user_watches: only the snapshot sees these
        self._add(root)
        for name in GUARDED:
            for folder in [root / name, *_below(root / name)]:
                if folder.is_dir() and not folder.is_symlink():
                    self._add(folder)

    def _add(self, folder: Path) -> None:
        wd = self.libc.inotify_add_watch(self.fd, os.fsencode(folder), IN_OPEN | CHANGES)
        if wd >= 0:
            self.folders[wd] = folder
        else:
            self.unwatched.append(folder)

    def touched(self) -> list[str]:
        """What was opened or changed under the guarded paths since the last call (new folders are watched)."""
        data = b""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
        found: dict[str, int] = {}  # path -> the strongest of what happened to it (RANK)
        offset = 0
        while offset < len(data):
            wd, mask, _, length = EVENT.unpack_from(data, offset)
            name = data[offset + EVENT.size : offset + EVENT.size + length].rstrip(b"\0").decode(errors="replace")
            offset += EVENT.size + length
            if mask & IN_Q_OVERFLOW:
                found["(more than inotify's queue holds)"] = 0
                continue
            folder = self.folders.get(wd)
            if folder is None or (folder == self.root and name not in GUARDED):
                continue  # the checkout's other files: tests read the Snakefile, config/ and src/
            path = folder / name if name else folder
            if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                self._add(path)
            if mask & IN_ISDIR and not mask & ~(IN_ISDIR | IN_OPEN):
                # a folder opened to list it: Snakemake's plugin discovery lists every folder of sys.path
                # (the Snakefile's, so results/ and logs/ after `make run`); a listing reads no file
                continue
            rank = next((i for i, (bits, _) in enumerate(RANK) if mask & bits), None)
            if rank is None:
                continue  # IN_IGNORED: a watched folder went away (its removal is its parent's event)
            shown = f"{path.relative_to(self.root)}{'/' if mask & IN_ISDIR else ''}"
            found[shown] = max(found.get(shown, 0), rank)
        return [f"{path}: {RANK[rank][1]}" for path, rank in sorted(found.items())]

    def close(self) -> None:
        os.close(self.fd)


class CheckoutGuard:
    """The pytest plugin: each test's touches of the guarded paths, and the session's snapshot."""

    def __init__(self, root: Path, watch: bool = sys.platform == "linux", compare: bool = True) -> None:
        self.root = root
        self.before = snapshot(root) if compare else None
        self.watch, self.note = None, ""
        if watch:
            try:
                self.watch = Watch(root)
            except OSError as error:  # e.g. fs.inotify.max_user_instances reached by other processes
                self.note = f"checkout guard: no inotify ({error}), only the session's snapshot is compared"

    def _touched(self) -> list[str]:
        return self.watch.touched() if self.watch else []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        self._touched()  # anything before this test (collection, another plugin) is not its doing
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None):
        result = yield
        if touched := self._touched():
            pytest.fail(self.message(f"{item.nodeid} (or a process running beside it)", touched), pytrace=False)
        return result

    def message(self, who: str, paths: list[str]) -> str:
        shown = "\n  ".join(paths[:20]) + (f"\n  ... and {len(paths) - 20} more" if len(paths) > 20 else "")
        return (
            f"{who} used the checkout's own {', '.join(n + '/' for n in GUARDED)} ({self.root}):\n  {shown}\n"
            "a test runs the workflow in a folder of its own (tmp_path, Snakemake's --directory), never in "
            "the checkout, whose results are the user's"
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        terminal = session.config.pluginmanager.get_plugin("terminalreporter")
        if self.watch:
            self.watch.close()
            if self.watch.unwatched:
                self.note = f"checkout guard: {len(self.watch.unwatched)} folders not watched (inotify's limit)"
        if self.note and terminal:
            terminal.write_line(self.note, yellow=True)
        if self.before is not None and (changed := differences(self.before, snapshot(self.root))):
            if terminal:
                terminal.write_line(self.message("the test session", changed), red=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
