"""One definition of speculation metrics, because the engines disagree.

Counts are stored per run; the ratios are derived here and only here:

* acceptance rate = accepted drafted tokens / drafted tokens (drafts only, no bonus token);
* accept length   = tokens emitted per verify step, bonus token included
                  = 1 + accepted / verify_steps (one bonus token per verify step).

SGLang's "accept rate" meant three different things between 0.5.4 and 0.5.23, so engine-side
ratios are never compared; the counts are.
"""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class SpeculationCounts:
    drafted: int | None  # None: the engine did not say (SGLang <= 0.5.4 without its server args)
    accepted: int
    emitted: int | None  # None in records written before it was kept
    verify_steps: int | None = None
    source: str = ""

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else float("nan")

    @property
    def accept_length(self) -> float:
        if not self.verify_steps:
            return float("nan")
        return 1.0 + self.accepted / self.verify_steps

    @property
    def impossible(self) -> str | None:
        """Why these counts cannot be true, None when they can: a count below zero (a counter that fell
        between two scrapes: the engine restarted or reset it), more tokens accepted than drafted, or more
        accepted tokens or verify steps than tokens emitted."""
        named = {"drafted": self.drafted, "accepted": self.accepted, "verify steps": self.verify_steps}
        if negative := [f"{name} {value}" for name, value in named.items() if value is not None and value < 0]:
            return f"{', '.join(negative)} below zero (a counter fell: the engine restarted or reset it?)"
        if self.drafted is not None and self.accepted > self.drafted:
            return f"accepted {self.accepted} > drafted {self.drafted}"
        for name, value in (("accepted", self.accepted), ("verify steps", self.verify_steps)):
            if value is not None and self.emitted and value > self.emitted:  # 0: a window's, not counted
                return f"{name} {value} > tokens emitted {self.emitted}"
        return None

    def to_json(self) -> dict[str, Any]:
        """The counts, with the ratios derived here written beside them for readers of the JSON."""
        return {**asdict(self), "acceptance_rate": self.acceptance_rate, "accept_length": self.accept_length}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SpeculationCounts:
        """Counts only: the ratios in the JSON are derived, so they are derived again, not read."""
        return cls(**{f.name: data.get(f.name, None if f.default is MISSING else f.default) for f in fields(cls)})


def usable_speculation(counts: SpeculationCounts | None) -> tuple[SpeculationCounts | None, str | None]:
    """The counts when they can be true, else None and why not (the counts named): impossible counts are
    refused, never averaged (acceptance 5.0 or drafted -222 once went into summaries as ok)."""
    if counts is None or (why := counts.impossible) is None:
        return counts, None
    return None, f"impossible speculation counts from {counts.source or 'the engine'}: {why}"


def total(per_run: list[SpeculationCounts]) -> SpeculationCounts | None:
    """The counts of several runs added up; None without any. One run with an unknown draft count
    (SGLang <= 0.5.4 without /server_info) makes the total's unknown too."""
    if not per_run:
        return None
    drafted = [s.drafted for s in per_run]
    emitted = [s.emitted for s in per_run]
    return SpeculationCounts(
        drafted=None if None in drafted else sum(drafted),  # type: ignore[arg-type]
        accepted=sum(s.accepted for s in per_run),
        emitted=None if None in emitted else sum(emitted),  # type: ignore[arg-type]
        verify_steps=sum(s.verify_steps or 0 for s in per_run) or None,
        source="; ".join(sorted({s.source for s in per_run if s.source})),
    )


def count(value: Any) -> int | None:
    """A non-negative integer count from engine JSON, else None (bools and floats are not counts),
    so a malformed or truncated final event reads as "not reported", never a crash."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
