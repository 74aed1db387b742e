"""``specsweep``: Snakemake with the argument check Snakemake cannot make for this workflow.

Snakemake reads its config files before the workflow runs a line, so a target written after
``--configfile`` (which takes every value that follows it) fails inside Snakemake's command line
with a traceback ("No such file or directory: 'all'"), a missing config file with a traceback too, and
a YAML syntax error without file or line. ``specsweep ARGS`` recognises these, explains them (file, line,
fix) and exits; otherwise it runs ``python -m snakemake ARGS`` unchanged.
"""

from __future__ import annotations

import os
import sys

from specsweep.plan.config_errors import config_file_problem, misplaced_target_message, misplaced_targets

CONFIGFILE_OPTIONS = ("--configfile", "--configfiles")


def configfile_values(argv: list[str]) -> list[str]:
    """Every value Snakemake's parser gives ``--configfile``: the words after it up to the next option."""
    values: list[str] = []
    taking = False
    for word in argv:
        if word in CONFIGFILE_OPTIONS:
            taking = True
        elif word.startswith(tuple(f"{option}=" for option in CONFIGFILE_OPTIONS)):
            values.append(word.split("=", 1)[1])
            taking = True
        elif word.startswith("-"):
            taking = False
        elif taking:
            values.append(word)
    return values


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    given = configfile_values(argv)
    if misplaced := misplaced_targets(given):
        print(f"specsweep: {misplaced_target_message(misplaced, given)}", file=sys.stderr)
        return 2
    if problems := [p for p in map(config_file_problem, given) if p is not None]:
        print("\n".join(f"specsweep: {p}" for p in problems), file=sys.stderr)
        return 2
    os.execv(sys.executable, [sys.executable, "-m", "snakemake", *argv])
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main())
