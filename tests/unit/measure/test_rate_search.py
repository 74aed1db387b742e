"""The SLO rate search (benchmark.load.rate_search): bisection, a probe's verdict, its checks, slo_rate.csv and
what the wall-time estimate counts. The search on a served stand-in: tests/faults/test_faults_rate_search.py."""

from __future__ import annotations

import json
import math

import pytest

from specsweep.analyse.latency import meets_slo, request_latency
from specsweep.analyse.slorate import comparison_lines, slo_rate_table
from specsweep.measure.cluster import session_runtime_min
from specsweep.measure.rate_search import MEETS, MISSES, SATURATED, judge, search
from specsweep.plan.load_levels import Arrivals
from specsweep.plan.rate_search import RateSearch, objectives_of, rate_search_of
from specsweep.plan.walltime import estimate
from specsweep.record.arrivals import encode_arrivals
from specsweep.record.configuration import Configuration
from specsweep.record.errors import ConfigError
from specsweep.record.results import RateProbe, RateSearchRecord, Window, WindowRequest

SLO = {"ttft_p99_ms": 100.0}


def capacity_probe(capacity: float, log: list[float]):
    """A server that meets the SLOs below ``capacity`` requests/s and saturates above it."""

    def probe(rate: float) -> RateProbe:
        log.append(rate)
        return RateProbe(rate, MEETS if rate <= capacity else SATURATED, "", 10)

    return probe


@pytest.mark.parametrize("capacity", [1.3, 2.0, 4.49, 7.9])
def test_bisection_finds_the_capacity_within_one_step_and_never_probes_above_a_failure(capacity):
    spec, probed = RateSearch(1.0, 9.0, 4), []
    record = search(spec, capacity_probe(capacity, probed), Arrivals())
    assert spec.resolution == 0.5 and len(probed) == spec.probes == 5 and probed[0] == 1.0
    assert record.found_rate <= capacity < record.found_rate + spec.resolution
    for at, rate in enumerate(probed):  # above a failing probe the search never goes
        assert all(later < rate for later in probed[at + 1 :]) or rate <= capacity
    assert not record.at_ceiling and record.arrivals == {"shape": "gamma", "burstiness": 1.0}


def test_below_the_range_and_at_its_ceiling_say_so():
    below = search(RateSearch(2.0, 8.0, 3), capacity_probe(1.0, probed := []), Arrivals())
    assert below.found_rate is None and probed == [2.0] and not below.at_ceiling
    ceiling = search(RateSearch(2.0, 8.0, 3), capacity_probe(100.0, []), Arrivals())
    assert ceiling.found_rate == 8.0 - 0.75 and ceiling.at_ceiling
    assert RateSearchRecord.from_json(ceiling.to_json()) == ceiling


def request(index: int, sent_s: float, ttft_s: float, e2e_s: float, tokens: int = 4) -> WindowRequest:
    step = (e2e_s - ttft_s) / (tokens - 1)
    arrivals = [ttft_s + i * step for i in range(tokens)]
    return WindowRequest(
        index=index,
        sent_s=sent_s,
        prompt_index=index,
        category="c",
        tokens=tokens,
        e2e_s=e2e_s,
        arrivals_us=encode_arrivals(arrivals),
        event_tokens=[1] * tokens,
        text_sha256="",
    )


def probe_window(latencies: list[tuple[float, float]], gap_s: float = 0.1) -> Window:
    """Requests sent every ``gap_s``, each (TTFT, E2E); the steady interval from the first end to the last send."""
    requests = [request(i, i * gap_s, ttft, e2e) for i, (ttft, e2e) in enumerate(latencies)]
    end = max(r.sent_s for r in requests)
    level = {"kind": "request_rate", "value": 1 / gap_s, "label": "r10"}
    return Window(level, 0, "", end + 1.0, requests, steady_start_s=min(r.ended_s for r in requests), steady_end_s=end)


def test_a_probe_meets_misses_or_saturates():
    objectives = objectives_of(SLO)
    calm = judge(probe_window([(0.05, 0.08)] * 12), 10.0, objectives)
    assert calm.verdict == MEETS and calm.measured_ms["ttft_p99_ms"] == pytest.approx(50)
    assert calm.requests == 11  # sent within the steady interval: the first one ended it open
    slow = judge(probe_window([(0.05, 0.08)] * 10 + [(0.15, 0.18)] * 2), 10.0, objectives)
    assert slow.verdict == MISSES and "ttft_p99_ms 150 > 100" in slow.why
    badly = judge(probe_window([(0.05, 0.08)] * 5 + [(0.5, 0.52)] * 2 + [(0.05, 0.08)] * 5), 10.0, objectives)
    assert badly.verdict == SATURATED and "ttft_p99_ms 500 > 3 x 100" in badly.why
    # latency growing along the window: the queue builds up even while each request still meets the SLO
    piling = judge(probe_window([(0.01, 0.02 + 0.03 * i) for i in range(12)]), 10.0, objectives)
    assert piling.verdict == SATURATED and "piling up" in piling.why
    empty = judge(probe_window([(0.05, 5.0)] * 3), 10.0, objectives)  # the first end after the last send
    assert empty.verdict == SATURATED and empty.why == "no steady interval"


def test_late_requests_count_against_the_probe():
    """An overloaded server's last requests end in the drain: judged by when they were sent, they count."""
    window = probe_window([(0.05, 0.08)] * 9 + [(0.15, 0.22)] * 3)
    assert all(not window.in_steady(r) for r in window.requests[-3:])
    assert judge(window, 10.0, objectives_of(SLO)).verdict == MISSES


def test_percentile_objectives_are_the_searchs_and_goodput_keeps_the_per_request_ones():
    slo = {"ttft_ms": 200.0, "ttft_p99_ms": 100.0, "tpot_p90.5_ms": 20.0, "e2e_p50_ms": 900.0}
    assert [(o.metric, o.quantile, o.limit_ms) for o in objectives_of(slo)] == [
        ("ttft", 99.0, 100.0),
        ("tpot", 90.5, 20.0),
        ("e2e", 50.0, 900.0),
    ]
    latency = request_latency(encode_arrivals([0.15, 0.16]), 2, 0.17)
    assert meets_slo(latency, slo)  # TTFT 150 ms: within ttft_ms; the percentile keys are not a request's


@pytest.mark.parametrize(
    ("load", "message"),
    [
        ({"rate_search": {"low": 4, "high": 2, "steps": 3}, "slo": SLO}, r"rate_search/high: 2 is not above low 4"),
        ({"rate_search": {"low": 1, "high": 2, "steps": 3}, "slo": {"ttft_ms": 9}}, r"needs a percentile objective"),
        ({"rate_search": {"low": 1, "high": 2, "steps": 3}, "slo": {"ttft_p150_ms": 9}}, r"slo/ttft_p150_ms"),
    ],
)
def test_a_search_it_cannot_run_is_refused_naming_the_key(load, message):
    with pytest.raises(ConfigError, match=message):
        rate_search_of({"load": load})
    assert rate_search_of({"load": {"concurrency": [1]}}) is None


def configurations(sessions: int) -> dict[str, Configuration]:
    """A baseline and one other configuration, each in ``sessions`` sessions (as plan/design.py names them)."""
    found = {}
    for name, baseline in (("base", True), ("spec", False)):
        found[name] = Configuration(name, "e", "llamacpp", baseline, {}, {}, group=name)
        for k in range(2, sessions + 1):
            found[f"{name}-s{k}"] = Configuration(f"{name}-s{k}", "e", "llamacpp", False, {}, {}, session_of=name)
    return found


def record(found: float | None, high: float = 8.0) -> RateSearchRecord:
    probes = [RateProbe(1.0, MEETS, "", 5), RateProbe(4.5, MISSES, "", 5)]  # one failed: not at the ceiling
    return RateSearchRecord(1.0, high, 3, (high - 1.0) / 8, probes, found)


def test_slo_rate_table_gives_the_interval_over_sessions_and_the_ratio_to_the_baseline():
    searches = {"base": record(2.0), "base-s2": record(2.5), "spec": record(3.0), "spec-s2": record(4.0)}
    table = slo_rate_table(configurations(2), searches).set_index("configuration")
    assert table.loc["base", "slo_rate_mean"] == pytest.approx(2.25)
    assert table.loc["base", "slo_rate_ci95_low"] < 2.25 < table.loc["base", "slo_rate_ci95_high"]
    assert table.loc["spec", "vs_baseline"] == pytest.approx(math.sqrt(1.5 * 1.6))
    assert math.isnan(table.loc["base", "vs_baseline"]) and table.loc["spec", "note"] == ""
    (line,) = comparison_lines(table.reset_index())
    assert line.startswith("spec raises the SLO rate from 2.25 to 3.5 requests/s (x1.55, 95 % CI")


def test_one_session_has_no_interval_and_says_so():
    table = slo_rate_table(configurations(1), {"base": record(3.0), "spec": record(2.0)})
    assert table["slo_rate_ci95_low"].isna().all() and (table["note"] == "one session: no interval").all()
    (line,) = comparison_lines(table)
    assert "spec lowers the SLO rate from 3 to 2 requests/s (x0.67, one session: no interval" in line


def test_sessions_below_the_range_or_at_its_ceiling_are_named():
    ceiling = RateSearchRecord(1.0, 8.0, 3, 0.875, [RateProbe(1.0, MEETS, "", 5)], 7.125)
    table = slo_rate_table(configurations(1), {"base": record(None), "spec": ceiling}).set_index("configuration")
    assert math.isnan(table.loc["base", "slo_rate_mean"]) and "below low 1 in 1 of 1" in table.loc["base", "note"]
    assert "at the ceiling in 1 of 1 session(s): raise high above 8" in table.loc["spec", "note"]
    (line,) = comparison_lines(slo_rate_table(configurations(1), {"base": record(2.0), "spec": ceiling}))
    assert line.endswith("(at the search's ceiling: raise high)")


def test_sessions_that_agree_name_the_step_as_their_uncertainty():
    table = slo_rate_table(configurations(2), {s: record(3.0) for s in ("base", "base-s2", "spec", "spec-s2")})
    assert (table["slo_rate_ci95_low"] == table["slo_rate_ci95_high"]).all()
    assert table["note"].str.contains("every session found the same rate: its uncertainty is the search step").all()


def test_walltime_and_the_job_time_limit_count_the_probes():
    benchmark = {
        "runs": 1,
        "max_tokens": 16,
        "warmup_requests": 0,
        "ready_timeout_s": 10,
        "request_timeout_s": 60,
        "stop_grace_s": 1,
        "load": {"requests_per_window": 10, "windows": 1, "warmup": True, "slo": SLO},
    }
    searching = {**benchmark, "load": {**benchmark["load"], "rate_search": {"low": 0.5, "high": 4, "steps": 3}}}
    one = {"base": configurations(1)["base"]}
    (plain,) = estimate(one, benchmark, {})
    (probed,) = estimate(one, searching, {})
    extra = [p for p in probed.phases if "rate search" in p.name]
    assert [p.name for p in extra] == ["rate search warmup windows", "rate search probes (at most 4)"]
    # each probe's schedule at low (10 / 0.5 s) and its last request, a warmup window before each
    assert probed.seconds - plain.seconds == pytest.approx(sum(p.seconds for p in extra))
    assert all(p.seconds > 4 * 10 / 0.5 for p in extra)
    assert session_runtime_min(searching) - session_runtime_min(benchmark) >= 2 * 4 * (20 + 60) // 60


def test_a_rate_search_record_states_its_format_and_a_newer_one_is_refused(tmp_path):
    from specsweep.record.results import RECORD_FORMAT, NewerRecord, read_rate_search

    path = tmp_path / "rate_search.json"
    written = record(3.0).to_json()
    assert written["format"] == RECORD_FORMAT
    path.write_text(json.dumps(written))
    assert read_rate_search(path) == record(3.0)
    path.write_text(json.dumps({**written, "format": RECORD_FORMAT + 1}))
    with pytest.raises(NewerRecord, match=r"a rate search record of format"):
        read_rate_search(path)


def test_the_run_eta_counts_the_probes_still_to_come():
    from specsweep.plan.walltime import load_windows_left

    load = {"requests_per_window": 10, "windows": 1, "warmup": True, "slo": SLO}
    searching = {"max_tokens": 16, "load": {**load, "rate_search": {"low": 0.5, "high": 4, "steps": 3}}}
    count, seconds = load_windows_left(searching, 2.0)
    assert count == 2 * 4 and seconds == pytest.approx(2 * 4 * (10 / 0.5 + 2.0))  # warmup + probe, each at low
