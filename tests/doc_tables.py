"""Column tables in docs/*.md, read back so tests compare meanings, not only names, with the code's."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
ROW = re.compile(r"^\| `([^`]+)` \| (.*) \|$")


def documented_columns(document: str, heading: str) -> dict[str, str]:
    """``column -> meaning`` of the first ``| column | meaning |`` table after ``heading`` in docs/<document>."""
    text = (DOCS / document).read_text()
    start = text.index(heading + "\n")
    table = text[text.index("| column | meaning |", start) :]
    columns = {}
    for line in table.splitlines()[2:]:
        if not (row := ROW.match(line)):
            break
        columns[row[1]] = row[2]
    return columns
