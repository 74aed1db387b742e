"""LaTeX for a paper, generated from summary.csv: headline macros and a booktabs table.

Columns are read by name and optional ones may be absent (e.g. the speedup confidence interval
of older summaries): a missing number becomes ``n/a``, a missing table column is left out, so
the files always compile. Formatting is fixed, so a rebuild gives identical bytes.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from specsweep.analyse import conclusion
from specsweep.analyse.aggregate import runs_range
from specsweep.record.atomic import atomic_write

PREFIX = "specsweep"  # the default of config paper.macro_prefix: every macro is \<prefix><Name>, letters only
DIGITS = ("Zero", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")
# Per configuration (\<prefix><Configuration><Field>): field -> (summary column or CI stem, format, suffix).
CONFIGURATION_FIELDS: dict[str, tuple[str, str, str]] = {
    "TokS": ("decode_tok_s_mean", ".1f", ""),
    "TokSCI": ("decode_tok_s_ci95", ".1f", ""),
    "Speedup": ("speedup", ".2f", r"\times"),
    "SpeedupPct": ("speedup_pct", "+.1f", r"\,\%"),
    "SpeedupCI": ("speedup_ci95", ".2f", r"\times"),
    "PValue": ("speedup_p_value", ".2g", ""),
    "AcceptanceRate": ("acceptance_rate", ".1f", r"\,\%"),
    "AcceptLength": ("accept_length", ".2f", ""),
    "Runs": ("runs", ".0f", ""),
}
NA = r"\textit{n/a}"
_TEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def escape(text: Any) -> str:
    return "".join(_TEX_SPECIALS.get(ch, ch) for ch in str(text))


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _fmt(value: Any, spec: str, suffix: str = "") -> str:
    number = _number(value)
    return NA if number is None else f"{number:{spec}}{suffix}"


def _get(row: pd.Series, column: str) -> Any:
    return row[column] if column in row.index else None


def best(summary: pd.DataFrame) -> pd.Series | None:
    """The configuration the conclusion calls best (conclusion.best: the fastest that is significantly faster
    than its baseline after Holm's adjustment), or None, so the paper never names one the console does not."""
    chosen = conclusion.best(_measured_rows(summary))
    return None if chosen is None else summary[summary["configuration"].astype(str) == chosen["configuration"]].iloc[0]


def _measured_rows(summary: pd.DataFrame) -> list[conclusion.Row]:
    """summary.csv's measured rows as the conclusion reads them (its text)."""
    rows = [{k: str(v) for k, v in row.items()} for row in summary.to_dict("records")]
    return [r for r in rows if r.get("status", "ok") in ("ok", "nan") and r.get("decode_tok_s_mean") != "nan"]


def macro_part(name: str) -> str:
    """A configuration name as letters, which is all a TeX macro name may hold: ``ngram-m24`` ->
    ``NgramMTwoFour`` (each word capitalised, each digit spelt out)."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    return "".join(
        w[0].upper() + w[1:] for w in ("".join(DIGITS[int(c)] if c.isdigit() else c for c in word) for word in words)
    )


def _math(value: str) -> str:
    r"""Numbers work in text and in math alike (``\times`` and ``\%`` need math mode in text)."""
    return f"\\ensuremath{{{value}}}"


def _field(row: pd.Series, column: str, spec: str, suffix: str) -> str:
    if column.endswith("_ci95"):
        return _ci(row, column, spec, suffix)
    value = _get(row, column)
    return _fmt(_percent(value) if column == "acceptance_rate" else value, spec, suffix)


def _p_value(value: Any) -> str:
    number = _number(value)
    return NA if number is None else "<0.001" if number < 0.001 else f"{number:.3f}"


def configuration_macros(summary: pd.DataFrame, taken: dict[str, str], prefix: str = PREFIX) -> list[str]:
    """``\\<prefix><Configuration><Field>`` for every configuration and field, plus the accessor
    ``\\<prefix>Value{<configuration name>}{<Field>}``, which also reaches names whose letters clash.
    ``taken``: the headline macros (name -> value); one of the same name and value is not repeated."""
    lines = [
        f"% Per configuration: \\{prefix}<Configuration><Field>, or \\{prefix}Value{{<name>}}{{<Field>}}; "
        f"Field is one of {', '.join(CONFIGURATION_FIELDS)}.",
        f"\\newcommand{{\\{prefix}Value}}[2]{{\\csname {prefix}@#1@#2\\endcsname}}",
    ]
    parts = [macro_part(str(n)) for n in summary["configuration"]]
    for (_, row), part in zip(summary.iterrows(), parts, strict=True):
        name = str(row["configuration"])
        values = {
            field: _math(_p_value(_get(row, column)) if field == "PValue" else _field(row, column, spec, suffix))
            for field, (column, spec, suffix) in CONFIGURATION_FIELDS.items()
        }
        named = (
            bool(part)
            and parts.count(part) == 1
            and all(taken.get(part + field, value) == value for field, value in values.items())
        )
        if not named:
            lines.append(f"% {escape(name)}: no named macros (they would clash with other macros); use \\{prefix}Value")
        for field, value in values.items():
            lines.append(f"\\expandafter\\def\\csname {prefix}@{name}@{field}\\endcsname{{{value}}}")
            if named and part + field not in taken:
                lines.append(f"\\newcommand{{\\{prefix}{part}{field}}}{{{value}}}")
    return lines


def macros(summary: pd.DataFrame, prefix: str = PREFIX) -> str:
    baseline = summary[summary["baseline"].astype(bool)].iloc[0]
    top = best(summary)
    values: dict[str, str] = {
        "BaselineName": escape(baseline["configuration"]),
        "BaselineTokS": _math(_fmt(baseline["decode_tok_s_mean"], ".1f")),
        "BaselineTokSCI": _math(_ci(baseline, "decode_tok_s_ci95", ".1f")),
        "Configurations": str(len(summary)),  # after grid expansion: one summary row each
        "RunsPerConfiguration": runs_range(summary, "--"),
        "TokensPerRun": _fmt(summary["tokens_per_run"].max(), ".0f") if "tokens_per_run" in summary else NA,
        "EngineVersion": escape(baseline["engine_version"]) if pd.notna(_get(baseline, "engine_version")) else NA,
    }
    if top is not None:
        values |= {
            "BestName": escape(top["configuration"]),
            **{
                f"Best{field}": _math(_field(top, *CONFIGURATION_FIELDS[field]))
                for field in ("TokS", "TokSCI", "Speedup", "SpeedupPct", "AcceptanceRate", "AcceptLength")
            },
            # the interval the conclusion quotes: simultaneous over the family, or the rounds' repeated one
            "BestSpeedupCI": _math(_ci(top, conclusion.best_interval(_measured_rows(summary)), ".2f", r"\times")),
        }
    lines = [
        "% Generated by specsweep from results/summary.csv; do not edit (rerun the pipeline).",
        "% Numbers are wrapped in \\ensuremath: write them in text or in math alike.",
    ]
    if top is None:
        lines.append(
            "% No Best* macros: no configuration is significantly faster than its baseline (Holm, simultaneous CI > 1)."
        )
    lines += [f"\\newcommand{{\\{prefix}{name}}}{{{value}}}" for name, value in values.items()]
    lines += configuration_macros(summary, values, prefix)
    return "\n".join(lines) + "\n"


def _percent(fraction: Any) -> float:
    """A rate as a percentage; a real 0 stays 0 % (only a missing rate is n/a)."""
    number = _number(fraction)
    return math.nan if number is None else 100 * number


def _ci(row: pd.Series, stem: str, spec: str, suffix: str = "") -> str:
    low, high = _number(_get(row, f"{stem}_low")), _number(_get(row, f"{stem}_high"))
    if low is None or high is None:
        return NA
    return f"[{low:{spec}}, {high:{spec}}]{suffix}"


# (column, heading, formatter); a column absent from summary.csv is left out of the table.
def _table_columns(summary: pd.DataFrame) -> list[tuple[str, str, Any]]:
    columns: list[tuple[str, str, Any]] = [
        ("configuration", "Configuration", lambda r: escape(r["configuration"])),
        ("decode_tok_s_mean", "tok/s", lambda r: _fmt(r["decode_tok_s_mean"], ".1f")),
        ("decode_tok_s_ci95_low", "95\\,\\% CI", lambda r: _ci(r, "decode_tok_s_ci95", ".1f")),
        ("speedup", "Speedup", lambda r: _fmt(r["speedup"], ".2f", r"$\times$")),
        ("speedup_ci95_low", "Speedup 95\\,\\% CI", lambda r: _ci(r, "speedup_ci95", ".2f")),
        ("acceptance_rate", "Accept.\\ rate", lambda r: _fmt(_percent(r["acceptance_rate"]), ".1f", r"\,\%")),
        ("accept_length", "Accept.\\ length", lambda r: _fmt(r["accept_length"], ".2f")),
    ]
    return [c for c in columns if c[0] in summary.columns]


def table(summary: pd.DataFrame) -> str:
    """A booktabs ``table`` (needs ``\\usepackage{booktabs}``) of every configuration."""
    columns = _table_columns(summary)
    runs = runs_range(summary, "--")
    head = " & ".join(heading for _, heading, _ in columns) + r" \\"
    body = []
    for _, row in summary.iterrows():
        cells = [render(row) for _, _, render in columns]
        body.append(" & ".join(cells) + r" \\" + ("  % baseline" if bool(row["baseline"]) else ""))
    return "\n".join(
        [
            "% Generated by specsweep from results/summary.csv; needs \\usepackage{booktabs}.",
            r"\begin{table}[t]",
            r"\centering",
            f"\\caption{{Decode throughput per configuration ({runs} runs each; mean and 95\\,\\% CI).}}",
            r"\label{tab:specsweep-summary}",
            f"\\begin{{tabular}}{{l{'r' * (len(columns) - 1)}}}",
            r"\toprule",
            head,
            r"\midrule",
            *body,
            r"\bottomrule",
            r"\end{tabular}",
            r"\end{table}",
            "",
        ]
    )


def write(summary_csv: str | Path, macros_path: str | Path, table_path: str | Path, prefix: str = PREFIX) -> None:
    summary = pd.read_csv(summary_csv)
    atomic_write(macros_path, macros(summary, prefix))
    atomic_write(table_path, table(summary))


def macro_names(text: str) -> list[str]:
    return re.findall(r"\\newcommand\{\\(\w+)\}", text)
