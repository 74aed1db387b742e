"""`snakemake --report` on a sweep with a grid: configurations counted after expansion, every table in it.

Needs the real llama-server (a tiny sweep: baseline + a two-point grid, 2 runs x 32 tokens).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from workflow_runs import snakemake

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.engine


def test_report_counts_expanded_configurations_and_holds_every_table(tmp_path):
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    config["benchmark"].update(prompts=str(REPO / "config" / "prompts.txt"), max_tokens=32)
    config["configurations"]["ngram"] = {
        "args": {"--spec-type": "ngram-simple", "--spec-ngram-simple-size-n": 3},
        "grid": {"args": {"--spec-ngram-simple-size-m": [4, 8]}},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = snakemake(tmp_path, "all")
    assert done.returncode == 0, done.stderr[-4000:]
    report = snakemake(tmp_path, "--report", "results/report.html")
    assert report.returncode == 0, report.stderr[-4000:]
    html = (tmp_path / "results" / "report.html").read_text()
    # the description is a JavaScript string in the page: its line breaks are written as \n
    assert "sweep of 3 configurations (grids expanded) from\\n2 configuration entries" in html
    for name in ("runs.csv", "costmodel.md", "summary.csv", "paper/macros.tex", "figures/throughput.png"):
        assert f'"results/{name}": {{' in html, name  # an entry of the report's results
    for figure in ("throughput", "acceptance", "costmodel"):
        assert (tmp_path / "results" / "figures" / f"{figure}.pdf").read_bytes().startswith(b"%PDF-")
