"""An example README's tables are its archive's numbers: every table quoted between
``<!-- table: NAME ARCHIVE -->`` and ``<!-- end table -->`` is generated again from the committed archive
(specsweep.archive.markdown) and must read the same, so a README cannot keep numbers its archive lost."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from specsweep.archive import markdown

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"
QUOTED = re.compile(r"<!-- table: (\w+) (\S+) -->\n(.*?)\n<!-- end table -->", re.DOTALL)
READMES = sorted(EXAMPLES.glob("*/README.md"))
# the examples measured with sessions as the replicate: their READMEs quote their tables
GENERATED = {"h200-sglang": {"summary"}, "h200-vllm": {"summary", "load"}}


def quoted(readme: Path) -> list[tuple[str, Path, str]]:
    return [(name, readme.parent / archive, text) for name, archive, text in QUOTED.findall(readme.read_text())]


@pytest.mark.parametrize("readme", READMES, ids=[r.parent.name for r in READMES])
def test_every_quoted_table_is_the_archives(readme):
    for name, archive, text in quoted(readme):
        assert archive.is_file(), f"{readme}: quotes {archive.name}, which is not beside it"
        assert markdown.table(archive, name) == text, f"{readme}: the {name} table differs from {archive.name}"


@pytest.mark.parametrize(("example", "tables"), GENERATED.items())
def test_the_gpu_examples_quote_their_tables(example, tables):
    assert {name for name, _archive, _text in quoted(EXAMPLES / example / "README.md")} == tables


def test_a_changed_number_is_caught(tmp_path):
    readme = EXAMPLES / "h200-sglang" / "README.md"
    ((name, archive, text),) = quoted(readme)
    assert markdown.table(archive, name) == text
    assert markdown.table(archive, name) != text.replace("724.6", "742.6", 1)


def test_the_summary_table_names_the_rate_and_says_when_there_is_no_interval():
    summary = pd.DataFrame(
        [
            {"configuration": "a", "sessions": 1, "runs": 7, "baseline": True, "decode_tok_s_mean": 10.0}
            | dict.fromkeys(
                [
                    "decode_tok_s_ci95_low",
                    "decode_tok_s_ci95_high",
                    "speedup",
                    "speedup_ci95_low",
                    "speedup_ci95_high",
                    "speedup_p_holm",
                    "acceptance_rate",
                    "accept_length",
                    "tokens_per_joule_mean",
                    "tokens_per_joule_ci95_low",
                    "tokens_per_joule_ci95_high",
                ],
                float("nan"),
            )
        ]
    )
    table = markdown.summary_table(summary)
    assert "single-request decode rate (tok/s)" in table.splitlines()[0]
    assert "| `a` | 1 x 7 | 10.0 (no interval) | baseline |" in table


def test_the_command_line_refuses_an_unknown_table(capsys):
    archive = next((EXAMPLES / "h200-sglang").glob("*.tar.gz"))
    with pytest.raises(ValueError, match="unknown table 'effects': one of summary, load"):
        markdown.table(archive, "effects")
    assert markdown.main([]) == 2 and "usage:" in capsys.readouterr().err
