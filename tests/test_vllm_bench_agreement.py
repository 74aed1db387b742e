"""benchmarks/vllm_bench_agreement.py on the CPU: vllm bench serve faked (tests/data/fake_vllm.py, its flags
and result format from vllm 0.25.0), specsweep's side given as bench_serve.json entries."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import agreement  # noqa: E402
import vllm_bench_agreement  # noqa: E402

FAKE = [sys.executable, str(REPO / "tests" / "data" / "fake_vllm.py")]
FIXTURE = json.loads((REPO / "tests" / "fixtures" / "vllm_bench_serve_result.json").read_text())


def test_each_level_runs_vllm_bench_and_reads_its_result(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    chosen = agreement.prompts_for(REPO / "config" / "workloads" / "categories.jsonl", 30, prompts)
    assert len(chosen) == 30 and chosen[21] == chosen[0]  # 21 prompts, cycled in specsweep's window order
    found = vllm_bench_agreement.vllm_levels(FAKE, "http://127.0.0.1:8000", None, prompts, [1, 8], 30, 256, tmp_path)
    assert sorted(found) == [1, 8] and found[8]["max_concurrency"] == 8 and found[8]["completed"] == 30
    assert found[8]["output_throughput"] == pytest.approx(8 * FIXTURE["output_throughput"])


def test_ratios_per_level_and_the_printed_table(tmp_path, monkeypatch, capsys):
    def ours(base_url, prompts, levels, requests, max_tokens, workdir, cpus=None):
        # specsweep's bench_serve.json entries: 5 % faster output, TTFT as vLLM's, TPOT 2 % higher
        entry = {k: FIXTURE[k] for _, k in agreement.RATIOS}
        return {
            c: {**entry, "completed": requests, "output_throughput": 1.05 * c * FIXTURE["output_throughput"],
                "median_tpot_ms": 1.02 * FIXTURE["median_tpot_ms"]}
            for c in levels
        }  # fmt: skip

    monkeypatch.setattr(vllm_bench_agreement, "specsweep_levels", ours)
    vllm_bench_agreement.main(
        [
            "--base-url",
            "http://127.0.0.1:8000",
            "--levels",
            "1,8",
            "--requests",
            "16",
            "--vllm",
            " ".join(FAKE),
            "--out",
            str(tmp_path),
        ]
    )
    rows = json.loads((tmp_path / "agreement.json").read_text())["rows"]
    assert [r["concurrency"] for r in rows] == [1, 8]
    assert rows[1]["ratios"]["output tok/s"] == pytest.approx(1.05) and rows[1]["ratios"]["TTFT p50"] == 1.0
    assert rows[0]["ratios"]["TPOT p50"] == pytest.approx(1.02) and rows[0]["within_target"] is False
    printed = capsys.readouterr().out
    assert "specsweep ÷ vllm bench serve" in printed and "c8" in printed and "1.050" in printed
