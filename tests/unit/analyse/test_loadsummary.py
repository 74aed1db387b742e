from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from specsweep.analyse.latency import steady_part
from specsweep.analyse.loadsummary import (
    SINGLE,
    WITHIN_LAUNCH,
    Crossover,
    category_table,
    crossover,
    crossover_lines,
    load_table,
    paired_speedup,
    request_rows,
)
from specsweep.maths import stats
from specsweep.measure.load import steady_interval
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.plan.load_levels import CONCURRENCY, LoadLevel
from specsweep.record.arrivals import encode_arrivals
from specsweep.record.results import Run, Window

CATEGORIES = ("code", "rewrite")


def configuration(name: str, baseline: bool = False) -> Configuration:
    return Configuration(name=name, engine="e", kind="llamacpp", baseline=baseline, args={}, env={}, group=name)


CONFIGURATIONS = {"base": configuration("base", True), "spec": configuration("spec")}


def request(index: int, tpot_s: float, tokens: int = 11, ttft_s: float = 0.1, drafted=None, accepted=None):
    arrivals = [ttft_s + tpot_s * i for i in range(tokens)]
    return {
        "index": index,
        "sent_s": 0.01 * index,
        "prompt_index": index,
        "category": CATEGORIES[index % 2],
        "tokens": tokens,
        "e2e_s": arrivals[-1] + 0.001,
        "arrivals_us": encode_arrivals(arrivals),
        "event_tokens": [1] * tokens,
        "engine_decode_tok_s": 1 / tpot_s,
        "drafted": drafted,
        "accepted": accepted,
        "text_sha256": f"text{index}",
        "malformed_events": 0,
    }


def windows_of(launch: float = 1.0, spec_launch: float = 1.0) -> dict[str, list[Window]]:
    # spec decodes 1.5x faster at c1, equally at c2, 2x slower at c4 (TTFT 100 ms, 10 decode steps each);
    # windows differ by 1 % per window, the same for both (their prompts); ``launch``, ``spec_launch``: a
    # session's time per token, the baseline's and the candidate's (1: as every other session)
    levels = {1: 1.5, 2: 1.0, 4: 0.5}
    found: dict[str, list[Window]] = {"base": [], "spec": []}
    for n, factor in levels.items():
        level = LoadLevel(CONCURRENCY, n)
        for w in range(3):
            found["base"].append(closed_window(level, w, launch * 0.01 * (1 + 0.01 * w)))
            tpot = spec_launch * 0.01 / factor * (1 + 0.01 * w)
            found["spec"].append(closed_window(level, w, tpot, drafted=10, accepted=8, counters=SPEC_COUNTERS))
    return found


SPEC_COUNTERS = {
    "llamacpp:spec_decode_num_drafts_total": 4.0,
    "llamacpp:spec_decode_num_draft_tokens_total": 40.0,
    "llamacpp:spec_decode_num_accepted_tokens_total": 32.0,
}


def request_time(tpot_s: float) -> float:
    """Send to end of one request of ``request``: TTFT, 10 decode steps, 1 ms to the end of the stream."""
    return 0.1 + 10 * tpot_s + 0.001


def closed_window(
    level: LoadLevel,
    number: int,
    tpot_s: float,
    requests: int = 16,
    burst_tpot_s: float | None = None,
    counters: dict[str, float] | None = None,
    **kw,
) -> Window:
    """A closed-loop window as the client would record it: ``level.value`` slots, each sending its next request
    when one ends; the opening burst (the first C requests) decodes at ``burst_tpot_s``."""
    slots = int(level.value)
    free = [0.0] * slots
    made, sent, ended = [], [], []
    for index in range(requests):
        slot = min(range(slots), key=lambda s: free[s])
        start = free[slot]
        record = request(index, burst_tpot_s if burst_tpot_s and index < slots else tpot_s, **kw)
        record["sent_s"] = start
        free[slot] = start + record["e2e_s"]
        made.append(record)
        sent.append(start)
        ended.append(free[slot])
    steady_start, steady_end = steady_interval(level, sent, ended)
    return Window.from_json(
        {
            "level": level.as_dict(),
            "window": number,
            "duration_s": max(ended),
            "requests": made,
            "steady_start_s": steady_start,
            "steady_end_s": steady_end,
            "warmup": number < 0,
            "counter_delta": counters or {},
        }
    )


def test_steady_interval_leaves_out_the_opening_burst_and_the_drain():
    level = LoadLevel(CONCURRENCY, 4)
    # the opening burst of 4 requests decodes 3 x slower (all prefill together): it must not count
    window = closed_window(level, 0, tpot_s=0.01, burst_tpot_s=0.03, requests=24)
    start, end = window.steady
    assert start == pytest.approx(0.1 + 10 * 0.03 + 0.001)  # the 4th request to end: the last of the burst
    assert end == max(r.sent_s for r in window.requests)  # the last request sent: the drain starts
    part = steady_part(window)
    assert part.requests and all(r.index >= 4 for r, _ in part.requests)
    assert all(x.tpot_s == pytest.approx(0.01, rel=1e-3) for _, x in part.requests)
    # 4 requests in flight, each 11 tokens in 0.201 s: 4 x 11 / 0.201 tok/s while steady
    assert part.output_tokens_per_s == pytest.approx(4 * 11 / 0.201, rel=0.1)
    table = load_table(
        {"base": configuration("base", True)}, {"base": [closed_window(level, w, 0.01, 24, 0.03) for w in range(3)]}, {}
    )
    assert table.loc[0, "tpot_ms_p50"] == pytest.approx(10.0, rel=1e-3)
    assert table.loc[0, "tpot_ms_p99"] == pytest.approx(10.0, rel=1e-3)  # no burst request in the sample
    assert table.loc[0, "steady_requests"] == 3 * len(part.requests)
    assert table.loc[0, "steady_s_mean"] == pytest.approx(end - start)


def test_warmup_window_is_in_no_table():
    level = LoadLevel(CONCURRENCY, 2)
    base = [closed_window(level, -1, tpot_s=0.05)] + [closed_window(level, w, tpot_s=0.01) for w in range(3)]
    spec = [closed_window(level, -1, tpot_s=0.05)] + [closed_window(level, w, tpot_s=0.005) for w in range(3)]
    assert base[0].warmup and not base[1].warmup
    table = load_table(CONFIGURATIONS, {"base": base, "spec": spec}, {}).set_index("configuration")
    assert (table["windows"] == 3).all() and (table["requests"] == 3 * 16).all()
    assert table.loc["base", "tpot_ms_p99"] == pytest.approx(10.0, rel=1e-3)  # the 50 ms warmup is nowhere
    rows = request_rows(CONFIGURATIONS, {}, {"base": base, "spec": spec}, {})
    assert len(rows) == 2 * 3 * 16 and (rows["window"] >= 0).all()
    assert rows["steady"].any() and not rows["steady"].all()


def test_speedup_is_paired_by_window():
    # windows differ by their prompts (+-20 %) and both configurations see the same: the pairs cancel it
    base = {w: 100.0 * f for w, f in enumerate((0.8, 1.0, 1.2))}
    spec = {w: 1.5 * v * (1 + 0.001 * w) for w, v in base.items()}
    paired = paired_speedup(spec, base)
    assert paired.ratio == pytest.approx(1.5, rel=1e-2)
    assert 1.49 < paired.low < 1.5 < paired.high < 1.51 and paired.p_value < 0.001
    independent_low, independent_high = stats.fieller_ratio_interval(
        np.array(list(spec.values())), np.array(list(base.values()))
    )
    assert independent_high - independent_low > 50 * (paired.high - paired.low)
    assert math.isnan(paired_speedup({0: 1.0}, {0: 2.0}).low)  # one pair: no interval


def test_load_table_speedup_percentiles_goodput_and_speculation():
    table = load_table(CONFIGURATIONS, windows_of(), slo={"tpot_ms": 12})
    spec = table[table["configuration"] == "spec"].set_index("load")
    assert list(spec.index) == ["c1", "c2", "c4"]
    # steady throughput is C requests of 11 tokens per request time: the speedup is the request-time ratio
    c1_ratio = request_time(0.01) / request_time(0.01 / 1.5)
    assert spec.loc["c1", "speedup"] == pytest.approx(c1_ratio, rel=0.03)
    assert spec.loc["c1", "speedup_ci95_low"] < spec.loc["c1", "speedup"] < spec.loc["c1", "speedup_ci95_high"]
    assert spec.loc["c1", "speedup_ci95_low"] > 1.0 and spec.loc["c4", "speedup_ci95_high"] < 1.0
    assert spec.loc["c1", "output_tok_s_mean"] == pytest.approx(11 / request_time(0.01 / 1.5), rel=0.03)
    # TPOT of every c4 request of spec is 20.0-20.4 ms: p50 among them, goodput 0 under a 12 ms SLO
    assert 20.0 <= spec.loc["c4", "tpot_ms_p50"] <= 20.4
    assert spec.loc["c4", "goodput_mean"] == 0.0 and spec.loc["c4", "slo_met_pct"] == 0.0
    c1 = spec.loc["c1"]
    assert c1["goodput_mean"] == pytest.approx(c1["request_throughput_mean"])  # every request within the SLO
    assert c1["request_throughput_mean"] == pytest.approx(1 / request_time(0.01 / 1.5), rel=0.1)
    assert c1["acceptance_rate"] == pytest.approx(0.8)
    assert c1["itl_ms_p50"] == pytest.approx(1000 * 0.01 / 1.5, rel=0.02)
    assert spec["text_matches_baseline"].all()
    base = table[table["configuration"] == "base"]
    assert base["speedup"].isna().all()
    assert "ttft_ms_p99" in spec.loc["c4", "approximate_intervals"].split()  # few steady requests per window


def test_crossover_is_the_bracket_of_levels_whose_intervals_exclude_1():
    assert crossover([1, 2, 4], [1.2, 0.9, 0.7], [1.4, 1.1, 0.9]) == Crossover(1, 4, falling=True)
    assert crossover([4, 1, 2], [0.7, 1.2, 0.9], [0.9, 1.4, 1.1]) == Crossover(1, 4, falling=True)  # any order
    assert crossover([1, 2], [1.2, 0.9], [1.4, 1.1]) is None  # the point crosses, the intervals do not
    assert crossover([1, 2, 4], [0.5, 1.1, 1.2], [0.8, 1.3, 1.4]) == Crossover(1, 2, falling=False)
    assert crossover([1, 2], [math.nan, 0.5], [math.nan, 0.8]) is None
    # a level takes a side only where load.csv's Holm verdict says significant
    assert crossover([1, 2, 4], [1.2, 0.9, 0.7], [1.4, 1.1, 0.9], [True, False, False]) is None
    configurations = design.with_sessions(CONFIGURATIONS, 3)
    windows = {}
    for suffix, base, spec in (("", 1.0, 1.01), ("-s2", 1.05, 1.05), ("-s3", 0.97, 0.98)):  # three launches
        launch = windows_of(base, spec)
        windows |= {f"base{suffix}": launch["base"], f"spec{suffix}": launch["spec"]}
    table = load_table(configurations, windows, slo={})
    assert table.loc[~table["baseline"], "significant"].tolist() == [True, False, True]  # c2: equal speeds
    assert table["speedup_p_holm"].dropna().ge(table["speedup_p_value"].dropna()).all()
    (line,) = crossover_lines(table)
    assert line.startswith("spec: speedup above 1 at concurrency 1 and below 1 at 4")
    assert line.endswith("it crosses 1 between concurrency 1 and 4")


def test_windows_of_one_launch_declare_nothing_at_load():
    """One session: its windows are the replicates (within-launch), so no level is called different, whatever
    its interval: launch-to-launch variation is not in it."""
    table = load_table(CONFIGURATIONS, windows_of(), slo={})
    spec = table[~table["baseline"]]
    assert (spec["replicate"] == "window (within-launch)").all() and spec["significant"].isna().all()
    assert spec["speedup_ci95_low"].iloc[0] > 1  # the windows' own interval excludes 1 at c1 ...
    (line,) = crossover_lines(table)
    assert "no crossover resolved" in line and "1: not judged (one launch)" in line  # ... but nothing is declared


def test_request_rows_and_category_table():
    runs = {
        name: [
            Run.from_json(
                {
                    "run": r,
                    "prompt_index": r,
                    "category": CATEGORIES[r % 2],
                    "tokens": 11,
                    "client": {
                        "ttft_s": 0.1,
                        "decode_s": 0.1 * (1 if name == "base" else 0.5),
                        "e2e_s": 0.3,
                        "decode_tokens_per_s": 100.0 * (1 if name == "base" else 2) + r,
                    },
                    "engine": {"timings": {}},
                    "text_sha256": "t",
                    "speculation": {"drafted": 10, "accepted": 5 + r % 2, "verify_steps": 5}
                    if name == "spec"
                    else None,
                }
            )
            for r in range(6)
        ]
        for name in CONFIGURATIONS
    }
    rows = request_rows(CONFIGURATIONS, runs, windows_of(), slo={})
    assert len(rows) == 2 * 6 + 2 * 9 * 16
    assert set(rows["load"]) == {SINGLE, "c1", "c2", "c4"}
    single = rows[(rows["load"] == SINGLE) & (rows["configuration"] == "spec")]
    assert single["tpot_ms"].iloc[0] == pytest.approx(5.0)
    categories = category_table(CONFIGURATIONS, rows)
    spec = categories[(categories["configuration"] == "spec") & (categories["load"] == SINGLE)].set_index("category")
    assert spec.loc["code", "acceptance_rate"] == pytest.approx(0.5)  # runs 0, 2, 4: 5 of 10 each
    assert spec.loc["rewrite", "acceptance_rate"] == pytest.approx(0.6)
    assert spec.loc["rewrite", "accept_length"] == pytest.approx(1 + 18 / 15)
    # without the runs by session, each run is paired with the baseline's same run (one launch)
    assert spec.loc["code", "speedup"] == pytest.approx(np.exp(np.mean(np.log([200 / 100, 202 / 102, 204 / 104]))))
    assert spec.loc["code", "speedup_ci95_low"] < spec.loc["code", "speedup"] < spec.loc["code", "speedup_ci95_high"]
    under_load = categories[(categories["configuration"] == "spec") & (categories["load"] == "c4")]
    assert math.isnan(under_load["accept_length"].astype(float).iloc[0])  # no verify steps per request under load
    assert isinstance(categories, pd.DataFrame)


def test_every_column_is_documented_with_its_meaning():
    from doc_tables import documented_columns

    from specsweep.analyse.loadsummary import CATEGORY_COLUMNS, LOAD_COLUMNS, REQUEST_COLUMNS

    for heading, columns in (
        ("## load.csv", LOAD_COLUMNS),
        ("## requests.csv", REQUEST_COLUMNS),
        ("## categories.csv", CATEGORY_COLUMNS),
    ):
        assert list(documented_columns("load.md", heading).items()) == list(columns.items()), heading


def test_window_records_round_trip_through_json(tmp_path):
    import json

    from specsweep.record.results import load_windows, window_file

    window = windows_of()["spec"][0]
    path = tmp_path / window_file("spec", window.label, window.window)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(window.to_json()))
    (again,) = load_windows([path])["spec"]
    assert again == window
    assert json.loads(path.read_text())["output_tokens_per_s"] == pytest.approx(window.output_tokens_per_s)


def test_category_speedups_use_sessions_and_say_when_a_cell_is_too_small():
    """Issue 21/26: a uniform x1.10 on categories that differ by +-14 % is exactly x1.10 in every category,
    with sessions (not requests) as the replicates; one session per side and one pass is no interval."""
    from run_records import run_record

    from specsweep.analyse.loadsummary import category_table, request_rows
    from specsweep.plan import design
    from specsweep.plan.config import Configuration

    base = {n: Configuration(n, "llama", "llamacpp", n == "base", {}, {}, group=n) for n in ("base", "cand")}
    profile = {"chat": 0.86, "code": 1.14, "math": 1.0}
    rng = np.random.default_rng(3)

    def session(effect: float) -> list:
        launch = float(np.exp(rng.normal(0, 0.03)))
        return [
            run_record(
                {"prompt_index": i, "category": c, "client": {"decode_tokens_per_s": 50 * effect * f * launch}}, i
            )
            for i, (c, f) in enumerate(profile.items())
        ]

    configurations = design.with_sessions(base, 3)
    runs = {n: session(1.10 if (c.session_of or n) == "cand" else 1.0) for n, c in configurations.items()}
    table = category_table(configurations, request_rows(configurations, runs, {}, {}), runs)
    cand = table[table["configuration"] == "cand"].set_index("category")
    assert list(cand.index) == list(profile) and (cand["units"] == 3).all() and (cand["requests"] == 3).all()
    assert (cand["speedup_ci95_low"] > 0).all()
    assert ((cand["speedup_ci95_low"] < 1.10) & (cand["speedup_ci95_high"] > 1.10)).all()
    one = {n: runs[n] for n in base}
    alone = category_table(base, request_rows(base, one, {}, {}), one)
    assert alone.loc[alone["configuration"] == "cand", "speedup_ci95_low"].isna().all()
    assert alone.loc[alone["configuration"] == "cand", "note"].str.contains("noise not estimable").all()


def chunked(window: Window, every: int, exact: bool = False) -> Window:
    """``window`` as an engine that sends several tokens per event would stream it: a first event with the
    first token, then one event per ``every`` tokens (the last with the rest); each event counted 1 unless
    ``exact`` (an event that lists its tokens)."""
    requests = []
    for r in window.requests:
        arrivals = np.cumsum(r.arrivals_us)
        kept = sorted({0, *range(every, len(arrivals), every), len(arrivals) - 1})
        carried = [1] + [b - a for a, b in itertools.pairwise(kept)]
        requests.append(
            {
                **r.to_json(),
                "arrivals_us": list(np.diff(arrivals[kept], prepend=0).astype(int)),
                "event_tokens": carried if exact else [1] * len(kept),
                "exact_events": exact,
            }
        )
    return Window.from_json({**window.to_json(), "requests": requests})


def test_output_tokens_are_the_engines_count_not_the_events():
    # vLLM: a chunk carries several tokens and says only that it carries text (issue 36 item 1: load.csv read
    # 177.8 tok/s where bench_serve.json gave 263.6); the same window streamed token by token and in chunks
    whole = replace(closed_window(LoadLevel(CONCURRENCY, 2), 0, 0.01), steady_start_s=None, steady_end_s=None)
    assert steady_part(chunked(whole, 3)).tokens == steady_part(whole).tokens == 16 * 11
    windows = {"base": [closed_window(LoadLevel(CONCURRENCY, 2), 0, 0.01)]}
    windows["spec"] = [chunked(windows["base"][0], 3)]
    table = load_table(CONFIGURATIONS, windows, {}).set_index("configuration")
    assert table.loc["spec", "output_tok_s_mean"] == pytest.approx(table.loc["base", "output_tok_s_mean"], rel=0.02)


def test_a_request_whose_count_its_stream_does_not_carry_is_flagged_and_counted_nowhere():
    # issue 35 item 6 at load: a llama-server stream carrying 4 of 16 tokens whose final event claims 16
    window = closed_window(LoadLevel(CONCURRENCY, 2), 0, 0.01)
    data = window.to_json()
    data["requests"][5] = {**data["requests"][5], "event_tokens": [1] * 4 + [0] * 7, "exact_events": True}
    flagged = Window.from_json(data)
    assert flagged.requests[5].flagged == "the engine reports 11 tokens but its stream carried 4"
    part = steady_part(flagged)
    assert all(r.index != 5 for r, _ in part.requests + part.ended)
    assert flagged.tokens == window.tokens - 11
    table = load_table(CONFIGURATIONS, {"base": [window], "spec": [flagged]}, {}).set_index("configuration")
    assert (table.loc["spec", "requests_flagged"], table.loc["base", "requests_flagged"]) == (1, 0)
    assert table.loc["spec", "steady_requests"] < table.loc["base", "steady_requests"]
    rows = request_rows(CONFIGURATIONS, {}, {"spec": [flagged]}, {})
    assert rows["flagged"].notna().sum() == 1


def test_speculation_of_a_vllm_window_comes_from_its_counter_deltas():
    # vLLM's responses carry no per-request counts; each window's counter deltas do (issue 36 item 2: load.csv
    # left these empty while bench_serve.json computed 51.1 % from the same counters)
    delta = {
        "vllm:spec_decode_num_drafts_total": 40.0,
        "vllm:spec_decode_num_draft_tokens_total": 120.0,
        "vllm:spec_decode_num_accepted_tokens_total": 61.0,
    }
    level = LoadLevel(CONCURRENCY, 2)
    windows = {"base": [closed_window(level, w, 0.01) for w in range(2)]}
    windows["spec"] = [closed_window(level, w, 0.008, counters=delta) for w in range(2)]
    table = load_table(CONFIGURATIONS, windows, {}).set_index("configuration")
    spec = table.loc["spec"]
    assert (spec["drafted"], spec["accepted"], spec["verify_steps"]) == (240, 122, 80)
    assert spec["acceptance_rate"] == pytest.approx(122 / 240)
    assert spec["accept_length"] == pytest.approx(1 + 122 / 80)
    assert pd.isna(table.loc["base", "drafted"]) and pd.isna(table.loc["base", "acceptance_rate"])


def test_sessions_are_the_replicate_at_load():
    # issue 36 item 3: windows keyed by number kept only the last session's, so candidate sessions of 150 then
    # 110 % of the baseline read x1.10, swapped x1.50; paired by session the speedup is their geometric mean
    from specsweep.plan import design

    level = LoadLevel(CONCURRENCY, 2)
    configurations = design.with_sessions(CONFIGURATIONS, 2)

    def speedup(first: float, second: float) -> pd.Series:
        windows = {s: [closed_window(level, w, 0.01 * (1 + 0.01 * w)) for w in range(3)] for s in ("base", "base-s2")}
        for session, factor in (("spec", first), ("spec-s2", second)):
            windows[session] = [closed_window(level, w, 0.01 * (1 + 0.01 * w) / factor) for w in range(3)]
        return load_table(configurations, windows, {}).set_index("configuration").loc["spec"]

    one, other = speedup(1.5, 1.1), speedup(1.1, 1.5)
    assert one["speedup"] == pytest.approx(other["speedup"])
    expected = math.sqrt(
        (request_time(0.01) / request_time(0.01 / 1.5)) * (request_time(0.01) / request_time(0.01 / 1.1))
    )
    assert one["speedup"] == pytest.approx(expected, rel=0.02)
    assert one["speedup_ci95_low"] < one["speedup"] < one["speedup_ci95_high"]  # 1 degree of freedom: wide
    assert (one["replicate"], one["sessions"], one["windows"]) == ("session", 2, 6)
    single = load_table(CONFIGURATIONS, windows_of(), {}).set_index("configuration").loc["spec"]
    assert set(single["replicate"]) == {"window (within-launch)"} and set(single["sessions"]) == {1}


def test_a_simulated_a_a_load_sweep_keeps_its_family_wise_rate_and_coverage():
    """The fast version of make bench's rows (benchmarks/load_coverage.py across_launches): sessions as units,
    Holm over the whole table; per-row tests at 5 % would call one of 6 identical rows different in ~26 %."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import load_coverage

    found = load_coverage.across_launches(600, 0.10)
    assert 0.93 <= found["coverage"] <= 0.97 and found["family_false_positives"] <= 0.08


def test_each_engine_reads_its_own_counters_at_load_and_sglangs_leave_the_columns_empty():
    """The analysis read every engine's window counters as vLLM's or llama.cpp's; the adapter reads its own,
    and SGLang's (verify steps, generated tokens) give no counts for a window of overlapping requests."""
    vllm_delta = {
        "vllm:spec_decode_num_drafts_total": 40.0,
        "vllm:spec_decode_num_draft_tokens_total": 120.0,
        "vllm:spec_decode_num_accepted_tokens_total": 61.0,
    }
    sglang_delta = {"sglang:spec_verify_calls_total": 40.0, "sglang:generation_tokens_total": 200.0}
    level = LoadLevel(CONCURRENCY, 2)
    windows = {"base": [closed_window(level, w, 0.01) for w in range(2)]}
    for kind in ("vllm", "sglang"):
        configurations = {
            "base": CONFIGURATIONS["base"],
            "spec": Configuration(name="spec", engine="e", kind=kind, baseline=False, args={}, env={}, group="spec"),
        }
        windows["spec"] = [closed_window(level, w, 0.008, counters=vllm_delta | sglang_delta) for w in range(2)]
        spec = load_table(configurations, windows, {}).set_index("configuration").loc["spec"]
        if kind == "vllm":
            assert (spec["drafted"], spec["accepted"], spec["verify_steps"]) == (240, 122, 80)
        else:  # no vLLM counter is SGLang's, and its own say nothing at load
            assert all(pd.isna(spec[c]) for c in ("drafted", "accepted", "verify_steps", "accept_length"))


def test_category_speedups_at_load_take_the_session_as_the_replicate():
    # requests as samples gave candidate sessions of 150 then 110 % of the baseline x1.30 (the ratio of the means)
    # with an interval as narrow as its 48 requests, whatever the launches; paired by session, as load.csv's
    level = LoadLevel(CONCURRENCY, 2)
    configurations = design.with_sessions(CONFIGURATIONS, 2)
    windows = {s: [closed_window(level, w, 0.01 * (1 + 0.01 * w)) for w in range(3)] for s in ("base", "base-s2")}
    for session, factor in (("spec", 1.5), ("spec-s2", 1.1)):
        windows[session] = [closed_window(level, w, 0.01 * (1 + 0.01 * w) / factor) for w in range(3)]
    rows = request_rows(configurations, {}, windows, slo={})
    table = category_table(configurations, rows).set_index(["configuration", "category"])
    for category in CATEGORIES:
        row = table.loc[("spec", category)]
        assert row["units"] == 2
        assert row["speedup"] == pytest.approx(math.sqrt(1.5 * 1.1))
        assert row["speedup_ci95_low"] < 1.1 and row["speedup_ci95_high"] > 1.5  # 1 degree of freedom: wide
        assert not row["note"]
    # one session: the windows of one launch are the replicates, and the note says the interval is within it
    alone = category_table(CONFIGURATIONS, request_rows(CONFIGURATIONS, {}, windows_of(), slo={}))
    under_load = alone[(alone["configuration"] == "spec") & (alone["load"] == "c2")]
    assert set(under_load["units"]) == {3}
    assert all(WITHIN_LAUNCH in note for note in under_load["note"])


def test_a_simulated_a_a_load_sweep_s_category_intervals_cover_across_launches():
    """The fast version of make bench's row (benchmarks/load_coverage.py category_across_launches): requests as
    samples ignore the launches, so their intervals undercover at 10 % launch offsets; sessions cover."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    import load_coverage

    found = load_coverage.category_across_launches(60, 0.10)
    assert 0.92 <= found["after"] <= 0.98 and found["before"] < 0.90
