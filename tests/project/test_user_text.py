"""What users read says only what they can use and what the code does: no issue numbers of this project's
tracker, and report captions that name a statistical method name the one their table's code uses."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from specsweep.analyse import aggregate, drift, effects, energy, loadsummary
from specsweep.report import compare

REPO = Path(__file__).resolve().parents[2]
ISSUE = re.compile(r"\bissues? #?\d+|\(#\d+\)", re.IGNORECASE)


def user_text() -> dict[str, str]:
    """Every document, report caption, and string of the package and scripts (messages, docstrings, column
    definitions) by file: comments, which only developers read, left out."""
    texts = {}
    for pattern in ("README.md", "docs/**/*.md", "workflow/report/*.rst"):
        for path in REPO.glob(pattern):
            texts[path.relative_to(REPO).as_posix()] = path.read_text(encoding="utf-8")
    for pattern in ("src/specsweep/**/*.py", "scripts/*.py"):
        for path in REPO.glob(pattern):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            texts[path.relative_to(REPO).as_posix()] = "\n".join(strings)
    return texts


def test_user_facing_text_cites_no_issue_number():
    """docs/summary.md, docs/energy.md, replicates.py and the example READMEs cited "issue 21", which means
    nothing to a user (issue 35 item 19)."""
    texts = user_text()
    assert "docs/summary.md" in texts and "src/specsweep/analyse/replicates.py" in texts
    cited = [f"{name}: {m.group(0)!r}" for name, text in texts.items() for m in ISSUE.finditer(text)]
    assert cited == []


METHODS = ("Fieller", "Welch", "bootstrap", "Student", "paired", "sectioning", "Holm")
# Each caption that names a method, and the column definitions of the code that makes what it shows: the
# methods a caption names must be among those (load.rst and load_speedup.rst named Fieller and Welch after
# load.csv had moved to a paired Student-t interval on the log scale).
MADE_BY = {
    "acceptance.rst": aggregate.COLUMNS,
    "summary.rst": aggregate.COLUMNS,
    "throughput.rst": aggregate.COLUMNS,
    "efficiency.rst": {**aggregate.COLUMNS, **energy.SUMMARY_COLUMNS},
    "drift.rst": drift.COLUMNS,
    "effects.rst": effects.COLUMNS,
    "interaction.rst": effects.COLUMNS,
    "comparison.rst": compare.COLUMNS,
    "load.rst": loadsummary.LOAD_COLUMNS,
    "load_speedup.rst": loadsummary.LOAD_COLUMNS,
    "categories.rst": loadsummary.CATEGORY_COLUMNS,
    "categories_table.rst": loadsummary.CATEGORY_COLUMNS,
}


def named(text: str) -> set[str]:
    return {method for method in METHODS if method.lower() in text.lower()}


@pytest.mark.parametrize("caption", sorted((REPO / "workflow" / "report").glob("*.rst")), ids=lambda p: p.name)
def test_a_caption_names_only_the_methods_its_code_uses(caption):
    said = named(caption.read_text())
    if not said:
        return
    assert caption.name in MADE_BY, f"{caption.name} names {sorted(said)}: map it to the code that makes its file"
    used = named(" ".join(MADE_BY[caption.name].values()))
    assert said <= used, f"{caption.name} names {sorted(said - used)}, which its code does not use"


def test_the_method_names_come_from_the_code_that_uses_them():
    assert "Fieller" in compare.COLUMNS["ratio_ci95_low"] and "Welch" in compare.COLUMNS["p_value"]
    assert loadsummary.SPEEDUP_INTERVAL in loadsummary.LOAD_COLUMNS["speedup_ci95_low"]
    assert loadsummary.SPEEDUP_TEST in loadsummary.LOAD_COLUMNS["speedup_p_value"]
    assert loadsummary.PERCENTILE_INTERVAL in loadsummary.LOAD_COLUMNS["ttft_ms_p50_low"]
