"""benchmarks/vllm_bench_agreement.py and sglang_bench_agreement.py on the CPU: the peers' clients faked
(tests/data/fake_vllm.py and fake_sglang_bench.py: their flags and result formats from vllm 0.25.0 and sglang
0.5.16), specsweep's side given as bench_serve.json entries; and the interleaved design both use (agreement.py)."""

from __future__ import annotations

import json
import math
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import agreement  # noqa: E402
import sglang_bench_agreement  # noqa: E402
import vllm_bench_agreement  # noqa: E402

FAKE_VLLM = [sys.executable, str(REPO / "tests" / "data" / "fake_vllm.py")]
FAKE_SGLANG = [sys.executable, str(REPO / "tests" / "data" / "fake_sglang_bench.py")]
FIXTURE = json.loads((REPO / "tests" / "fixtures" / "vllm_bench_serve_result.json").read_text())
SGLANG_FIXTURE = json.loads((REPO / "tests" / "fixtures" / "sglang_bench_serving_result.json").read_text())


def test_each_window_runs_vllm_bench_and_reads_its_result(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    chosen = agreement.prompts_for(REPO / "config" / "workloads" / "categories.jsonl", 30, prompts)
    assert len(chosen) == 30 and chosen[21] == chosen[0]  # 21 prompts, cycled in specsweep's window order
    found = vllm_bench_agreement.vllm_window(FAKE_VLLM, "http://127.0.0.1:8000", None, prompts, 8, 30, 256, tmp_path, 1)
    assert found["max_concurrency"] == 8 and found["completed"] == 30
    assert found["output_throughput"] == pytest.approx(8 * FIXTURE["output_throughput"])
    assert (tmp_path / "vllm-c8-p1.json").is_file()  # one file per window: no pair overwrites another


def test_each_window_runs_sglang_bench_serving_on_conversations(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    texts = agreement.prompts_for(REPO / "config" / "workloads" / "categories.jsonl", 30, prompts)
    dataset = sglang_bench_agreement.conversations(texts, tmp_path / "conversations.jsonl")
    turns = [json.loads(line)["conversations"] for line in dataset.read_text().splitlines()]
    assert [t[0]["content"] for t in turns] == texts and all(len(t) == 2 for t in turns)
    args = ("http://127.0.0.1:30000", "/models/smollm2", dataset, 8, 30, 256, tmp_path)
    first = sglang_bench_agreement.sglang_window(FAKE_SGLANG, *args, 0)
    again = sglang_bench_agreement.sglang_window(FAKE_SGLANG, *args, 0)  # bench_serving appends: the last line
    assert first == again and first["max_concurrency"] == 8 and first["completed"] == 30
    assert first["output_throughput"] == pytest.approx(8 * SGLANG_FIXTURE["output_throughput"])
    assert len((tmp_path / "sglang-c8-p0.jsonl").read_text().splitlines()) == 1
    assert {k for _, k in agreement.RATIOS} <= set(SGLANG_FIXTURE)  # the fields the ratios read, in its format


def test_the_clients_take_turns_a_b_b_a():
    calls = []

    def client(name):
        def measure(level, pair):
            calls.append((name, level, pair))
            return {"completed": 1}

        return measure

    found = agreement.interleaved([1, 8], 3, client("ours"), client("theirs"), lambda: calls.append(("fresh",)))
    windows = ["ours", "theirs", "theirs", "ours", "ours", "theirs"] * 2
    # every window starts on a flushed prefix cache: the second of a pair found the first's prompts cached
    assert [c[0] for c in calls] == [step for window in windows for step in ("fresh", window)]
    calls[:] = [c for c in calls if c[0] != "fresh"]
    assert [c[1] for c in calls[:6]] == [1] * 6 and sorted(found) == [1, 8] and len(found[8]) == 3


def pairs_with_ratios(ratios):
    return {8: [({**FIXTURE, "output_throughput": r * FIXTURE["output_throughput"]}, FIXTURE) for r in ratios]}


def test_a_ratio_is_the_geometric_mean_over_pairs_with_a_t_interval():
    ratios = [1.01, 0.99, 1.02, 1.00]
    (row,) = agreement.ratio_rows(pairs_with_ratios(ratios))
    logs = np.log(ratios)
    half = agreement.t_critical(3) * logs.std(ddof=1) / 2
    assert row["pairs"] == 4 and row["ratios"]["output tok/s"] == pytest.approx(math.exp(logs.mean()))
    low, high = row["intervals"]["output tok/s"]
    assert low == pytest.approx(math.exp(logs.mean() - half)) and high == pytest.approx(math.exp(logs.mean() + half))
    assert row["ratios"]["TTFT p50"] == 1.0 and row["intervals"]["TTFT p50"] == (1.0, 1.0)
    assert row["within_target"] is True


def test_within_target_needs_the_whole_interval_inside():
    (wide,) = agreement.ratio_rows(pairs_with_ratios([1.00, 1.05, 0.95, 1.00]))  # mean 1.0, interval too wide
    assert wide["ratios"]["output tok/s"] == pytest.approx(1.0, abs=0.003) and wide["within_target"] is False
    (single,) = agreement.ratio_rows(pairs_with_ratios([1.0]))  # one pair: no interval, never within target
    assert math.isnan(single["intervals"]["output tok/s"][0]) and single["within_target"] is False
    printed = agreement.table([single], "x")
    assert "[no interval]" in printed and "one window per client cannot tell" in printed


@pytest.mark.parametrize("tool", ["vllm", "sglang"])
def test_main_prints_each_ratio_with_its_interval(tmp_path, monkeypatch, capsys, tool):
    faster = iter([1.05, 1.04, 1.06, 1.05] * 2)

    def ours(base_url, prompts, levels, requests, max_tokens, workdir, cpus=None):
        # specsweep's bench_serve.json entry for one window: about 5 % faster output, TPOT 2 % higher
        (level,) = levels
        peer = {"vllm": FIXTURE, "sglang": SGLANG_FIXTURE}[tool]
        entry = {k: peer[k] for _, k in agreement.RATIOS}
        return {level: {**entry, "completed": requests, "output_throughput": next(faster) * level *
                        peer["output_throughput"], "median_tpot_ms": 1.02 * peer["median_tpot_ms"]}}  # fmt: skip

    module = {"vllm": vllm_bench_agreement, "sglang": sglang_bench_agreement}[tool]
    monkeypatch.setattr(module, "specsweep_levels", ours)
    flushes = []

    class Engine(BaseHTTPRequestHandler):  # the engine's cache flush, as SGLang and vLLM answer it
        def do_POST(self):
            flushes.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"success": true}' if tool == "vllm" else b"Cache flushed.")

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Engine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    common = ["--base-url", base_url, "--levels", "1,8", "--requests", "16", "--pairs", "4"]
    own = {
        "vllm": ["--vllm", " ".join(FAKE_VLLM)],
        "sglang": ["--sglang", " ".join(FAKE_SGLANG), "--tokenizer", "/models/x"],
    }[tool]
    try:
        module.main([*common, *own, "--out", str(tmp_path)])
    finally:
        server.shutdown()
    assert flushes == [{"vllm": "/reset_prefix_cache", "sglang": "/flush_cache"}[tool]] * (2 * 4 * 2)
    rows = json.loads((tmp_path / "agreement.json").read_text())["rows"]
    assert [r["concurrency"] for r in rows] == [1, 8] and all(r["pairs"] == 4 for r in rows)
    assert rows[1]["ratios"]["output tok/s"] == pytest.approx(1.05, abs=0.002)
    low, high = rows[1]["intervals"]["output tok/s"]
    assert 1.03 < low < 1.05 < high < 1.07 and rows[0]["within_target"] is False
    assert rows[0]["ratios"]["TPOT p50"] == pytest.approx(1.02)
    printed = capsys.readouterr().out
    assert "interleaved pairs" in printed and "c8" in printed and "1.050" in printed
