"""With benchmark.sessions {min, max} the conclusion, the paper and the confirmation's choice read the rounds'
repeated verdicts (summary.csv sequential_*), not the one-look test, which stopping early invalidates."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from support import listed_names

from specsweep.analyse import conclusion
from specsweep.report import paper

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "summary_verdicts.csv"


def _with_rounds(tmp_path: Path) -> tuple[pd.DataFrame, list[str]]:
    """The golden table as rounds decided it: the fastest configuration faster at 2 sessions (though the one-look
    test calls it not significant), the next equivalent at 3, the rest open at the last."""
    table = pd.read_csv(GOLDEN)
    others = table[(table["status"] == "ok") & ~table["baseline"] & table["decode_tok_s_mean"].notna()]
    fastest, second = others.sort_values("decode_tok_s_mean", ascending=False)["configuration"].iloc[:2]
    table["sequential_verdict"] = [None if b else "open" for b in table["baseline"]]
    table["decided_at_session"] = None
    table["sequential_p_holm"], table["sequential_ci95_low"], table["sequential_ci95_high"] = 0.5, 0.8, 1.2
    table.loc[table["configuration"] == fastest, ["sequential_verdict", "decided_at_session", "significant"]] = [
        "faster",
        2,
        False,
    ]
    table.loc[
        table["configuration"] == fastest, ["sequential_p_holm", "sequential_ci95_low", "sequential_ci95_high"]
    ] = [
        0.012,
        1.1,
        2.0,
    ]
    table.loc[table["configuration"] == second, ["sequential_verdict", "decided_at_session"]] = ["equivalent", 3]
    table.to_csv(tmp_path / "summary.csv", index=False)
    return table, [fastest, second]


def test_the_conclusion_quotes_the_repeated_verdicts_and_where_each_stopped(tmp_path):
    table, (fastest, second) = _with_rounds(tmp_path)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    (best,) = [line for line in text if line.startswith("  best: ")]
    assert best.startswith(f"  best: {fastest}, ") and best.endswith(
        "(repeated 95 % CI 1.10-2.00; repeated Holm p = 0.012, faster at 2 sessions)"
    )
    faster = next(line for line in text if line.startswith("  significantly faster"))
    assert "repeated tests over the rounds" in faster and listed_names(faster) == {fastest}
    equivalent = next(line for line in text if line.startswith("  shown equivalent within ±"))
    assert equivalent.endswith(f"{second} at 3 sessions")
    still = next(line for line in text if line.startswith("  still open at the last session"))
    measured = table[(table["status"] == "ok") & ~table["baseline"] & table["decode_tok_s_mean"].notna()]
    assert listed_names(still) == set(measured["configuration"]) - {fastest, second}
    assert paper.best(table)["configuration"] == fastest  # the paper and the confirmation choose alike
    assert "BestSpeedupCI}{\\ensuremath{[1.10, 2.00]\\times}}" in paper.macros(table)  # and quote alike


def test_no_repeated_faster_verdict_names_no_best_whatever_the_one_look_test_says(tmp_path):
    table, (fastest, _) = _with_rounds(tmp_path)
    table.loc[table["configuration"] == fastest, "sequential_verdict"] = "open"
    table["significant"] = True
    table.to_csv(tmp_path / "summary.csv", index=False)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    (best,) = [line for line in text if line.startswith("  best: ")]
    assert best.endswith("no configuration is shown to beat its baseline")
    assert paper.best(table) is None
