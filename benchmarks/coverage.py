"""Coverage of summary.csv's intervals and the conclusion's family-wise false-positive rate, by simulation
through the library's own ``aggregate.summarise`` (whatever version is on the path).

    .venv/bin/python benchmarks/coverage.py [--sweeps N]                 (a row of make bench)
    PYTHONPATH=<old checkout>/src .venv/bin/python benchmarks/coverage.py   (the figures before)

The noise the project documents: a launch offset per session (log-normal, 3 % or 10 %), category effects
(7 categories, one prompt each, ±14 %), heavy-tailed run noise (Student t with 3 df, 2 %), and a sweep
whose first session (in the design's order) runs 3 % faster, as measured on a shared VM. Each sweep is
measured as the pipeline of that version measures it: the sessions of ``benchmark.sessions`` of the
default sweep where the design has them (plan/design.py ``with_sessions``), else one per configuration.
Each interval is scored against its own estimand: the workload rate (tokens over time of a pass) where
the summary reports it, else the mean of per-run rates (the earlier method), both at the median launch.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import json
import math
from typing import Any

import numpy as np

from specsweep.analyse import aggregate, effects, loadsummary, replicates
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.record.results import Run
from specsweep.report import compare

CATEGORIES = np.array([0.86, 0.93, 1.0, 1.07, 1.14, 0.9, 1.1])  # a prompt's rate relative to the mean
TOKENS = 300
RUN_SD = 0.02
BASE_RATE = 50.0
DEFAULT_SESSIONS = 2  # config/config.yaml's benchmark.sessions
# six configurations like the default sweep's: the baseline, the x1.10 candidate whose intervals are scored,
# and four others (a draft model at half speed among them)
DEFAULT_LIKE = {"base": 1.0, "cand": 1.10, "m3": 1.0, "m24": 0.9, "default": 1.2, "draft": 0.5}


def _run(index: int, rate: float) -> Run:
    seconds = (TOKENS - 1) / rate
    prompt = index % len(CATEGORIES)  # run i is prompt i modulo the prompts (several passes)
    return Run.from_json(
        {
            "run": index,
            "prompt_index": prompt,
            "category": f"c{prompt}",
            "tokens": TOKENS,
            "text_sha256": "t",
            "client": {
                "ttft_s": 0.05,
                "decode_s": seconds,
                "e2e_s": seconds + 0.05,
                "decode_tokens_per_s": rate,
                "itl_median_s": 1 / rate,
                "itl_p90_s": 1 / rate,
                "content_events": TOKENS,
            },
        }
    )


def _configuration(name: str, baseline: bool, compared_with: str | None = None) -> Configuration:
    return Configuration(name, "llama", "llamacpp", baseline, {}, {}, group=name, compared_with=compared_with)


def has_sessions() -> bool:
    return hasattr(design, "with_sessions")


def sweep(
    rng: np.random.Generator,
    effects: dict[str, float],
    launch_sd: float,
    sessions: int,
    category_effects: bool = True,
    first_boost: float = 0.0,
    passes: int = 1,
    compared: dict[str, str | None] | None = None,
    noisier: dict[str, float] | None = None,
) -> tuple[dict[str, Configuration], dict[str, list[Run]]]:
    """One simulated sweep: configuration -> true speedup (the first is the baseline). ``first_boost``: the
    sweep's first session (in the design's order) is that much faster, as measured on a shared VM;
    ``passes``: passes over the prompts in each session; ``compared``: each configuration's baseline (None for
    a baseline; default: the first is the only baseline); ``noisier``: configurations whose launch offset is
    that many times ``launch_sd``."""
    against = compared or {name: None if i == 0 else next(iter(effects)) for i, name in enumerate(effects)}
    base = {name: _configuration(name, against[name] is None, against[name] if compared else None) for name in effects}
    configurations = design.with_sessions(base, sessions) if has_sessions() else base
    first = design.session_order(configurations)[0] if hasattr(design, "session_order") else next(iter(base))
    profile = np.tile(CATEGORIES if category_effects else np.ones_like(CATEGORIES), passes)
    runs = {}
    for name, configuration in configurations.items():
        own = getattr(configuration, "session_of", None) or name
        launch = math.exp(rng.normal(0, launch_sd * (noisier or {}).get(own, 1.0)))
        launch *= 1 + first_boost if name == first else 1
        noise = np.exp(RUN_SD * rng.standard_t(3, len(profile)) / math.sqrt(3))
        rates = BASE_RATE * effects[own] * launch * profile * noise
        runs[name] = [_run(i, float(r)) for i, r in enumerate(rates)]
    return configurations, runs


def _truths(effect: float, workload: bool, category_effects: bool = True) -> float:
    profile = BASE_RATE * effect * (CATEGORIES if category_effects else np.ones_like(CATEGORIES))
    return float(len(profile) / (1 / profile).sum()) if workload else float(profile.mean())


# The real A/A test (tests/workflow/test_aa_end_to_end.py) fails a sweep only for a Holm-adjusted p below this
# (tests/aa_verdict.py's FALSE_ALARM_P): the share of simulated A/A sweeps below it is how often that test
# would fail by chance, beside the 5 % the pipeline's own family-wise rate allows.
AA_TEST_P = 0.001

# (launch offset, first-session boost): the documented launch offsets, and the 3 % launch offset with the
# sweep's first session 3 % faster (+1.4 to +4 % in real A/A sweeps on a shared 2-core VM, docs/summary.md)
SCENARIOS = ((0.03, 0.0), (0.10, 0.0), (0.03, 0.03))


def measure(sweeps: int, launch_sd: float, seed: int = 21, first_boost: float = 0.0) -> dict[str, Any]:
    """Coverage of tok/s and speedup intervals (a x1.10 candidate) and the family-wise false-positive rate of
    an A/A sweep (a baseline and three identical configurations), at one launch offset (and a first
    session ``first_boost`` faster): at the pipeline's 5 %, and at the real A/A test's ``AA_TEST_P``."""
    rng = np.random.default_rng(seed)
    sessions = DEFAULT_SESSIONS if has_sessions() else 1
    covered = {"decode_tok_s": 0, "speedup": 0, "category_speedup": 0, "best_speedup": 0}
    cells = detected = 0
    scored = dict.fromkeys(covered, 0)
    false_positive = aa_test_false_alarm = 0
    for _ in range(sweeps):
        configurations, runs = sweep(rng, DEFAULT_LIKE, launch_sd, sessions, first_boost=first_boost)
        frame = aggregate.summarise(configurations, runs, {}).set_index("configuration")
        workload = "interval_unit" in frame.columns
        for key, low, high, truth in (
            (
                "decode_tok_s",
                *frame.loc["base", ["decode_tok_s_ci95_low", "decode_tok_s_ci95_high"]],
                _truths(1.0, workload),
            ),
            (
                "speedup",
                *frame.loc["cand", ["speedup_ci95_low", "speedup_ci95_high"]],
                _truths(1.10, workload) / _truths(1.0, workload),
            ),
        ):
            if not (math.isnan(low) or math.isnan(high)):
                scored[key] += 1
                covered[key] += low <= truth <= high
        detected += bool(frame.loc["cand", "significant"] is True or frame.loc["cand", "significant"] == True)  # noqa: E712
        # per category: the effect is a uniform x1.10, so every category's speedup is 1.10
        for low, high in _category_intervals(configurations, runs, "cand"):
            cells += 1
            if not (math.isnan(low) or math.isnan(high)):
                scored["category_speedup"] += 1
                covered["category_speedup"] += low <= 1.10 <= high
        configurations, runs = sweep(
            rng, {"base": 1.0, "a": 1.0, "b": 1.0, "c": 1.0}, launch_sd, sessions, first_boost=first_boost
        )
        frame = aggregate.summarise(configurations, runs, {}).set_index("configuration")
        false_positive += bool(frame["significant"].fillna(False).astype(bool).any())
        aa_test_false_alarm += bool((frame["speedup_p_holm"] < AA_TEST_P).any()) if "speedup_p_holm" in frame else 0
        # the configuration that looks best, with the interval the conclusion quotes for it
        best = frame.loc[["a", "b", "c"], "decode_tok_s_mean"].idxmax()
        stem = "speedup_sim95" if "speedup_sim95_low" in frame.columns else "speedup_ci95"
        low, high = frame.loc[best, [f"{stem}_low", f"{stem}_high"]]
        if not (math.isnan(low) or math.isnan(high)):
            scored["best_speedup"] += 1
            covered["best_speedup"] += low <= 1.0 <= high
    return {
        "launch_sd": launch_sd,
        "first_session_boost": first_boost,
        "sessions": sessions,
        "sweeps": sweeps,
        **{f"{key}_coverage": covered[key] / scored[key] if scored[key] else math.nan for key in covered},
        "category_cells_with_interval": scored["category_speedup"] / cells if cells else math.nan,
        "familywise_false_positive": false_positive / sweeps,
        "aa_test_false_alarm": aa_test_false_alarm / sweeps,
        "power_x1.10": detected / sweeps,
    }


def one_session_false_positive(sweeps: int, launch_sd: float, passes: int = 3, seed: int = 23) -> dict[str, Any]:
    """benchmark.sessions: 1 with ``passes`` passes: the share of A/A sweeps (a baseline and three identical
    configurations, one launch each) where summary.csv calls any configuration significant."""
    rng = np.random.default_rng(seed)
    false_positive = 0
    for _ in range(sweeps):
        configurations, runs = sweep(rng, {"base": 1.0, "a": 1.0, "b": 1.0, "c": 1.0}, launch_sd, 1, passes=passes)
        frame = aggregate.summarise(configurations, runs, {})
        false_positive += bool(frame["significant"].fillna(False).astype(bool).any())
    return {"launch_sd": launch_sd, "passes": passes, "familywise_false_positive": false_positive / sweeps}


def _result_set(rng: np.random.Generator, launch_sd: float, sessions: int) -> compare.ResultSet:
    """One unchanged sweep as compare reads it: the A/A configurations' session folders and run rates."""
    configurations, runs = sweep(rng, {"base": 1.0, "a": 1.0, "b": 1.0, "c": 1.0}, launch_sd, sessions)
    rates = {name: [r.decode_tokens_per_s for r in found] for name, found in runs.items()}
    result = compare.ResultSet("sim", rates, {})
    if hasattr(result, "sessions"):  # the configuration's sessions as launch.json's session_of groups them
        result.sessions = design.sessions_of(configurations) if has_sessions() else {n: [n] for n in rates}
    return result


def compare_false_positive(sweeps: int, launch_sd: float, seed: int = 29) -> dict[str, Any]:
    """An unchanged rerun (both sweeps of DEFAULT_SESSIONS sessions): the share of compared rows called
    different (significant), and the coverage of the true ratio 1 by their intervals."""
    rng = np.random.default_rng(seed)
    called = covered = rows = 0
    for _ in range(sweeps):
        sessions = DEFAULT_SESSIONS if has_sessions() else 1
        frame = compare.compare(_result_set(rng, launch_sd, sessions), _result_set(rng, launch_sd, sessions))
        compared = frame[frame["status"] == "compared"]
        rows += len(compared)
        called += int(compared["significant"].eq(True).sum())
        covered += int(((compared["ratio_ci95_low"] <= 1) & (compared["ratio_ci95_high"] >= 1)).sum())
    return {"false_positive": called / rows, "coverage": covered / rows}


# a factorial A/A sweep: factor spec (off the baseline level) crossed with 4 levels of another factor, each on
# compared with the off of its level: 4 baselines, 4 comparisons, every configuration identical
FACTORIAL = {f"{spec}-t{t}": (None if spec == "off" else f"off-t{t}") for t in range(1, 5) for spec in ("off", "on")}


def factorial_false_positive(sweeps: int, launch_sd: float, seed: int = 31) -> float:
    """The share of factorial A/A sweeps (FACTORIAL) where summary.csv calls any configuration significant."""
    rng = np.random.default_rng(seed)
    sessions = DEFAULT_SESSIONS if has_sessions() else 1
    called = 0
    for _ in range(sweeps):
        configurations, runs = sweep(rng, dict.fromkeys(FACTORIAL, 1.0), launch_sd, sessions, compared=FACTORIAL)
        called += bool(aggregate.summarise(configurations, runs, {})["significant"].eq(True).any())
    return called / sweeps


def effects_false_positive(sweeps: int, launch_sd: float, seed: int = 37) -> float:
    """effects.csv on the FACTORIAL A/A sweep (spec x threads, 2 x 4): the share of sweeps whose null main
    effect of spec has p < 0.05 for tok/s."""
    rng = np.random.default_rng(seed)
    sessions = DEFAULT_SESSIONS if has_sessions() else 1
    called = 0
    for _ in range(sweeps):
        configurations, runs = sweep(rng, dict.fromkeys(FACTORIAL, 1.0), launch_sd, sessions, compared=FACTORIAL)
        crossed = {}
        for name, c in configurations.items():
            spec, threads = (getattr(c, "session_of", None) or name).split("-")
            levels = {"spec": spec, "threads": threads}
            crossed[name] = dataclasses.replace(c, levels=levels, baseline_factors=["spec"] if spec == "off" else [])
        frame = effects.table(effects.analyses(crossed, runs)[0])
        main = frame[(frame["response"] == "decode_tok_s") & (frame["factor"] == "spec")]
        called += bool((main["p_value"] < 0.05).any())
    return called / sweeps


TOKENS_PER_JOULE = 3.5


def _with_energy(run: Run, tokens_per_joule: float) -> Run:
    """The run with a GPU energy counter that moved by its tokens / ``tokens_per_joule``."""
    millijoules = round(1000 * run.tokens / tokens_per_joule)
    counter = {"energy_mj": [10**9, 10**9 + millijoules], "power_mw": [millijoules, millijoules]}
    telemetry = {"duration_s": 1.0, "t_ms": [0, 1000], "gpus": {"0": counter}, "rapl": {}, "contention": None}
    return Run.from_json({**run.to_json(), "telemetry": telemetry})


def energy_coverage(sweeps: int, launch_sd: float, seed: int = 41) -> float:
    """The share of sweeps (DEFAULT_LIKE, DEFAULT_SESSIONS sessions) whose tokens_per_joule interval of the
    baseline holds its value at the median launch; each launch moves energy per token by ``launch_sd``."""
    rng = np.random.default_rng(seed)
    sessions = DEFAULT_SESSIONS if has_sessions() else 1
    truth = TOKENS_PER_JOULE * float(CATEGORIES.mean())
    covered = scored = 0
    for _ in range(sweeps):
        configurations, runs = sweep(rng, DEFAULT_LIKE, launch_sd, sessions)
        for name, found in runs.items():
            launch = math.exp(rng.normal(0, launch_sd))
            noise = np.exp(RUN_SD * rng.standard_normal(len(found)))
            runs[name] = [
                _with_energy(r, TOKENS_PER_JOULE * launch * CATEGORIES[r.prompt_index] * e)
                for r, e in zip(found, noise, strict=True)
            ]
        frame = aggregate.summary_table(aggregate.Measured(configurations, runs, {}, {}), {}).set_index("configuration")
        low, high = frame.loc["base", ["tokens_per_joule_ci95_low", "tokens_per_joule_ci95_high"]]
        if not (math.isnan(low) or math.isnan(high)):
            scored += 1
            covered += low <= truth <= high
    return covered / scored if scored else math.nan


def noisy_called(sweeps: int, launch_sd: float, seed: int = 43) -> float:
    """The share of configurations (DEFAULT_LIKE, DEFAULT_SESSIONS sessions) summary.csv calls noisy (CV above
    10 %) when their true launch-to-launch CV is ``launch_sd``: below the limit, a call is a false alarm."""
    rng = np.random.default_rng(seed)
    sessions = DEFAULT_SESSIONS if has_sessions() else 1
    called = rows = 0
    for _ in range(sweeps):
        frame = aggregate.summarise(*sweep(rng, DEFAULT_LIKE, launch_sd, sessions), {})
        rows += len(frame)
        called += int(frame["warnings"].str.contains("noisy: CV").sum())
    return called / rows


BUSY = {"other_cpu_s": 40.0, "other_cpu_pct": 60.0, "steal_pct": 0.0, "top_other": [], "gpu_other_processes": []}


def _contended(run: Run, slowdown: float) -> Run:
    """The run measured while another process took the CPUs: ``slowdown`` times its rate, said in its telemetry."""
    record = run.to_json()
    client = {**record["client"], "decode_tokens_per_s": run.decode_tokens_per_s * slowdown}
    client["decode_s"] = (run.tokens - 1) / client["decode_tokens_per_s"]
    telemetry = {"duration_s": 1.0, "t_ms": [0], "gpus": {}, "rapl": {}, "contention": BUSY}
    return Run.from_json({**record, "client": client, "telemetry": telemetry})


@functools.cache
def contended_session(sweeps: int, launch_sd: float, seed: int = 47) -> dict[str, float]:
    """DEFAULT_LIKE with the last session of an unrelated configuration (m24) contended at 0.6 x its rate:
    the power to detect the x1.10 candidate, and the coverage of its speedup interval."""
    rng = np.random.default_rng(seed)
    sessions = DEFAULT_SESSIONS if has_sessions() else 1
    truth = _truths(1.10, True) / _truths(1.0, True)
    detected = covered = 0
    for _ in range(sweeps):
        configurations, runs = sweep(rng, DEFAULT_LIKE, launch_sd, sessions)
        last = [n for n, c in configurations.items() if (getattr(c, "session_of", None) or n) == "m24"][-1]
        runs[last] = [_contended(r, 0.6) for r in runs[last]]
        frame = aggregate.summarise(configurations, runs, {}).set_index("configuration")
        detected += frame.loc["cand", "significant"] is True or frame.loc["cand", "significant"] == True  # noqa: E712
        low, high = frame.loc["cand", ["speedup_ci95_low", "speedup_ci95_high"]]
        covered += bool(low <= truth <= high)
    return {"power": detected / sweeps, "coverage": covered / sweeps}


NOISIER = 3.0  # a noisy configuration's launch offset: 3 x the others' (9 x the variance)


@functools.cache
def noisy_configuration(
    sweeps: int, launch_sd: float, sessions: int = DEFAULT_SESSIONS, seed: int = 53
) -> dict[str, float]:
    """One configuration with NOISIER x the others' launch offset: the coverage of its x1.10 speedup interval
    (DEFAULT_LIKE, the candidate noisy), and the family-wise false positives of an A/A sweep whose baseline is
    the noisy one, at ``sessions`` per configuration."""
    rng = np.random.default_rng(seed)
    sessions = sessions if has_sessions() else 1
    truth = _truths(1.10, True) / _truths(1.0, True)
    covered = scored = false_positive = 0
    for _ in range(sweeps):
        frame = aggregate.summarise(*sweep(rng, DEFAULT_LIKE, launch_sd, sessions, noisier={"cand": NOISIER}), {})
        low, high = frame.set_index("configuration").loc["cand", ["speedup_ci95_low", "speedup_ci95_high"]]
        if not (math.isnan(low) or math.isnan(high)):
            scored += 1
            covered += bool(low <= truth <= high)
        aa = {"base": 1.0, "a": 1.0, "b": 1.0, "c": 1.0}
        frame = aggregate.summarise(*sweep(rng, aa, launch_sd, sessions, noisier={"base": NOISIER}), {})
        false_positive += bool(frame["significant"].eq(True).any())
    return {"coverage": covered / scored if scored else math.nan, "false_positive": false_positive / sweeps}


VERDICT_OFFSETS = (0.03, 0.10)  # the documented launch offsets
CLAIMED = replicates.OWN_SPREAD_SESSIONS  # the sessions from which a noisier configuration's intervals are claimed
OUTSIDE = "(outside the claim: 1 df per configuration cannot tell an own spread)"


def verdicts(sweeps: int) -> list[dict[str, Any]]:
    """The verdicts beside summary.csv's headline ones, each a row of make bench: what, figure, goal."""
    # each simulation once per offset: several rows read one result
    compared = {sd: compare_false_positive(sweeps, sd) for sd in VERDICT_OFFSETS}
    contended = {sd: contended_session(sweeps, sd) for sd in VERDICT_OFFSETS}
    noisy = {sd: noisy_configuration(sweeps, sd, CLAIMED) for sd in VERDICT_OFFSETS}
    noisy_few = {sd: noisy_configuration(sweeps, sd) for sd in VERDICT_OFFSETS}
    checks = (
        (
            "one session, 3 passes: A/A family-wise false positives",
            "≤ 5 %",
            lambda sd: one_session_false_positive(sweeps, sd)["familywise_false_positive"],
        ),
        ("compare, unchanged rerun: rows called different", "≤ 5 %", lambda sd: compared[sd]["false_positive"]),
        ("compare, unchanged rerun: intervals holding 1", "95 ± 2 %", lambda sd: compared[sd]["coverage"]),
        (
            "factorial A/A, 4 baselines: family-wise false positives",
            "≤ 5 %",
            lambda sd: factorial_false_positive(sweeps, sd),
        ),
        ("effects.csv, null main effect: p < 0.05", "≤ 5 %", lambda sd: effects_false_positive(sweeps, sd)),
        ("summary.csv tokens/J interval: coverage", "95 ± 2 %", lambda sd: energy_coverage(sweeps, sd)),
        (
            "a contended session elsewhere: x1.10 speedup coverage",
            "95 ± 2 %",
            lambda sd: contended[sd]["coverage"],
        ),
        (
            "a contended session elsewhere: power for x1.10",
            "as quiet",
            lambda sd: contended[sd]["power"],
        ),
        (
            f"{CLAIMED} sessions, a configuration with 9 x the launch variance: its x1.10 speedup coverage",
            "95 ± 2 %",
            lambda sd: noisy[sd]["coverage"],
        ),
        (
            f"{CLAIMED} sessions, a baseline with 9 x the launch variance: A/A family-wise false positives",
            "≤ 5 %",
            lambda sd: noisy[sd]["false_positive"],
        ),
        (
            f"{DEFAULT_SESSIONS} sessions {OUTSIDE}: a configuration with 9 x the launch variance: x1.10 coverage",
            f"none below {CLAIMED} sessions",
            lambda sd: noisy_few[sd]["coverage"],
        ),
        (
            f"{DEFAULT_SESSIONS} sessions {OUTSIDE}: a baseline with 9 x the launch variance: A/A false positives",
            f"none below {CLAIMED} sessions",
            lambda sd: noisy_few[sd]["false_positive"],
        ),
    )
    found = [
        {"row": f"{what}, {100 * sd:.0f} % launch offsets", "value": value(sd), "goal": goal}
        for what, goal, value in checks
        for sd in VERDICT_OFFSETS
    ]
    found.append(
        {
            "row": "2 sessions, true launch CV 5 %: configurations called noisy (> 10 %)",
            "value": noisy_called(sweeps, 0.05),
            "goal": "0 %",
        }
    )
    return found


def _category_intervals(
    configurations: dict[str, Configuration], runs: dict[str, list[Run]], name: str
) -> list[tuple[float, float]]:
    """categories.csv's speedup interval of each category of ``name`` (single-request runs)."""
    requests = loadsummary.request_rows(configurations, runs, {}, {})
    takes_runs = "runs" in inspect.signature(loadsummary.category_table).parameters
    table = (
        loadsummary.category_table(configurations, requests, runs)
        if takes_runs
        else loadsummary.category_table(configurations, requests)
    )
    rows = table[table["configuration"] == name]
    return [
        (float(low), float(high)) for low, high in zip(rows["speedup_ci95_low"], rows["speedup_ci95_high"], strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sweeps", type=int, default=1000)
    args = parser.parse_args()
    found = [measure(args.sweeps, sd, first_boost=boost) for sd, boost in SCENARIOS]
    print(json.dumps(found + verdicts(args.sweeps), indent=1))


if __name__ == "__main__":
    main()
