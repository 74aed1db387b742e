"""Every table of a sweep from its runs, launches and profiles: summary.csv (``aggregate.summary_table``,
the builder the ``onerror`` path shares), runs.csv, drift.csv, the cost model's tables and the paper's
LaTeX, written by the summary job."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from specsweep.analyse import aggregate, costmodel, drift, runs_table
from specsweep.measure.rate_check import kept_and_excluded
from specsweep.plan.design import SessionRange
from specsweep.record import results
from specsweep.record.atomic import atomic_write
from specsweep.report import paper


@dataclass(frozen=True)
class Tables:
    summary: pd.DataFrame
    runs: pd.DataFrame
    drift: pd.DataFrame
    costmodel: costmodel.CostModel | None
    costmodel_text: str  # the cost model's findings, or why there is no fit


@dataclass(frozen=True)
class TableFiles:
    """Where ``write`` puts each table (the summary rule's outputs)."""

    summary: str = results.SUMMARY
    runs: str = results.RUNS_TABLE
    drift: str = results.DRIFT
    macros: str = results.PAPER_MACROS
    table: str = results.PAPER_TABLE
    costmodel: str = results.COSTMODEL
    costmodel_parameters: str = results.COSTMODEL_PARAMETERS
    costmodel_report: str = results.COSTMODEL_REPORT


def build(
    measured: aggregate.Measured,
    profile_parsers: dict[str, dict[str, Any]],
    detect_pct: float | None = None,
    sessions: SessionRange | None = None,
) -> Tables:
    configurations = measured.configurations
    runs = {name: [] for name in configurations} | measured.runs
    # the statistics rest on the runs that count; summary.csv counts the others, runs.csv lists every run
    counted = {name: kept_and_excluded(records)[0] for name, records in runs.items()}
    # the cost model pools every session of a configuration; drift looks at each session on its own
    model, text = costmodel.fit_sweep(configurations, runs)
    return Tables(
        summary=aggregate.summary_table(
            replace(measured, runs=runs), profile_parsers, detect_pct=detect_pct, session_range=sessions
        ),
        runs=runs_table.runs_table(runs, configurations),
        drift=drift.report(configurations, counted),
        costmodel=model,
        costmodel_text=text,
    )


def write(tables: Tables, files: TableFiles, progress: TextIO, macro_prefix: str = paper.PREFIX) -> None:
    """Each table to its file, and what a reader should see first to the console."""
    frame = tables.summary
    aggregate.write_csv(frame, files.summary)
    aggregate.write_csv(tables.runs, files.runs)
    print(
        frame[
            [
                "configuration",
                "sessions",
                "runs",
                "decode_tok_s_mean",
                "decode_tok_s_ci95_low",
                "decode_tok_s_ci95_high",
                "speedup_pct",
                "speedup_ci95_low",
                "speedup_ci95_high",
                "speedup_p_value",
                "speedup_p_holm",
                "acceptance_rate",
            ]
        ].to_string(index=False),
        file=progress,
    )
    for line in aggregate.warning_lines(frame):
        print(line, file=progress)
    aggregate.write_csv(tables.drift, files.drift)
    for line in drift.describe(tables.drift):
        print(line, file=progress)
    paper.write(files.summary, files.macros, files.table, macro_prefix)
    print(f"paper macros and table written to {Path(files.macros).parent}", file=progress)
    model = tables.costmodel
    aggregate.write_csv(model.table if model else pd.DataFrame(), files.costmodel)
    aggregate.write_csv(costmodel.parameters_frame(model) if model else pd.DataFrame(), files.costmodel_parameters)
    atomic_write(files.costmodel_report, tables.costmodel_text)
    print(tables.costmodel_text, file=progress)
