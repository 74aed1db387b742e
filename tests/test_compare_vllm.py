"""compare with a `vllm bench serve --save-result` file as the "before" (tests/fixtures/
vllm_save_result_009e6d4a.json, written by vllm/benchmarks/serve.py's code path at 009e6d4a): each
configuration of the after sweep at the vLLM run's level, metric by metric."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pandas as pd
import pytest

from specsweep.report import compare as compare_results
from specsweep.report.compare_vllm import ONE_RUN, compare, sweep_files, vllm_result

FIXTURE = Path(__file__).parent / "fixtures" / "vllm_save_result_009e6d4a.json"


def sweep(tmp_path: Path) -> Path:
    """A results folder whose bench_serve/ holds two configurations at c2 and one at c4."""
    vllm = json.loads(FIXTURE.read_text())
    for name, level, concurrency, factor in (("base", "c2", 2, 1.0), ("eagle", "c2", 2, 1.5), ("eagle", "c4", 4, 2)):
        folder = tmp_path / "results" / "bench_serve" / name
        folder.mkdir(parents=True, exist_ok=True)
        result = {**vllm, "max_concurrency": concurrency, "output_throughput": vllm["output_throughput"] * factor}
        (folder / f"{level}.json").write_text(json.dumps(result))
        (folder / f"{level}.pytorch.json").write_text("[]")  # vLLM's dashboard file is not a result
    return tmp_path


def test_a_vllm_file_is_told_from_a_results_folder(tmp_path):
    assert vllm_result(FIXTURE)["backend"] == "openai"
    assert vllm_result(tmp_path) is None
    (tmp_path / "other.json").write_text('{"results": []}')
    assert vllm_result(tmp_path / "other.json") is None


def test_each_configuration_at_the_vllm_runs_level_metric_by_metric(tmp_path):
    frame = compare(vllm_result(FIXTURE), sweep_files(sweep(tmp_path)))
    assert set(frame["configuration"]) == {"base", "eagle"} and set(frame["load"]) == {"c2"}  # c4 is another level
    output = frame[frame["metric"] == "output_throughput"].set_index("configuration")
    assert output.loc["eagle", "ratio"] == pytest.approx(1.5) and output.loc["base", "delta_pct"] == pytest.approx(0)
    assert (frame["warnings"] == ONE_RUN).all()


def test_the_compare_job_takes_a_vllm_file_as_before_and_reads_an_archive_after(tmp_path):
    folder = sweep(tmp_path / "sweep")
    archive = tmp_path / "sweep.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder / "results", arcname="sweep/results")
    table, figure, progress = tmp_path / "comparison.csv", tmp_path / "figures" / "comparison.png", io.StringIO()
    compare_results.write(str(FIXTURE), str(archive), str(table), str(figure), progress)
    written = pd.read_csv(table)
    assert len(written[written["metric"] == "output_throughput"]) == 2 and figure.exists()
    assert "(vllm bench serve, max_concurrency 2, request_rate inf)" in progress.getvalue()
