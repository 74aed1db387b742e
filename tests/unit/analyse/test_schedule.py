"""The speculation setting per batch size in vLLM's schedule form (analyse/schedule.py), read off load.csv's
level verdicts: no range where a level is not resolved, none above the highest measured level."""

from __future__ import annotations

import json

import pandas as pd

from specsweep.analyse import schedule
from specsweep.analyse.loadbest import BEST, EQUIVALENT, OPEN, SLOWER
from specsweep.record.configuration import Configuration

FLAG = "--speculative-config.num_speculative_tokens"


def configuration(name: str, k: int | None) -> Configuration:
    axes = {} if k is None else {FLAG: k}
    return Configuration(name=name, engine="v", kind="vllm", baseline=k is None, args={}, env={}, axes=axes)


CONFIGURATIONS = {"base": configuration("base", None), "k1": configuration("k1", 1), "k3": configuration("k3", 3)}


def table(verdicts: dict[int, dict[str, str]], rate: float | None = None) -> pd.DataFrame:
    rows = [
        {"configuration": name, "load": f"c{c}", "load_kind": "concurrency", "load_value": c, "level_verdict": v}
        for c, by_name in verdicts.items()
        for name, v in by_name.items()
    ]
    if rate is not None:  # an open-loop level: no batch size, no range
        rows.append({"configuration": "k3", "load": f"r{rate:g}", "load_kind": "request_rate", "load_value": rate,
                     "level_verdict": BEST})  # fmt: skip
    return pd.DataFrame(rows)


def test_each_level_s_best_covers_the_batch_sizes_from_the_level_below():
    verdicts = {
        1: {"base": SLOWER, "k1": EQUIVALENT, "k3": BEST},
        2: {"base": SLOWER, "k1": SLOWER, "k3": BEST},
        8: {"base": EQUIVALENT, "k1": BEST, "k3": SLOWER},
        32: {"base": BEST, "k1": SLOWER, "k3": SLOWER},
    }
    found = schedule.schedule(table(verdicts, rate=4.0), CONFIGURATIONS, FLAG)
    assert found[schedule.SCHEDULE_KEY] == [[1, 2, 3], [3, 8, 1], [9, 32, 0]]  # k3 twice merged; base is k = 0
    assert found["levels"]["c8"] == "best k1 (k = 1)" and "r4" not in found["levels"]


def test_a_level_not_resolved_claims_nothing_and_nothing_is_extrapolated():
    verdicts = {
        4: {"base": SLOWER, "k1": BEST, "k3": EQUIVALENT},
        16: {"base": OPEN, "k1": OPEN, "k3": SLOWER},
        64: {"base": BEST, "k1": SLOWER, "k3": SLOWER},
    }
    found = schedule.schedule(table(verdicts), CONFIGURATIONS, FLAG)
    # c4 starts at 4 (nothing measured below), c64 at 64 (its neighbour below was not resolved), none past 64
    assert found[schedule.SCHEDULE_KEY] == [[4, 4, 1], [64, 64, 0]]
    assert found["levels"]["c16"] == "not resolved"


def test_the_swept_flag_is_the_one_numeric_axis(tmp_path):
    assert schedule.swept_flag(CONFIGURATIONS) == FLAG
    two = {**CONFIGURATIONS, "x": Configuration("x", "v", "vllm", False, {"--other": 5}, {}, axes={FLAG: 3})}
    two["y"] = Configuration("y", "v", "vllm", False, {"--other": 7}, {}, axes={FLAG: 1})
    assert schedule.swept_flag(two) is None  # two flags vary: no one schedule
    path = tmp_path / "speculation_schedule.json"
    assert schedule.write(table({1: {"k1": BEST}}), two, path) == [
        "speculation schedule: none (the sweep varies no one speculative flag)"
    ]
    assert json.loads(path.read_text())[schedule.SCHEDULE_KEY] is None and schedule.conclusion_lines(path) == []


def test_the_conclusion_quotes_the_schedule(tmp_path):
    path = tmp_path / "speculation_schedule.json"
    printed = schedule.write(table({1: {"base": SLOWER, "k3": BEST, "k1": SLOWER}}), CONFIGURATIONS, path)
    assert printed == [f"speculation schedule ({FLAG}, vLLM's num_speculative_tokens_per_batch_size): [[1, 1, 3]]"]
    assert schedule.conclusion_lines(path) == ["  " + printed[0]]
