"""Wall-clock timestamps in records: UTC, one format everywhere (ISO 8601, microseconds, ``Z``)."""

from __future__ import annotations

import datetime as dt


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_stamp() -> str:
    """The same instant to the second as a file or folder name (no ``:``), e.g. ``20260101T120000Z``."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def epoch_seconds(stamp: str) -> float:
    """A record's timestamp (``now_iso``) as seconds since the epoch."""
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
