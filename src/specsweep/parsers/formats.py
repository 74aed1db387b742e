"""What a log format is to the pipeline: how to parse it, its columns, and whether rows are per request.

Each parser module declares its ``LOG_FORMAT``; ``parsers.log_formats()`` finds them, so a new format is
its own module and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specsweep.parsers import chunked
from specsweep.parsers.chunked import ChunkedFormat, CsvLines
from specsweep.parsers.fields import LogRows, whole_lines
from specsweep.record.segments import lines_with_offsets


@dataclass(frozen=True)
class LogFormat:
    name: str  # what engines' log_format and external.log_format call it
    parse: Callable[..., Any]  # (lines, sink=None) -> an object with rows, lines, malformed
    columns: list[str]
    per_request: bool  # one row per request (phases warmup/run) or per logged interval
    # How to read the file in chunks (the same rows as parse over its lines), where the format has it
    chunked: ChunkedFormat | None = None

    def read_file(
        self, path: str | Path, sink: Callable[[dict[str, Any]], Any] | None = None, csv_lines: CsvLines | None = None
    ) -> Any:
        """The rows of ``parse`` over the file, to ``sink``; those the chunked reader reads fast may go to
        ``csv_lines`` as CSV text instead (formats without a chunked reader send every row to ``sink``)."""
        if self.chunked is not None:
            return chunked.parse_file(path, self.chunked, sink, csv_lines)
        cut: list[str] = []
        with open(path, "rb") as raw:  # each line with its byte offset (a per-request row's log_offset)
            result = self.parse(whole_lines(lines_with_offsets(raw), cut), sink)
        count_cut_line(result, cut, self.parse)
        return result


def count_cut_line(result: LogRows, cut: list[str], parse: Callable[..., Any]) -> None:
    """A last line without its newline (fields.whole_lines) counts as a line, and as malformed when the format
    would have read it: never as a row."""
    for line in cut:
        result.lines += 1
        alone = parse([line + "\n"])
        if alone.rows or alone.matched:
            result.matched += 1
            result.malformed += 1


def _count_only(lines: Iterable[str], sink: Callable[[dict[str, Any]], Any] | None = None) -> LogRows:
    result = LogRows()
    for _ in lines:
        result.lines += 1
    return result


# A log specsweep cannot read (an external endpoint's, unless its format is named): lines counted only.
NONE = LogFormat("none", _count_only, [], per_request=False)
