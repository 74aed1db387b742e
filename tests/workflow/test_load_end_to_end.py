"""Load levels end to end on the real llama-server: closed and open loop, categorised prompts in the
chat template, through window records to load.csv, requests.csv, categories.csv and the figures."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from workflow_runs import snakemake

from specsweep.analyse.latency import request_latency
from specsweep.analyse.loadsummary import LOAD_COLUMNS

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.engine
# Requests a second of the open-loop level: well below the CPU server's capacity (about 1 a second on
# one thread, less beside other tests), so that its steady interval holds whole requests.
RATE = 0.5
LEVELS = ["c1", "c2", f"r{RATE:g}"]
# the fewest the plan accepts (4 x the highest concurrency: a burst, a steady interval and a drain)
REQUESTS = 8
WINDOWS = 2


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("load")
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    # one thread: this runs beside other tests (make test), where a second thread mostly spins at barriers
    config["engines"]["llama"]["args"].update({"-c": 2048, "-np": 2, "-t": 1})
    config["benchmark"].update(
        # config/workloads/categories.jsonl's 7 categories in its order, 3 prompts each, but short (less
        # prompt processing for the CPU server beside other tests)
        prompts=str(REPO / "tests" / "data" / "categories-short.jsonl"),
        runs=2,
        max_tokens=32,
        chat_template=True,
        load={
            "concurrency": [1, 2],
            "request_rate": [RATE],
            "requests_per_window": REQUESTS,
            "windows": WINDOWS,
            "slo": {"ttft_ms": 60000},
        },
    )
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = snakemake(workdir, "all")
    assert done.returncode == 0, done.stderr[-4000:]
    return workdir


def test_window_records_keep_every_arrival(sweep):
    for name in ("baseline", "ngram"):
        for level in LEVELS:
            for window in range(WINDOWS):
                record = json.loads((sweep / f"results/{name}/load/{level}/window_{window}.json").read_text())
                assert record["level"]["label"] == level and len(record["requests"]) == REQUESTS
                assert not record["warmup"]
                for request in record["requests"]:
                    assert request["tokens"] == 32 and sum(request["event_tokens"]) == 32
                    latency = request_latency(request["arrivals_us"], request["tokens"], request["e2e_s"])
                    assert 0 < latency.ttft_s <= latency.e2el_s <= latency.e2e_s and latency.tpot_s > 0
                    # request j of window w uses prompt (w * REQUESTS + j) mod n: the same for every configuration
                    assert request["prompt_index"] == (window * REQUESTS + request["index"]) % 21
    ngram = json.loads((sweep / "results/ngram/load/c2/window_0.json").read_text())
    assert any(r["drafted"] for r in ngram["requests"])  # per-request speculation counts under concurrency


def test_steady_interval_is_in_every_window_record_and_the_warmup_window_in_no_table(sweep):
    from specsweep.record.results import read_window

    for name in ("baseline", "ngram"):
        for level in LEVELS:
            warmup = read_window(sweep / f"results/{name}/load/{level}/window_warmup.json")
            assert warmup.warmup and warmup.window == -1 and len(warmup.requests) == REQUESTS
            assert [r.prompt_index for r in warmup.requests] == list(range(REQUESTS))  # window 0's prompts
            for window in range(WINDOWS):
                path = sweep / f"results/{name}/load/{level}/window_{window}.json"
                record = json.loads(path.read_text())
                start, end = record["steady_start_s"], record["steady_end_s"]
                assert 0 < start < end < record["duration_s"], (path, start, end)
                ends = sorted(r["sent_s"] + r["e2e_s"] for r in record["requests"])
                if level.startswith("c"):  # the burst ends with the C-th request to end
                    assert start == pytest.approx(ends[int(level[1:]) - 1], abs=0.01)
                assert end == pytest.approx(max(r["sent_s"] for r in record["requests"]), abs=1e-9)
                steady = [r for r in read_window(path).requests if read_window(path).in_steady(r)]
                assert steady and len(steady) < REQUESTS
    log = (sweep / "logs" / "bench" / "ngram.log").read_text()
    assert "load c2 warmup window" in log and "steady" in log


def test_open_loop_requests_overlap_and_follow_the_seeded_schedule(sweep):
    from specsweep.plan.load_levels import arrival_times, window_seed

    for name in ("baseline", "ngram"):
        record = json.loads((sweep / f"results/{name}/load/{LEVELS[2]}/window_1.json").read_text())
        planned = arrival_times(RATE, REQUESTS, window_seed(1, 1))
        assert [r["sent_s"] for r in record["requests"]] == pytest.approx(planned, abs=0.05)


def test_load_table_and_figures(sweep):
    table = pd.read_csv(sweep / "results" / "load.csv")
    assert list(table.columns) == list(LOAD_COLUMNS)
    assert len(table) == 2 * len(LEVELS) and set(table["load"]) == set(LEVELS)
    assert (table["windows"] == WINDOWS).all() and (
        table["requests"] == WINDOWS * REQUESTS
    ).all()  # the warmup window left out
    assert (table["output_tok_s_mean"] > 1).all()
    assert table.loc[table["baseline"], "speedup"].isna().all()
    assert table.loc[~table["baseline"], "speedup"].gt(0).all()
    for metric in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
        assert (table[f"{metric}_p50_low"] <= table[f"{metric}_p50"]).all()
        assert (table[f"{metric}_p50"] <= table[f"{metric}_p99"]).all()
    assert table["goodput_mean"].to_numpy() == pytest.approx(table["request_throughput_mean"].to_numpy())
    assert (table["steady_requests"] > 0).all() and (table["steady_s_mean"] > 0).all()
    for figure in ("load_speedup", "load_latency", "categories"):
        assert (sweep / "results" / "figures" / f"{figure}.png").stat().st_size > 1000


def test_requests_and_categories(sweep):
    requests = pd.read_csv(sweep / "results" / "requests.csv")
    # the runs the rate check kept (beside other tests a starved client's run is set aside: summary.csv counts
    # it in runs_excluded), then every window's requests; no request of a warmup window
    summary = pd.read_csv(sweep / "results" / "summary.csv")
    assert (summary["runs"] + summary["runs_excluded"] == 2).all() and (summary["runs"] >= 1).all()
    assert len(requests) == summary["runs"].sum() + 2 * len(LEVELS) * WINDOWS * REQUESTS
    assert (requests.loc[requests["load"] != "single", "window"] >= 0).all()
    categories = pd.read_csv(sweep / "results" / "categories.csv")
    single = categories[(categories["load"] == "single") & (categories["configuration"] == "ngram")]
    # runs 0 and 1: prompts 0 and 1 (a run the rate check set aside keeps its row, with no request)
    assert sorted(single["category"]) == ["conversation", "translation"]
    assert (categories.loc[~categories["baseline"] & (categories["load"] == "c1"), "requests"] > 0).all()


def test_prompts_went_through_the_models_chat_template(sweep):
    launch = json.loads((sweep / "results" / "baseline" / "launch.json").read_text())
    assert launch["engine"]["total_slots"] == 2
    first = launch["chat_template"]["first_prompt"]
    assert "<|im_start|>user" in first and "small town by the coast" in first  # SmolLM2's ChatML template


def test_single_request_runs_keep_their_arrivals_too(sweep):
    from specsweep.record.results import read_run

    for name in ("baseline", "ngram"):
        run = read_run(sweep / f"results/{name}/runs/run_0.json")
        latency = request_latency(run.arrivals_us, run.tokens, run.client.e2e_s)
        assert latency.ttft_s == pytest.approx(run.client.ttft_s, abs=1e-6)
        assert latency.decode_tokens_per_s == pytest.approx(run.client.decode_tokens_per_s, rel=1e-4)
        assert run.category == "conversation"


def test_profile_rows_of_load_windows_are_not_runs(sweep):
    """The summary's log fallback reads profile.csv run rows: a load window's requests must not be among them."""
    for name in ("baseline", "ngram"):
        profile = pd.read_csv(sweep / f"results/{name}/profile.csv")
        assert list(profile["phase"].value_counts().sort_index().items()) == [
            ("load", WINDOWS * REQUESTS * len(LEVELS)),
            ("run", 2),
            ("warmup", 1 + REQUESTS * len(LEVELS)),  # the warmup request and each level's warmup window
        ]
        load = profile[profile["phase"] == "load"]
        assert sorted(load.groupby(["load_level", "load_window"]).size().items()) == [
            ((level, window), REQUESTS) for level in LEVELS for window in range(WINDOWS)
        ]
    summary = pd.read_csv(sweep / "results/summary.csv").set_index("configuration")
    runs = pd.read_csv(sweep / "results/runs.csv")
    kept = runs[(runs["configuration"] == "ngram") & runs["excluded"].isna()]  # as the summary counts them
    run_drafts = pd.to_numeric(kept["drafted"], errors="coerce").sum()
    drafted = summary.loc["ngram", "drafted"]  # the runs' own counts, never the windows'
    assert (0 if pd.isna(drafted) else drafted) == run_drafts


def test_the_report_shows_the_load_and_category_tables_and_figures_and_touches_no_result(sweep):
    summary = sweep / "results" / "summary.csv"
    before = summary.stat().st_mtime_ns
    done = snakemake(sweep, "--report", "results/report.html")
    assert done.returncode == 0, done.stderr[-3000:]
    html = (sweep / "results" / "report.html").read_text()
    for text in ("load.csv", "categories.csv", "load_speedup.png", "load_latency.png", "categories.png"):
        assert text in html, text
    for caption in ("Speculation under load", "Prompt categories", "Latency against throughput"):
        assert caption in html, caption
    assert summary.stat().st_mtime_ns == before


def test_bench_serve_files_are_vllms_for_every_configuration_and_level(sweep):
    vllm = json.loads((REPO / "tests" / "fixtures" / "vllm_save_result_009e6d4a.json").read_text())
    for name in ("baseline", "ngram"):
        for level in LEVELS:
            folder = sweep / "results" / "bench_serve" / name
            result = json.loads((folder / f"{level}.json").read_text())
            assert set(vllm) - set(result) <= {"queue_times", *(k for k in vllm if k.startswith("spec_decode"))}
            assert (
                result["label"] == name
                and result["completed"] == WINDOWS * REQUESTS
                and result["backend"] == "openai-chat"
            )
            assert result["request_goodput"] == pytest.approx(result["request_throughput"])  # a 60 s TTFT objective
            lines = (folder / f"{level}.requests.jsonl").read_text().splitlines()
            assert len(lines) == WINDOWS * REQUESTS and json.loads(lines[0])["output_len"] == 32
            assert json.loads((folder / f"{level}.pytorch.json").read_text())[0]["metric"]["name"] == "median_ttft_ms"
    # llama-server's per-request draft counts give the ngram configuration vLLM's speculation fields
    ngram = json.loads((sweep / "results" / "bench_serve" / "ngram" / "c2.json").read_text())
    assert 0 < ngram["spec_decode_acceptance_rate"] <= 100 and ngram["spec_decode_draft_tokens"] > 0
