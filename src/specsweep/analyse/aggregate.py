"""summary.csv: one row per configuration, each column defined once in ``SUMMARY``, its meaning beside the
function that computes it from the configuration's ``Evidence`` (gathered once: its sessions' counted runs,
launch, server-log profile, level and comparison). Columns of a concern of their own keep its module:
energy and clocks (analyse/energy.py), the smallest detectable speedup (maths/power.py), user profile
parsers (``add_profile_columns``). ``COLUMNS`` holds every meaning (docs/summary.md is checked against it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from specsweep.analyse import energy, replicates, sequential
from specsweep.maths import power, stats
from specsweep.maths.stats import describe
from specsweep.measure import placement, telemetry
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.plan import design
from specsweep.plan.config import Configuration, parameter_value, swept_parameters
from specsweep.plan.factors import baselines_by_configuration
from specsweep.record import speculation
from specsweep.record.atomic import atomic_open
from specsweep.record.rates import SINGLE_REQUEST_DECODE
from specsweep.record.redact import REDACTED, is_secret
from specsweep.record.results import Launch, Run

JUDGED_SESSIONS = 3  # sessions from which the between-session CV judges 'noisy' (2 leave it 1 degree of freedom)


@dataclass(frozen=True)
class Measured:
    """What a sweep measured, as the tables read it: per session its runs, launch and log profile."""

    configurations: dict[str, Configuration]
    runs: dict[str, list[Run]]
    launches: dict[str, Launch]
    profiles: dict[str, pd.DataFrame]  # profile.csv of each configuration whose server log was parsed
    # what parsing each server log warned of (a profile parser that matched no line), per configuration
    log_warnings: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Evidence:
    """Everything summary.csv says of one configuration, gathered once by ``gather``."""

    configuration: Configuration
    session_names: list[str]
    sessions: list[list[Run]]  # the counted runs of each session that has any
    excluded: int  # runs measured but left out (rate_check)
    contended: list[str]  # sessions left out of the pooled spread
    own_spread: bool  # its spread larger than the others': its intervals from its own (replicates.larger_spread)
    launch: Launch | None  # the first session's
    launches: dict[str, Launch]
    model: replicates.Pooled
    level: replicates.Level
    compared_with: str | None
    comparison: replicates.Comparison | None
    holm: tuple[float, int] | None  # (Holm-adjusted p, comparisons in the family) when compared
    baseline_texts: dict[int, str]
    swept: list[str]
    cross_machine: str | None
    status: str | None = None  # the job's own word on how far it got (an unfinished sweep's summary)
    profile: pd.DataFrame | None = None  # the sessions' server-log profiles, concatenated
    log_warnings: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # runs whose speculation counts were impossible
    # benchmark.sessions {min, max}: the repeated verdict against the baseline, and the sessions at its look
    sequential: sequential.Verdict | None = None
    decided_at: int | None = None

    @cached_property
    def runs(self) -> list[Run]:
        return [r for session in self.sessions for r in session]

    @cached_property
    def spread(self) -> stats.Summary:
        return describe(list(self.level.unit_rates), intervals=False)

    @cached_property
    def between_session_cv(self) -> float | None:
        if len(self.sessions) < 2:
            return None
        return replicates.pooled_sd([replicates.units(self.sessions, replicates.SESSION)])[0]

    @cached_property
    def within_session_cv(self) -> float | None:
        return _known(replicates.within_session_cv(self.sessions))

    @cached_property
    def speculation(self) -> Speculation | None:
        """Draft counts, most precise source first: the runs' response fields or counter deltas; where they
        give no drafted count, the server log's (``log_speculation``), the runs' verify steps kept."""
        counts = speculation.total([r.speculation for r in self.runs if r.speculation])
        from_runs = (
            Speculation(
                counts.drafted,
                counts.accepted,
                counts.verify_steps,
                _known(counts.acceptance_rate),
                _known(counts.accept_length),
                counts.source or None,
            )
            if counts
            else None
        )
        if (from_runs and pd.notna(from_runs.drafted)) or self.profile is None:
            return from_runs
        from_log = log_speculation(self.profile)
        if from_log is None or from_runs is None:
            return from_log or from_runs
        return from_runs._replace(
            drafted=from_log.drafted,
            accepted=from_log.accepted,
            acceptance_rate=from_log.acceptance_rate,
            source=from_log.source,
        )

    def simultaneous(self) -> tuple[float, float] | tuple[None, None]:
        if self.comparison is None or self.holm is None:
            return None, None
        return self.comparison.interval(stats.simultaneous_confidence(self.holm[1]))


class Speculation(NamedTuple):
    drafted: float | None
    accepted: float | None
    verify_steps: float | None
    acceptance_rate: float | None
    accept_length: float | None
    source: str | None


class Column(NamedTuple):
    meaning: str
    value: Callable[[Evidence], Any]


def _status(e: Evidence) -> str:
    """ok, or how far the configuration got: the job's word (an unfinished sweep), else excluded or missing."""
    if e.status is not None:
        return e.status
    if e.runs:
        return "ok"
    return "excluded" if e.excluded else "missing"


def _cv(e: Evidence) -> float | None:
    # two sessions' spread has one degree of freedom: too few to call a configuration noisy
    return e.between_session_cv if len(e.sessions) >= JUDGED_SESSIONS else e.within_session_cv


def _significant(e: Evidence) -> bool | None:
    if e.holm is None or math.isnan(e.holm[0]):
        return None
    return bool(e.holm[0] < stats.ALPHA)


def _comparison(e: Evidence, value: Callable[[replicates.Comparison], float]) -> float | None:
    return value(e.comparison) if e.comparison is not None else None


def _text_matches(e: Evidence) -> bool | None:
    return all(e.baseline_texts.get(r.prompt_index) == r.text_sha256 for r in e.runs) if e.runs else None


def _spec(field_name: str) -> Callable[[Evidence], Any]:
    return lambda e: getattr(e.speculation, field_name) if e.speculation else None


def _median_ms(value: Callable[[Run], float | None]) -> Callable[[Evidence], float]:
    return lambda e: 1000 * describe([value(r) for r in e.runs], intervals=False).median


def _warnings(e: Evidence) -> str:
    """Why not to trust the row at face value, most general first; energy's are added by analyse/energy.py."""
    found = replicates_warnings(e.level, e.comparison, e.model, len(e.sessions), _cv(e))
    if e.excluded:
        found.append(f"{e.excluded} run(s) excluded: client and engine rates disagree")
    if e.contended:
        found.append(f"contended session(s) left out of the pooled spread: {', '.join(e.contended)}")
    if e.own_spread:
        found.append(replicates.OWN_SPREAD_NOTE)
    if e.cross_machine:
        found.append(e.cross_machine)
    found += e.log_warnings + launch_warnings(e.session_names, e.launches) + e.refused
    return "; ".join(found)


def _sequential(value: Callable[[sequential.Verdict], Any]) -> Callable[[Evidence], Any]:
    return lambda e: value(e.sequential) if e.sequential is not None else None


def _speedup(e: Evidence) -> float:
    return e.comparison.ratio if e.comparison is not None else 1.0  # a baseline is its own reference


SUMMARY: dict[str, Column] = {
    "configuration": Column(
        "configuration name (results/<configuration>/)",
        lambda e: e.configuration.name,
    ),
    "group": Column(
        "configurations entry it came from (differs from the name for grid points)",
        lambda e: e.configuration.group,
    ),
    "engine": Column(
        "engine name from config engines",
        lambda e: e.configuration.engine,
    ),
    "kind": Column(
        "engine adapter kind (config engines.<engine>.kind)",
        lambda e: e.configuration.kind,
    ),
    "engine_version": Column(
        "version or build the server reported (llama.cpp /props build_info)",
        lambda e: e.launch.engine_version if e.launch else None,
    ),
    "host": Column(
        "node (hostname) the configuration was measured on (launch.json placement)",
        lambda e: placement.of_launch(e.launch)["host"] if e.launch else None,
    ),
    "baseline": Column(
        "true for a baseline configuration",
        lambda e: e.configuration.baseline,
    ),
    "compared_with": Column(
        "the baseline this row's speedup, p-value and text match are against (empty for a baseline): "
        "the one sharing its other factor levels, or the one its entry names",
        lambda e: e.compared_with,
    ),
    "status": Column(
        "ok; stale (provisional summary only: runs measured under parameters the config no longer has, "
        "the row labelled with those); or why there is no result: excluded (runs measured, none counts: see "
        "runs_excluded), failed (<evidence folder>), damaged (<file>: why), missing",
        _status,
    ),
    "runs": Column(
        "measured runs the statistics rest on (all sessions)",
        lambda e: len(e.runs),
    ),
    "sessions": Column(
        "sessions (server launches, benchmark.sessions) with counted runs: the replicates of every interval and test",
        lambda e: len(e.sessions),
    ),
    "prompts": Column(
        "prompts in a pass (distinct prompts measured): the blocks a comparison is paired on",
        lambda e: len({r.prompt_index for r in e.runs}),
    ),
    "interval_unit": Column(
        "the replicate unit of the intervals and tests: session; pass (one session per "
        "configuration: the intervals are within one launch, and no test declares a difference); empty when "
        "none is possible",
        lambda e: e.model.unit or None,
    ),
    "ci_df": Column(
        "degrees of freedom of the pooled log-scale spread of the units (sum over configurations of "
        "units - 1; contended sessions left out)",
        lambda e: e.model.df,
    ),
    "runs_excluded": Column(
        "runs kept on disk but left out of the statistics: the engine's token count disagreed with "
        "its stream (docs/load.md), or the client's decode rate disagreed with the engine's own beyond "
        "benchmark.rate_tolerance_pct, or could not be timed",
        lambda e: e.excluded,
    ),
    "tokens_per_run": Column(
        "tokens generated in each run (all runs must equal benchmark.max_tokens)",
        lambda e: e.runs[0].tokens if e.runs else None,
    ),
    "decode_tok_s_mean": Column(
        f"{SINGLE_REQUEST_DECODE.label} of the workload, client-measured, first token excluded: "
        "decode tokens / decode time of one pass over the prompts, geometric mean over the units (docs/summary.md)",
        lambda e: e.level.rate,
    ),
    "decode_tok_s_std": Column(
        "standard deviation of the units' throughput (tokens/s)",
        lambda e: e.spread.std,
    ),
    "decode_tok_s_cv": Column(
        "the variation 'noisy' is judged on: decode_tok_s_between_session_cv with >= 3 sessions (2 "
        "give it one degree of freedom), else decode_tok_s_within_session_cv; empty when not estimable "
        "(with 2 sessions the conclusion says 'noisy not judged')",
        _cv,
    ),
    "decode_tok_s_between_session_cv": Column(
        "standard deviation of the log throughput of this configuration's sessions "
        "(≈ CV; launch-to-launch variation plus the noise of a session's mean; empty with one session)",
        lambda e: e.between_session_cv,
    ),
    "decode_tok_s_within_session_cv": Column(
        "pooled standard deviation of the log decode rate of a prompt's repeated runs "
        "within a session (≈ CV; empty with one run per prompt per session)",
        lambda e: e.within_session_cv,
    ),
    "decode_tok_s_min": Column(
        "slowest unit (tokens/s)",
        lambda e: e.spread.minimum,
    ),
    "decode_tok_s_max": Column(
        "fastest unit (tokens/s)",
        lambda e: e.spread.maximum,
    ),
    "decode_tok_s_ci95_low": Column(
        "95 % interval of decode_tok_s_mean, lower bound: exp(mean log ± t·s/√units) with "
        "the pooled log-scale spread (always positive; empty when no interval is possible)",
        lambda e: e.level.ci_low,
    ),
    "decode_tok_s_ci95_high": Column(
        "95 % interval of decode_tok_s_mean, upper bound",
        lambda e: e.level.ci_high,
    ),
    "decode_tok_s_median": Column(
        "median unit (tokens/s)",
        lambda e: e.spread.median,
    ),
    "speedup": Column(
        "workload throughput / the baseline's (compared_with), both over the prompts both measured",
        _speedup,
    ),
    "speedup_pct": Column(
        "(speedup - 1) * 100",
        lambda e: (_speedup(e) - 1.0) * 100.0,
    ),
    "speedup_ci95_low": Column(
        "95 % interval of the speedup, lower bound: exp(Δ mean log ± t·s·√(1/n + 1/n_b)) "
        "(empty when no interval is possible)",
        lambda e: _comparison(e, lambda c: c.ci_low),
    ),
    "speedup_ci95_high": Column(
        "95 % interval of the speedup, upper bound",
        lambda e: _comparison(e, lambda c: c.ci_high),
    ),
    "speedup_p_value": Column(
        "two-sided t-test of log speedup = 0 on the units, raw (not adjusted for multiplicity)",
        lambda e: _comparison(e, lambda c: c.p_value),
    ),
    "speedup_p_holm": Column(
        "speedup_p_value adjusted by Holm over the sweep's comparisons, whatever their baseline "
        "(empty with one session per configuration: a within-launch test declares nothing)",
        lambda e: e.holm[0] if e.holm else None,
    ),
    "comparisons": Column(
        "comparisons in that family: every configuration of the sweep compared with a baseline and "
        "tested (a factorial sweep's several baselines included)",
        lambda e: e.holm[1] if e.holm else None,
    ),
    "significant": Column(
        "true when speedup_p_holm < 0.05 (empty for the baseline, when no test was possible, and "
        "with one session per configuration)",
        _significant,
    ),
    "speedup_sim95_low": Column(
        "simultaneous 95 % interval of the speedup over the family's comparisons (Bonferroni), "
        "lower bound: the one to quote for a configuration selected as the best",
        lambda e: e.simultaneous()[0],
    ),
    "speedup_sim95_high": Column(
        "simultaneous 95 % interval of the speedup, upper bound",
        lambda e: e.simultaneous()[1],
    ),
    "sequential_verdict": Column(
        "benchmark.sessions {min, max}: the verdict against the baseline that stays valid when the rounds stop "
        "early (a one-look test such as speedup_p_holm is not): faster or slower (Holm over the repeated p-values), "
        "equivalent (within ±benchmark.detect_pct), open (none of these by max sessions); empty for the baseline "
        "and without rounds",
        _sequential(lambda v: v.verdict),
    ),
    "sequential_p_holm": Column(
        "the repeated p-value (the chance that some look reaches this configuration's nominal p under no "
        "difference), Holm-adjusted over the sweep's comparisons, at the look that decided it",
        _sequential(lambda v: v.p_holm),
    ),
    "sequential_ci95_low": Column(
        "repeated 95 % interval of the speedup at the look that decided it (the last look for an open one), "
        "lower bound: wider than speedup_ci95_low, it holds whichever look stopped the configuration",
        _sequential(lambda v: v.ci_low),
    ),
    "sequential_ci95_high": Column(
        "repeated 95 % interval of the speedup, upper bound",
        _sequential(lambda v: v.ci_high),
    ),
    "decided_at_session": Column(
        "sessions per configuration at the look that decided it: where its sessions stopped (empty while open)",
        lambda e: e.decided_at,
    ),
    "engine_decode_tok_s_mean": Column(
        "the engine's own decode throughput, mean over runs (llama.cpp predicted_per_second)",
        lambda e: describe([r.engine_tokens_per_s for r in e.runs], intervals=False).mean,
    ),
    "ttft_ms_median": Column(
        "median time to first token as the client saw it (ms)",
        _median_ms(lambda r: r.client.ttft_s),
    ),
    "itl_ms_median": Column(
        "median inter-event latency over all runs (ms); an event may carry several tokens",
        _median_ms(lambda r: r.client.itl_median_s),
    ),
    "drafted": Column(
        "draft tokens proposed over all runs (empty without speculation, or when the engine did not "
        "report them: SGLang <= 0.5.4 without its server args)",
        _spec("drafted"),
    ),
    "accepted": Column(
        "draft tokens accepted over all runs",
        _spec("accepted"),
    ),
    "verify_steps": Column(
        "verification steps over all runs (from engine counters)",
        _spec("verify_steps"),
    ),
    "acceptance_rate": Column(
        "accepted / drafted (drafts only, bonus token excluded)",
        _spec("acceptance_rate"),
    ),
    "accept_length": Column(
        "tokens emitted per verify step, bonus included: 1 + accepted / verify_steps",
        _spec("accept_length"),
    ),
    "speculation_source": Column(
        "where drafted/accepted came from, most precise first: per-request response fields, "
        "Prometheus counter deltas, else the server log (profile.csv run rows; for vLLM its per-interval "
        "`SpecDecoding metrics` rows, warmup included, said as `server log (logging intervals, warmup included)`)",
        _spec("source"),
    ),
    "text_matches_baseline": Column(
        "true when every run's text equals the baseline's for the same prompt",
        _text_matches,
    ),
    "warnings": Column(
        "why not to trust the row at face value, '; '-separated: one session (launch-to-launch variation not "
        "measured, nothing declared), noise not estimable, CV above 10 %, a speedup CI that straddles 1, "
        "contended sessions left out of the pooled spread, a spread larger than the others' (its intervals from its "
        "own), a profile parser that matched no line, measured on "
        "another node or GPU model than the baseline, and each session's launch record warnings (launch.json: "
        "re-measured after a failed attempt, a host beyond loopback, quantised counters, GPUs; prefixed "
        "`<session>: ` for a session k >= 2) (empty when none)",
        _warnings,
    ),
}
# every summary.csv column's meaning, those of its own concerns' modules after the row's (docs/summary.md)
COLUMNS: dict[str, str] = {
    **{name: column.meaning for name, column in SUMMARY.items()},
    **energy.SUMMARY_COLUMNS,  # energy per token, clocks, throttling, contention (analyse/energy.py)
    **power.SUMMARY_COLUMNS,  # the smallest detectable speedup, sessions for benchmark.detect_pct (maths/power.py)
}


def gather(
    configurations: dict[str, Configuration],
    runs: dict[str, list[Run]],
    launches: dict[str, Launch],
    profiles: Mapping[str, pd.DataFrame] | None = None,  # per configuration, its sessions' together
    log_warnings: Mapping[str, list[str]] | None = None,
    statuses: Mapping[str, str] | None = None,
    rounds: tuple[design.SessionRange, float] | None = None,
) -> list[Evidence]:
    """Each measured configuration's evidence: its sessions (design.sessions_of) as the replicates
    (analyse/replicates.py), one pooled spread and one Holm family for the sweep. ``statuses`` (an unfinished
    sweep's) name how far each session got: a configuration is as far as its least finished session.
    ``rounds`` (benchmark.sessions {min, max} and detect_pct) adds each comparison's repeated verdict."""
    sessions = design.sessions_of(configurations)
    measured = design.measured_configurations(configurations)
    swept = swept_parameters(measured)
    compared = baselines_by_configuration(measured)
    kept = {name: [kept_and_excluded(runs.get(s, [])) for s in names] for name, names in sessions.items()}
    counted = {name: [runs for runs, _ in found if runs] for name, found in kept.items()}
    # a session with a contended run is reported, but left out of the spread every interval shares
    quiet = {name: [runs for runs in found if not _contended(runs)] for name, found in counted.items()}
    model = replicates.pooled(counted, quiet)
    # a configuration whose spread is larger than the others' gets its own (replicates.larger_spread)
    larger = replicates.larger_spread({name: quiet[name] for name in measured}, model)
    comparisons = {
        name: replicates.compare(counted[name], counted[against], model, own=bool({name, against} & larger))
        for name, against in compared.items()
        if against is not None
    }
    family = _families(compared, comparisons)
    if not model.declares:  # within one launch a launch offset reads as a difference: no verdict
        family = {name: (math.nan, size) for name, (_, size) in family.items()}
    where = {name: placement.of_launch(launch) for name, launch in launches.items() if launch}
    texts = {
        name: {r.prompt_index: r.text_sha256 for session in counted[name] for r in session}
        for name, against in compared.items()
        if against is None
    }
    decided = _sequential_verdicts(sessions, measured, runs, rounds)
    evidence = []
    for name, configuration in measured.items():
        names = sessions[name]
        evidence.append(
            Evidence(
                configuration=configuration,
                session_names=names,
                sessions=counted[name],
                excluded=sum(len(excluded) for _, excluded in kept[name]),
                contended=[s for s, (runs, _) in zip(names, kept[name], strict=True) if _contended(runs)],
                launch=launches.get(name),
                launches=launches,
                model=model,
                level=replicates.level(counted[name], model, own=name in larger),
                own_spread=name in larger,
                compared_with=compared[name],
                comparison=comparisons.get(name),
                holm=family.get(name),
                baseline_texts=texts[compared[name] or name],
                swept=swept,
                cross_machine=placement.cross_machine_warning(
                    where.get(name, {}), where.get(compared[name] or name, {})
                ),
                status=None
                if statuses is None
                else next((statuses[s] for s in names if statuses.get(s, "ok") != "ok"), statuses.get(name)),
                profile=(profiles or {}).get(name),
                log_warnings=[w for s in names for w in (log_warnings or {}).get(s, [])],
                refused=refused_speculation(names, runs),
                sequential=decided.get(name),
                decided_at=sequential.decided_at(decided[name], rounds[0]) if name in decided and rounds else None,
            )
        )
    return evidence


def _sequential_verdicts(
    sessions: Mapping[str, list[str]],
    measured: Mapping[str, Configuration],
    runs: Mapping[str, list[Run]],
    rounds: tuple[design.SessionRange, float] | None,
) -> dict[str, sequential.Verdict]:
    """The rounds' verdicts against the baseline they compared with (the sweep's first), replayed from the runs of
    their sessions (the bracket's end session, measured after the rounds, left out); none without rounds."""
    baseline = next((name for name, c in measured.items() if c.baseline), None)
    if rounds is None or not rounds[0].sequential or baseline is None:
        return {}
    end = design.end_name(baseline)
    looked = {name: [s for s in names if s != end] for name, names in sessions.items()}
    return sequential.verdicts(looked, runs, baseline, *rounds)


def summarise(
    configurations: dict[str, Configuration],
    runs: dict[str, list[Run]],
    launches: dict[str, Launch],
    profiles: Mapping[str, pd.DataFrame] | None = None,
    log_warnings: Mapping[str, list[str]] | None = None,
    statuses: Mapping[str, str] | None = None,
    rounds: tuple[design.SessionRange, float] | None = None,
) -> pd.DataFrame:
    """summary.csv's row columns (``SUMMARY``), the swept parameters after ``status``."""
    evidence = gather(configurations, runs, launches, profiles, log_warnings, statuses, rounds)
    swept = evidence[0].swept if evidence else []
    rows = [{name: column.value(e) for name, column in SUMMARY.items()} | _parameters(e) for e in evidence]
    ordered = list(SUMMARY)
    ordered[ordered.index("status") + 1 : ordered.index("status") + 1] = swept
    return pd.DataFrame(rows, columns=ordered)


def _parameters(e: Evidence) -> dict[str, Any]:
    """The swept parameters' values; a swept env variable such as env:HF_TOKEN must not put its value into
    summary.csv."""
    values = {key: parameter_value(e.configuration, key) for key in e.swept}
    return {key: REDACTED if is_secret(key) and value is not None else value for key, value in values.items()}


def summary_table(
    measured: Measured,
    profile_parsers: dict[str, dict[str, Any]],
    statuses: dict[str, str] | None = None,
    detect_pct: float | None = None,
    session_range: design.SessionRange | None = None,
) -> pd.DataFrame:
    """summary.csv: the one builder, for a finished sweep (the summary job) and an unfinished one (the
    ``onerror`` path, which passes each session's ``status``), so both have the same columns."""
    sessions = design.sessions_of(measured.configurations)
    profiles = {
        name: pd.concat(found, ignore_index=True)
        for name, names in sessions.items()
        if (found := [measured.profiles[s] for s in names if s in measured.profiles])
    }
    frame = summarise(
        measured.configurations,
        measured.runs,
        measured.launches,
        profiles,
        measured.log_warnings,
        statuses,
        (session_range, detect_pct) if session_range is not None and detect_pct is not None else None,
    )
    frame, energy_warnings = energy.summary_columns(frame, *_of_every_session(sessions, measured))
    frame = add_warnings(frame, energy_warnings)
    frame = power.summary_columns(frame, detect_pct)
    return add_profile_columns(frame, profiles, profile_parsers)


def _contended(runs: list[Run]) -> bool:
    return any(telemetry.contended((r.telemetry or {}).get("contention")) for r in runs)


def _families(
    compared: dict[str, str | None], comparisons: dict[str, replicates.Comparison]
) -> dict[str, tuple[float, int]]:
    """Per compared configuration: its Holm-adjusted p and the family's number of comparisons (those with a
    p-value). The family is the sweep: a factorial sweep compares each configuration with its own baseline,
    but asks one question of them all; a family per baseline held each to 5 % (families of one, 16 % A/A
    false positives over a sweep)."""
    members = [n for n, a in compared.items() if a is not None]
    raw = [comparisons[n].p_value for n in members]
    tested = sum(not math.isnan(p) for p in raw)
    return {n: (p, tested) for n, p in zip(members, stats.holm(raw), strict=True)}


def replicates_warnings(
    level: replicates.Level,
    comparison: replicates.Comparison | None,
    model: replicates.Pooled,
    sessions: int,
    cv: float | None,
) -> list[str]:
    """Reasons not to trust a configuration's numbers at face value (empty when there are none)."""
    if level.n == 0:
        return ["no runs"]
    found = [model.note] if model.note and sessions else []
    if cv is not None and not math.isnan(cv) and cv > stats.CV_WARNING:
        found.append(f"noisy: CV {100 * cv:.1f} % > {100 * stats.CV_WARNING:.0f} %")
    if comparison is not None and not math.isnan(comparison.ci_low) and comparison.ci_low <= 1.0 <= comparison.ci_high:
        found.append(
            f"speedup CI [{comparison.ci_low:.3f}, {comparison.ci_high:.3f}] straddles 1: no demonstrated difference"
        )
    return found


def refused_speculation(sessions: list[str], runs: dict[str, list[Run]]) -> list[str]:
    """The runs whose speculation counts were impossible, named: their counts are in no total."""
    return [
        f"{session} run {r.run}: {r.speculation_refused} (not in drafted/accepted)"
        for session in sessions
        for r in runs.get(session, [])
        if r.speculation_refused
    ]


def launch_warnings(sessions: list[str], launches: dict[str, Launch]) -> list[str]:
    """What the sessions' launch records warn of (a node failed under an earlier attempt, ...), each once;
    a later session's prefixed with its name."""
    found: list[str] = []
    for index, session in enumerate(sessions):
        for warning in launches[session].warnings if session in launches else []:
            text = warning if index == 0 else f"{session}: {warning}"
            if warning not in found and text not in found:
                found.append(text)
    return found


def _of_every_session(
    sessions: dict[str, list[str]], measured: Measured
) -> tuple[dict[str, list[list[Run]]], dict[str, Launch]]:
    """Per configuration, the runs of each of its sessions and its first session's launch (the machine it ran on)."""
    runs = {name: [measured.runs.get(s, []) for s in names] for name, names in sessions.items()}
    launches = {name: measured.launches[names[0]] for name, names in sessions.items() if names[0] in measured.launches}
    return runs, launches


def add_warnings(frame: pd.DataFrame, extra: dict[str, list[str]]) -> pd.DataFrame:
    """Append more warnings (e.g. a profile parser that matched nothing) to each configuration's."""
    frame = frame.copy()
    frame["warnings"] = [
        "; ".join([w for w in [text if isinstance(text, str) else ""] if w] + extra.get(name, []))
        for name, text in zip(frame["configuration"], frame["warnings"], strict=True)
    ]
    return frame


def _known(value: float) -> float | None:
    return None if math.isnan(value) else value


def write_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """Stable formatting (6 significant digits, fixed column order) so reruns are byte-identical."""
    with atomic_open(path, newline="") as handle:  # a killed job leaves no truncated CSV behind
        frame.to_csv(handle, index=False, float_format="%.6g", lineterminator="\n")


def warning_lines(frame: pd.DataFrame) -> list[str]:
    """The summary's warnings as console lines, plus which interval and test the numbers are."""
    units = frame["interval_unit"].dropna() if "interval_unit" in frame else pd.Series(dtype=str)
    unit = str(units.iloc[0]) if len(units) else "none"
    lines = [
        f"statistics: unit = {unit}; tok/s = decode tokens / decode time of a pass over the prompts; CIs = 95 % "
        f"t-intervals on the log scale with the pooled spread of the units; p = t-test against the baseline, "
        f"Holm-adjusted over the sweep's {_family_size(frame)} comparisons (raw p in speedup_p_value)"
    ]
    for name, text in zip(frame["configuration"], frame["warnings"], strict=True):
        lines += [f"WARNING {name}: {w}" for w in str(text).split("; ") if text and str(text) != "nan"]
    return lines


def _family_size(frame: pd.DataFrame) -> int:
    """The comparisons of the sweep's one Holm family (0 when none was tested)."""
    sizes = frame["comparisons"].dropna() if "comparisons" in frame else pd.Series(dtype=float)
    return int(sizes.max()) if len(sizes) else 0


def log_speculation(profile: pd.DataFrame) -> Speculation | None:
    """Draft counts from the server log, the least precise source: its run rows (per request, llama.cpp
    ``draft acceptance``), else its logging intervals (vLLM ``SpecDecoding metrics``, which may straddle
    runs and include the warmup)."""
    if "phase" not in profile.columns:
        return None
    runs = profile[profile["phase"] == "run"]
    for drafted_column, accepted_column in LOG_DRAFT_COLUMNS:
        if {drafted_column, accepted_column} <= set(runs.columns):
            drafted = pd.to_numeric(runs[drafted_column], errors="coerce").sum()
            if drafted > 0:
                accepted = pd.to_numeric(runs[accepted_column], errors="coerce").sum()
                rate = speculation.SpeculationCounts(drafted=drafted, accepted=accepted, emitted=None).acceptance_rate
                return Speculation(drafted, accepted, None, rate, None, "server log")
    counts = _interval_draft_counts(profile[profile["phase"] == "interval"])
    if counts is None:
        return None
    drafted, accepted = counts
    return Speculation(
        drafted, accepted, None, accepted / drafted, None, "server log (logging intervals, warmup included)"
    )


# Per-request draft counts a log parser puts in profile.csv: (drafted column, accepted column).
LOG_DRAFT_COLUMNS = (("draft_generated", "draft_accepted"), ("drafted", "accepted"))


def _interval_draft_counts(intervals: pd.DataFrame) -> tuple[float, float] | None:
    """Drafted and accepted tokens of a log with per-interval rows (vLLM): V1 ``SpecDecoding metrics`` lines
    count each interval (summed), V0 ``Speculative metrics`` lines count since start (the last is the total)."""
    if not {"line", "drafted", "accepted"} <= set(intervals.columns):
        return None
    for kind, total in (("spec_v1", "sum"), ("spec_v0", "max")):
        rows = intervals[intervals["line"] == kind]
        drafted = pd.to_numeric(rows["drafted"], errors="coerce").agg(total)
        if pd.notna(drafted) and drafted > 0:
            return float(drafted), float(pd.to_numeric(rows["accepted"], errors="coerce").agg(total))
    return None


def add_profile_columns(
    frame: pd.DataFrame, profiles: dict[str, pd.DataFrame], parsers: dict[str, dict[str, Any]]
) -> pd.DataFrame:
    """Per configuration, ``<parser>_<group>_mean``/``_median`` of each numeric column a user profile
    parser put in profile.csv (phase ``run`` rows only), and ``<parser>_rows``; appended at the end."""
    extra: dict[str, list[Any]] = {}
    for name in parsers:
        for configuration in frame["configuration"]:
            profile = profiles.get(configuration, pd.DataFrame())
            rows = (
                profile[(profile.get("source") == name) & (profile.get("phase") == "run")]
                if "source" in profile.columns
                else pd.DataFrame()
            )
            extra.setdefault(f"{name}_rows", []).append(len(rows))
        identifiers = set(parsers[name].get("identifiers", []))  # a cycle counter or rank is not averaged
        groups = [
            c
            for p in profiles.values()
            if "source" in p.columns
            for c in p.loc[p["source"] == name].dropna(axis=1, how="all").columns
            if c not in ("phase", "source", "run") and c not in identifiers
        ]
        for group in dict.fromkeys(groups):
            for configuration in frame["configuration"]:
                profile = profiles.get(configuration, pd.DataFrame())
                values = (
                    pd.to_numeric(
                        profile.loc[(profile["source"] == name) & (profile["phase"] == "run"), group], errors="coerce"
                    ).dropna()
                    if {"source", group} <= set(profile.columns)
                    else pd.Series(dtype=float)
                )
                extra.setdefault(f"{name}_{group}_mean", []).append(values.mean() if len(values) else None)
                extra.setdefault(f"{name}_{group}_median", []).append(values.median() if len(values) else None)
    return pd.concat([frame, pd.DataFrame(extra, index=frame.index)], axis=1) if extra else frame


def runs_range(summary: pd.DataFrame, dash: str = "\u2013") -> str:
    """Runs per measured configuration for captions: "5", or "3-10" (joined by ``dash``) when adaptive
    repetitions made them differ (the maximum alone would overstate the runs behind most rows)."""
    runs = summary.loc[summary["runs"] > 0, "runs"] if "runs" in summary else pd.Series(dtype=int)
    if runs.empty:
        return "0"
    low, high = int(runs.min()), int(runs.max())
    return str(high) if low == high else f"{low}{dash}{high}"
