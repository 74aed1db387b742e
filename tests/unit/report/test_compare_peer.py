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
from specsweep.report.compare_peer import ONE_RUN, aiperf_result, compare, peer_result, sweep_files, vllm_result

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "vllm_save_result_009e6d4a.json"


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


AIPERF = (
    Path(__file__).resolve().parents[2] / "fixtures" / "aiperf_0.13.0_profile_export_aiperf.json"
)  # written by AIPerf


def test_an_aiperf_export_reads_as_a_peer_run_in_vllm_fields():
    found = aiperf_result(AIPERF)
    assert found["tool"] == "AIPerf 0.13.0" and (found["max_concurrency"], found["request_rate"]) == (2, "inf")
    assert found["output_throughput"] == pytest.approx(18.551415168404418)  # output_token_throughput avg
    assert found["median_tpot_ms"] == pytest.approx(40.85722340322581)  # inter_token_latency p50 (vLLM's TPOT)
    assert found["median_itl_ms"] == pytest.approx(29.283181)  # inter_chunk_latency p50 (vLLM's ITL)
    assert found["median_e2el_ms"] == pytest.approx(3298.5395175) and found["model_id"] == "smollm2-135m"
    assert aiperf_result(FIXTURE) is None and vllm_result(AIPERF) is None  # each told from the other
    assert peer_result(FIXTURE)["tool"] == "vllm bench serve" and peer_result(AIPERF)["tool"] == "AIPerf 0.13.0"


def test_the_compare_job_takes_an_aiperf_export_as_before(tmp_path):
    table, figure, progress = tmp_path / "comparison.csv", tmp_path / "comparison.png", io.StringIO()
    compare_results.write(str(AIPERF), str(sweep(tmp_path / "sweep")), str(table), str(figure), progress)
    written = pd.read_csv(table)
    output = written[written["metric"] == "output_throughput"].set_index("configuration")
    assert set(output.index) == {"base", "eagle"}  # at AIPerf's concurrency 2; eagle's c4 is another level
    assert output.loc["eagle", "before"] == pytest.approx(18.551415168404418)
    assert "(AIPerf 0.13.0, max_concurrency 2, request_rate inf)" in progress.getvalue()
