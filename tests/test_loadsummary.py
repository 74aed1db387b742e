from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from specsweep.analyse.loadsummary import SINGLE, category_table, crossover, crossover_lines, load_table, request_rows
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


def window(level: LoadLevel, number: int, throughput: float, tpot_s: float, spec: bool) -> dict:
    requests = [
        request(i, tpot_s * (1 + 0.01 * number), drafted=10 if spec else None, accepted=8 if spec else None)
        for i in range(4)
    ]
    # duration chosen so that the window's output tok/s is ``throughput`` (44 tokens in all)
    return Window.from_json(
        {
            "level": level.as_dict(),
            "window": number,
            "duration_s": 44 / throughput,
            "requests": requests,
            "counter_delta": {
                "llamacpp:spec_decode_num_drafts_total": 4.0,
                "llamacpp:spec_decode_num_draft_tokens_total": 40.0,
                "llamacpp:spec_decode_num_accepted_tokens_total": 32.0,
            }
            if spec
            else {},
        }
    )


def windows_of() -> dict[str, list[Window]]:
    # spec is 1.5x faster at c1, equal at c2, 0.5x at c4: the crossover lies between 2 and 4
    levels = {1: 1.5, 2: 1.0, 4: 0.5}
    found: dict[str, list[Window]] = {"base": [], "spec": []}
    for n, factor in levels.items():
        level = LoadLevel(CONCURRENCY, n)
        for w, noise in enumerate((-1.0, 0.0, 1.0)):
            found["base"].append(window(level, w, 100.0 * n + noise, 0.01, False))
            found["spec"].append(window(level, w, 100.0 * n * factor + noise, 0.01 / factor, True))
    return found


def test_load_table_speedup_percentiles_goodput_and_speculation():
    table = load_table(CONFIGURATIONS, windows_of(), slo={"tpot_ms": 12})
    spec = table[table["configuration"] == "spec"].set_index("load")
    assert list(spec.index) == ["c1", "c2", "c4"]
    assert spec.loc["c1", "speedup"] == pytest.approx(1.5)
    assert spec.loc["c1", "speedup_ci95_low"] < 1.5 < spec.loc["c1", "speedup_ci95_high"]
    assert spec.loc["c4", "speedup_ci95_high"] < 1.0
    assert spec.loc["c1", "output_tok_s_mean"] == pytest.approx(150.0)
    # TPOT of every c4 request of spec is 20.0-20.4 ms: p50 among them, goodput 0 under a 12 ms SLO
    assert 20.0 <= spec.loc["c4", "tpot_ms_p50"] <= 20.4
    assert spec.loc["c4", "goodput_mean"] == 0.0 and spec.loc["c4", "slo_met_pct"] == 0.0
    assert spec.loc["c1", "goodput_mean"] == pytest.approx(4 * 150 / 44)  # every request within the SLO
    assert spec.loc["c1", "acceptance_rate"] == pytest.approx(0.8)
    assert spec.loc["c1", "accept_length"] == pytest.approx(1 + 96 / 12)
    assert spec.loc["c1", "itl_ms_p50"] == pytest.approx(1000 * 0.01 / 1.5, rel=0.02)
    assert spec["text_matches_baseline"].all()
    base = table[table["configuration"] == "base"]
    assert base["speedup"].isna().all()


def test_crossover_is_interpolated_and_reported():
    assert crossover([1, 2, 4], [1.5, 1.2, 0.8]) == pytest.approx(3.0)
    assert crossover([1, 2, 4], [1.5, 1.2, 1.1]) is None
    assert crossover([4, 1, 2], [0.8, 1.5, 1.2]) == pytest.approx(3.0)  # order of measurement does not matter
    assert crossover([1, 2, 4], [0.5, 0.9, 1.3], falling=False) == pytest.approx(2.5)
    assert crossover([1, 2, 4], [0.5, 0.9, 1.3]) is None
    table = load_table(CONFIGURATIONS, windows_of(), slo={})
    assert crossover_lines(table) == ["spec: speedup falls below 1 at concurrency ~2"]


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
    assert len(rows) == 2 * 6 + 2 * 9 * 4
    assert set(rows["load"]) == {SINGLE, "c1", "c2", "c4"}
    single = rows[(rows["load"] == SINGLE) & (rows["configuration"] == "spec")]
    assert single["tpot_ms"].iloc[0] == pytest.approx(5.0)
    categories = category_table(CONFIGURATIONS, rows)
    spec = categories[(categories["configuration"] == "spec") & (categories["load"] == SINGLE)].set_index("category")
    assert spec.loc["code", "acceptance_rate"] == pytest.approx(0.5)  # runs 0, 2, 4: 5 of 10 each
    assert spec.loc["rewrite", "acceptance_rate"] == pytest.approx(0.6)
    assert spec.loc["rewrite", "accept_length"] == pytest.approx(1 + 18 / 15)
    assert spec.loc["code", "speedup"] == pytest.approx(np.mean([200, 202, 204]) / np.mean([100, 102, 104]))
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
