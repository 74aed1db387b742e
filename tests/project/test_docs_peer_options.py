"""docs/load.md's table of the peers' options names only specsweep keys the config schema has, and every
row names all three peers' column, so the mapping cannot silently go out of date."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
HEADING = "## Coming from vLLM `bench serve`, AIPerf or GuideLLM"


def rows() -> list[list[str]]:
    text = (REPO / "docs" / "load.md").read_text()
    table = text[text.index(HEADING) :].split("\n\n")[2]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in table.splitlines()[2:]]


def schema_has(path: str) -> bool:
    node = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    for part in path.split("."):
        node = (node.get("properties") or {}).get(part)
        if node is None:
            return False
    return True


def test_every_row_maps_all_three_peers_to_a_specsweep_column():
    found = rows()
    assert len(found) >= 20 and all(len(row) == 4 for row in found)
    assert any("--goodput" in row[0] for row in found) and any("--burstiness" in row[0] for row in found)


def test_every_key_the_table_names_is_in_the_config_schema():
    keys = {key for row in rows() for key in re.findall(r"`(benchmark(?:\.\w+)+)`", row[3])}
    assert {"benchmark.prompts", "benchmark.load.slo", "benchmark.load.concurrency"} <= keys
    assert [key for key in sorted(keys) if not schema_has(key)] == []
