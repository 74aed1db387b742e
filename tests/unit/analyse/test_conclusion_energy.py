"""The conclusion names contention instead of declaring winners from contended runs, and the most efficient
configuration (tokens per joule) beside the fastest; energy not measured is said in words."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from specsweep.analyse import conclusion

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "summary_verdicts.csv"
NOT_MEASURED = "not measured: no GPU visible through NVML (NVMLError_LibraryNotFound); no RAPL energy counter"


def _lines(tmp_path, **columns):
    table = pd.read_csv(GOLDEN)
    for column, values in columns.items():
        table[column] = table["configuration"].map(values) if isinstance(values, dict) else values
    table.to_csv(tmp_path / "summary.csv", index=False)
    return conclusion.lines(conclusion.read(tmp_path / "summary.csv"))


def _line(lines, start):
    return next(line for line in lines if line.startswith(start))


def test_a_quiet_sweep_without_a_gpu_says_energy_is_not_measured(tmp_path):
    lines = _lines(tmp_path, energy_source=NOT_MEASURED, tokens_per_joule_mean=None, contended_runs=0)
    assert _line(lines, "  energy:") == f"  energy: {NOT_MEASURED}"
    assert not any("CONTENDED" in line for line in lines)
    assert _line(lines, "  best:").startswith("  best: a, ")


def test_a_contended_candidate_is_not_declared_the_winner(tmp_path):
    plain = _lines(tmp_path)
    assert _line(plain, "  best:").startswith("  best: a, ") and "a +" in _line(plain, "  significantly faster")
    lines = _lines(tmp_path, contended_runs={"a": 2})
    assert _line(lines, "  CONTENDED:").startswith(
        "  CONTENDED: other processes used the machine while a (2 of 5 runs)"
    )
    assert not _line(lines, "  best:").startswith("  best: a,")
    assert "a +" not in _line(lines, "  significantly faster") and " a" not in _line(lines, "  no demonstrated")


def test_a_contended_baseline_leaves_nothing_to_judge(tmp_path):
    lines = _lines(tmp_path, contended_runs={"baseline": 1})
    assert "  best: not declared: every comparison rests on contended runs" in lines
    assert "baseline (1 of 12 runs)" in _line(lines, "  CONTENDED:")
    assert not any(line.startswith("  significantly") for line in lines)
    assert lines[-1].startswith("  files: results/summary.csv")


def test_nothing_to_judge_still_says_what_was_measured_again(tmp_path):
    """With every comparison contended, a node lost under an earlier attempt is still on the console."""
    warning = f"{conclusion.REMEASURED}: node node1 failed (down) while Slurm job 7 measured there"
    lines = _lines(tmp_path, contended_runs={"baseline": 1}, warnings={"a": warning})
    assert f"  {conclusion.REMEASURED} (an earlier attempt was lost: warnings in summary.csv): a" in lines
    assert lines[-1].startswith("  files: results/summary.csv")


def test_the_most_efficient_configuration_is_named_beside_the_fastest(tmp_path):
    per_joule = {"baseline": 2.0, "a": 1.5, "b": 2.6, "c": 2.1, "d": 1.0, "e": 1.0, "flat": 2.2}
    lines = _lines(
        tmp_path,
        energy_source="nvml energy counter",
        tokens_per_joule_mean=per_joule,
        tokens_per_joule_ci95_low={k: v - 0.1 for k, v in per_joule.items()},
        tokens_per_joule_ci95_high={k: v + 0.1 for k, v in per_joule.items()},
        contended_runs=0,
    )
    assert _line(lines, "  most efficient:") == (
        "  most efficient: b, 2.6 output tokens/J (95 % CI 2.5-2.7; nvml energy counter); "
        "the fastest, a, gives 1.5 tokens/J"
    )


def test_one_session_says_why_tokens_per_joule_has_no_interval(tmp_path):
    source = "nvml energy counter"
    lines = _lines(
        tmp_path,
        energy_source=source,
        tokens_per_joule_mean={"a": 3.46},
        tokens_per_joule_ci95_low=None,
        tokens_per_joule_ci95_high=None,
        sessions=1,
        interval_unit="pass",
    )
    assert _line(lines, "  most efficient:").startswith(
        f"  most efficient: a, 3.46 output tokens/J (no CI: one session; {source})"
    )
