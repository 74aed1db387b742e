"""What a real A/A sweep is failed for (tests/workflow/test_aa_end_to_end.py), apart from its sweep, so that the rule
itself is tested on made-up summaries (tests/project/test_aa_verdict.py).

In an A/A sweep nothing differs but the names, so every "significant" is a false alarm, and the pipeline
makes one in about 5 % of sweeps by design (Holm at 5 % over the comparisons; `make bench` measures that
rate by simulation, benchmarks/coverage.py). A test failed at that level would reject one correct
submission in twenty. The sweep fails the test only for evidence that chance alone gives about once in a
thousand sweeps: a Holm-adjusted p below ``FALSE_ALARM_P`` (its rate on simulated A/A sweeps is a row of
`make bench` too). A significance at 5 % is allowed, but what the sweep prints and writes must agree with
summary.csv all the same.
"""

from __future__ import annotations

import pandas as pd
from support import listed_names

# Holm-adjusted: the family-wise rate of an A/A sweep falling below it is at most 0.1 %
FALSE_ALARM_P = 0.001


def problems(summary: pd.DataFrame, printed: str, macros: str) -> list[str]:
    """Why an A/A sweep's results are wrong (empty: nothing wrong). ``summary``: summary.csv indexed by
    configuration; ``printed``: what the sweep printed (its conclusion); ``macros``: paper/macros.tex."""
    found = []
    contended = set(
        summary.index[
            pd.to_numeric(summary.get("contended_runs", pd.Series(0, summary.index)), errors="coerce").fillna(0) > 0
        ]
    )
    if contended:  # the conclusion names them and judges no comparison that rests on them
        line = next((line for line in printed.splitlines() if line.startswith("  CONTENDED: ")), "")
        found += [f"the conclusion does not name contended {name}" for name in sorted(contended) if name not in line]
    baselines = summary["baseline"].astype(bool)
    if contended & set(summary.index[baselines]):
        if "  best: not declared: every comparison rests on contended runs" not in printed.splitlines():
            found.append("the baseline was contended but the conclusion judged comparisons with it")
        return found
    others = summary[~baselines & ~summary.index.isin(contended)]
    for name, p in others["speedup_p_holm"].items():
        if p != p:
            found.append(f"{name}: no test (speedup_p_holm is empty)")
        elif p < FALSE_ALARM_P:
            found.append(f"{name}: Holm-adjusted p = {p:.2g} < {FALSE_ALARM_P}: a difference where none exists")
    significant = others["significant"].astype("boolean").fillna(False).astype(bool)
    faster = set(others.index[significant & (others["speedup"] > 1)])
    slower = set(others.index[significant & (others["speedup"] < 1)])
    expected = {
        "  significantly faster than the baseline (": faster,
        "  significantly slower: ": slower,
        "  no demonstrated difference (or no test possible): ": set(others.index[~significant]),
    }
    for start, names in expected.items():
        line = next((line for line in printed.splitlines() if line.startswith(start)), None)
        if line is None:
            found.append(f"the conclusion has no line {start.strip()!r}")
        elif listed_names(line) != names:
            found.append(f"the conclusion says {line.strip()!r}; summary.csv says {sorted(names) or 'none'}")
    # a best is named only when its own (Bonferroni) interval excludes 1, which Holm's faster list implies for
    # the configuration with the smallest p: a named best without a faster one is the contradiction
    if "BestName" in macros and not faster:
        found.append("paper/macros.tex names a best, but summary.csv has none significantly faster")
    return found
