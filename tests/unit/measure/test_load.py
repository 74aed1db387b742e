from __future__ import annotations

import itertools
import random
import threading
import time

import pytest

from specsweep.engines import ADAPTERS
from specsweep.measure.load import run_window, steady_interval
from specsweep.plan.load_levels import (
    CONCURRENCY,
    RAMP_UP,
    REQUEST_RATE,
    Arrivals,
    LoadLevel,
    arrival_times,
    arrivals_of,
    check_load,
    levels_of,
    schedule,
    window_seed,
)
from specsweep.record.configuration import Configuration
from specsweep.record.errors import ConfigError


def configuration(kind="llamacpp", **args) -> Configuration:
    return Configuration(name="c", engine="e", kind=kind, baseline=False, args=args, env={}, group="c")


def test_levels_and_labels():
    levels = levels_of({"load": {"concurrency": [1, 4], "request_rate": [2.5, 1.0]}})
    assert [level.label for level in levels] == ["c1", "c4", "r2.5", "r1"]
    assert levels[1].in_flight == 4 and levels[2].in_flight is None
    assert levels_of({}) == []


def test_arrivals_are_seeded_poisson():
    first, again = arrival_times(4.0, 2000, seed=3), arrival_times(4.0, 2000, seed=3)
    assert first == again and first[0] == 0.0
    assert arrival_times(4.0, 5, seed=4) != first[:5]
    gaps = [b - a for a, b in itertools.pairwise(first)]
    assert sum(gaps) / len(gaps) == pytest.approx(0.25, rel=0.08)  # mean gap 1 / rate
    assert window_seed(1, 0) != window_seed(1, 1)


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


def _cv(gaps: list[float]) -> float:
    mean = sum(gaps) / len(gaps)
    return (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5 / mean


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0, 100.0])
def test_burstiness_shapes_gamma_gaps_of_mean_one_over_rate(burstiness):
    """vLLM's --burstiness: gamma gaps of shape b and scale 1/(rate b), so the mean is 1/rate and the
    coefficient of variation 1/sqrt(b) (1: Poisson; large: nearly constant)."""
    arrivals = Arrivals(burstiness=burstiness)
    times = arrival_times(4.0, 4000, 3, arrivals)
    assert times == arrival_times(4.0, 4000, 3, arrivals) and times[0] == 0.0  # seeded
    gaps = _gaps(times)
    assert sum(gaps) / len(gaps) == pytest.approx(0.25, rel=0.06)
    assert _cv(gaps) == pytest.approx(burstiness**-0.5, rel=0.08)


def test_burstiness_one_keeps_the_earlier_poisson_schedule():
    """Records made before burstiness existed were measured on expovariate gaps: the default keeps them."""
    generator, times = random.Random(window_seed(1, 2)), [0.0]
    for _ in range(9):
        times.append(times[-1] + generator.expovariate(2.0))
    assert arrival_times(2.0, 10, window_seed(1, 2), arrivals_of({"load": {"burstiness": 1.0}})) == times


def test_constant_arrivals_every_one_over_rate_and_recorded_as_vllm_writes_them():
    arrivals = arrivals_of({"load": {"arrivals": "constant"}})
    assert arrival_times(4.0, 5, 9, arrivals) == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
    assert arrivals.as_dict() == {"shape": "constant", "burstiness": "inf"}
    assert arrivals_of({}).as_dict() == {"shape": "gamma", "burstiness": 1.0}
    with pytest.raises(ConfigError, match=r"benchmark/load/burstiness: 2.0 shapes gamma gaps.*arrivals is constant"):
        arrivals_of({"load": {"arrivals": "constant", "burstiness": 2.0}})


@pytest.mark.quiet  # times its sends to 10 ms: beside other tests a thread may wait longer
def test_open_loop_window_sends_on_the_shaped_schedule():
    arrivals = Arrivals("constant")
    sent, _ = run_window(LoadLevel(REQUEST_RATE, 50.0), 6, lambda i: None, seed=5, arrivals=arrivals)
    assert [s.sent_s for s in sent] == pytest.approx([0.02 * i for i in range(6)], abs=0.01)


def test_ramp_up_rates_are_vllms():
    """vLLM's --ramp-up-strategy: at request i of n, progress i / (n - 1); linear start + (end - start) p,
    exponential start (end / start)^p (vllm/benchmarks/serve.py _get_current_request_rate)."""
    linear = LoadLevel(RAMP_UP, 9.0, 1.0, "linear")
    exponential = LoadLevel(RAMP_UP, 8.0, 1.0, "exponential")
    assert linear.rates(5) == pytest.approx([1, 3, 5, 7, 9]) and exponential.rates(4) == pytest.approx([1, 2, 4, 8])
    assert (linear.label, exponential.label) == ("ramp1-9", "ramp1-8exp")
    assert exponential.as_dict() == {
        "kind": "ramp_up",
        "value": 8.0,
        "label": "ramp1-8exp",
        "start": 1.0,
        "strategy": "exponential",
    }
    assert levels_of({"load": {"request_rate": [2], "ramp_up": {"strategy": "linear", "start": 1, "end": 9}}}) == [
        LoadLevel(REQUEST_RATE, 2.0),
        linear,
    ]
    assert linear.in_flight is None


def test_a_ramps_gaps_shrink_as_its_rate_rises():
    """Each gap is drawn at the arriving request's rate: constant gaps 1/rate_i, gamma gaps of mean 1/rate_i."""
    ramp = LoadLevel(RAMP_UP, 9.0, 1.0, "linear")
    assert _gaps(schedule(ramp, 5, 1, Arrivals("constant"))) == pytest.approx([1 / 3, 1 / 5, 1 / 7, 1 / 9])
    many = LoadLevel(RAMP_UP, 100.0, 1.0, "exponential")
    gaps = _gaps(schedule(many, 3000, 2))
    assert sum(gaps[:300]) / 300 > 5 * sum(gaps[-300:]) / 300  # the last tenth arrives far faster
    assert schedule(LoadLevel(REQUEST_RATE, 4.0), 50, 3) == arrival_times(4.0, 50, 3)  # a level without a ramp


def test_a_ramp_of_one_rate_is_refused():
    with pytest.raises(ConfigError, match=r"benchmark/load/ramp_up/end: 2 equals start.*request_rate instead"):
        check_load({"load": {"requests_per_window": 8, "ramp_up": {"strategy": "linear", "start": 2, "end": 2}}}, {})


def test_closed_loop_keeps_exactly_n_in_flight():
    in_flight, peak, lock = [0], [0], threading.Lock()

    def send(index):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.02)
        with lock:
            in_flight[0] -= 1
        return index * 10

    sent, duration = run_window(LoadLevel(CONCURRENCY, 3), 9, send, seed=0)
    assert [s.index for s in sent] == list(range(9)) and [s.result for s in sent] == [10 * i for i in range(9)]
    assert peak[0] == 3
    assert 0.05 < duration < 1.0  # three rounds of 20 ms


@pytest.mark.quiet  # times its sends to 10 ms: beside other tests a thread may wait longer
def test_open_loop_sends_on_the_seeded_schedule():
    sent, _ = run_window(LoadLevel(REQUEST_RATE, 50.0), 10, lambda i: None, seed=5)
    for request, planned in zip(sent, arrival_times(50.0, 10, 5), strict=True):
        assert request.sent_s == pytest.approx(planned, abs=0.01)


def test_a_failed_request_fails_the_window():
    def send(index):
        if index == 2:
            raise RuntimeError("request 2 broke")
        return index

    with pytest.raises(RuntimeError, match="request 2 broke"):
        run_window(LoadLevel(CONCURRENCY, 2), 6, send, seed=0)


def benchmark(**load):
    return {"load": {"requests_per_window": 32, **load}}


@pytest.mark.parametrize(
    ("kind", "flag"),
    [("llamacpp", "-np"), ("llamacpp", "--parallel"), ("sglang", "--max-running-requests"), ("vllm", "--max-num-seqs")],
)
def test_too_few_slots_fail_before_launch(kind, flag):
    with pytest.raises(
        ConfigError, match=f"{flag} 2 serves 2 request.*concurrency asks for 4; set {flag} to at least 4"
    ):
        check_load(benchmark(concurrency=[1, 4]), {"c": configuration(kind, **{flag: 2})})
    check_load(benchmark(concurrency=[1, 2]), {"c": configuration(kind, **{flag: 2})})


def test_unset_slots_are_left_to_the_engine_and_rates_need_none():
    assert ADAPTERS["llamacpp"].slots(configuration()) is None
    check_load(benchmark(concurrency=[8]), {"c": configuration()})
    check_load(benchmark(request_rate=[100.0]), {"c": configuration(**{"-np": 1})})


def test_window_must_hold_a_steady_interval_not_one_burst():
    # 32 requests at concurrency 32 all start and end together (#21: 12,860 tok/s where vllm bench saw 11,620)
    with pytest.raises(
        ConfigError, match=r"requests_per_window: 32 requests at concurrency 32 are one burst.*at least 128"
    ):
        check_load(benchmark(concurrency=[32]), {"c": configuration(**{"-np": 32})})
    check_load(benchmark(concurrency=[8]), {"c": configuration(**{"-np": 8})})


def test_chat_template_only_where_the_engine_renders_it():
    for kind in ("llamacpp", "vllm", "sglang"):  # each renders it through its own server
        check_load({"chat_template": True}, {"c": configuration(kind)})
    with pytest.raises(ConfigError, match="benchmark/chat_template: engine kind external"):
        check_load({"chat_template": True}, {"c": configuration("external")})


@pytest.mark.parametrize(
    ("name", "labels", "configurations"),
    [
        ("load-cpu.yaml", ["c1", "c2", "c4", "r1"], {"baseline", "ngram"}),
        (
            "h200-load.yaml",
            ["c1", "c2", "c4", "c8", "c16", "c32", "c64", "r8", "r32"],
            {"baseline", "ngram-default", "draft-model"},
        ),
        ("h200x2-load-split.yaml", ["c1", "c8", "c64"], {"baseline", "ngram-default", "draft-model"}),
    ],
)
def test_load_examples_pass_their_checks(example_campaign, name, labels, configurations):
    config, expanded = example_campaign(name)
    assert [level.label for level in levels_of(config["benchmark"])] == labels
    assert set(expanded) == configurations
    check_load(config["benchmark"], expanded)
    assert config["benchmark"]["prompts"] == "config/workloads/categories.jsonl"


def test_steady_interval_starts_when_the_opening_burst_has_ended_and_ends_at_the_last_send():
    sent = [0.0, 0.0, 1.0, 1.5, 2.0, 2.5]
    ended = [1.0, 1.5, 2.0, 2.5, 3.0, 3.2]
    assert steady_interval(LoadLevel(CONCURRENCY, 2), sent, ended) == (1.5, 2.5)
    assert steady_interval(LoadLevel(REQUEST_RATE, 2.0), sent, ended) == (1.0, 2.5)  # the first request's end
    assert steady_interval(LoadLevel(CONCURRENCY, 8), sent, ended) == (0.0, 0.0)  # too short: none


@pytest.mark.quiet  # times its sends to 10 ms: beside other tests a thread may wait longer
def test_a_window_records_each_requests_end():
    sent, _ = run_window(LoadLevel(CONCURRENCY, 2), 6, lambda i: time.sleep(0.01 * (1 + i % 2)), seed=0)
    assert all(s.sent_s < s.ended_s for s in sent)
    assert sorted(round(s.ended_s, 2) for s in sent)[:2] == pytest.approx([0.01, 0.02], abs=0.01)


def test_the_walltime_estimate_and_the_job_time_limit_follow_a_ramps_schedule():
    from specsweep.measure.cluster import session_runtime_min
    from specsweep.plan.walltime import estimate

    benchmark = {
        "runs": 1,
        "max_tokens": 16,
        "ready_timeout_s": 10,
        "warmup_requests": 0,
        "request_timeout_s": 60,
        "stop_grace_s": 1,
        "load": {"requests_per_window": 5, "windows": 1, "warmup": False},
    }
    ramp = {**benchmark, "load": {**benchmark["load"], "ramp_up": {"strategy": "linear", "start": 0.1, "end": 0.9}}}
    (estimated,) = estimate({"c": configuration()}, ramp, {})
    (window,) = [p for p in estimated.phases if p.name == "ramp0.1-0.9 windows (1)"]
    request_s = next(p.seconds for p in estimated.phases if p.column == "runs")  # one run: one request alone
    assert window.seconds == pytest.approx(1 / 0.3 + 1 / 0.5 + 1 / 0.7 + 1 / 0.9 + request_s)
    assert session_runtime_min(ramp) - session_runtime_min(benchmark) >= (7.9 + 60) // 60
