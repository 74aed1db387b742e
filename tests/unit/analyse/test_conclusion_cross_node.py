"""A ratio to a baseline measured on another machine is never called a speedup by the conclusion: it is left
out of "best" and listed apart (the summary's cross-machine warning, placement.cross_machine_warning)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from support import listed_names

from specsweep.analyse import conclusion
from specsweep.measure import claim as claims
from specsweep.measure import placement

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "summary_verdicts.csv"


def test_a_cross_node_best_is_no_speedup_and_is_neither_faster_nor_slower(tmp_path):
    table = pd.read_csv(GOLDEN)
    best = table[table["status"] == "ok"].sort_values("decode_tok_s_mean").iloc[-1]["configuration"]
    warning = placement.cross_machine_warning(
        {"host": "node2", "gpu_models": ["NVIDIA H200"]}, {"host": "node1", "gpu_models": ["NVIDIA H200"]}
    )
    table["warnings"] = table["warnings"].astype("object")
    table.loc[table["configuration"] == best, "warnings"] = warning
    table.to_csv(tmp_path / "summary.csv", index=False)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    (best_line,) = [line for line in text if line.startswith("  best:")]
    assert not best_line.startswith(f"  best: {best},")  # a cross-machine ratio is left out of "best"
    for line in text:
        if line.startswith(("  significantly", "  no demonstrated")):
            assert best not in listed_names(line), line
    assert f"  baseline measured on another machine (no speedup claimed): {best}" in text
    # the same table without the warning calls it a speedup, as before
    table.loc[table["configuration"] == best, "warnings"] = ""
    table.to_csv(tmp_path / "summary.csv", index=False)
    assert "speedup" in next(
        line for line in conclusion.lines(conclusion.read(tmp_path / "summary.csv")) if "best:" in line
    )


def test_a_configuration_measured_again_after_a_node_failure_is_named(tmp_path):
    table = pd.read_csv(GOLDEN)
    table["warnings"] = table["warnings"].astype("object")
    table.loc[table["configuration"] == "b", "warnings"] = (
        f"{claims.REMEASURED}: node node1 failed (down*) while Slurm job 13 measured there; its 2 finished run(s) "
        f"are kept in results/b/failed/20261201T193015Z-job13"
    )
    table.to_csv(tmp_path / "summary.csv", index=False)
    text = conclusion.lines(conclusion.read(tmp_path / "summary.csv"))
    assert f"  {claims.REMEASURED} (an earlier attempt was lost: warnings in summary.csv): b" in text
