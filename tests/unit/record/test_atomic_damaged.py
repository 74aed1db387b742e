"""Every record reader names a damaged file (DamagedFile: the file and the fix), whatever JSON it holds: a launch
record that was a JSON list gave `AttributeError: 'list' object has no attribute 'items'`, naming no file
(issue 35, item 20)."""

from __future__ import annotations

import pytest

from specsweep.record import results
from specsweep.record.atomic import DamagedFile

READERS = {"run": results.read_run, "launch": results.read_launch, "window": results.read_window}


@pytest.mark.parametrize("kind", READERS)
@pytest.mark.parametrize("content", ["[1]", '"text"', "3", "null", '{"client": []}', '{"configuration": 3}', "{"])
def test_any_damage_names_the_file(tmp_path, kind, content):
    path = tmp_path / f"{kind}.json"
    path.write_text(content)
    with pytest.raises(DamagedFile, match=f"^{path}: damaged \\(not a {kind} record"):
        READERS[kind](path)
