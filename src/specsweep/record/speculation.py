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

    def to_json(self) -> dict[str, Any]:
        """The counts, with the ratios derived here written beside them for readers of the JSON."""
        return {**asdict(self), "acceptance_rate": self.acceptance_rate, "accept_length": self.accept_length}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SpeculationCounts:
        """Counts only: the ratios in the JSON are derived, so they are derived again, not read."""
        return cls(**{f.name: data.get(f.name, None if f.default is MISSING else f.default) for f in fields(cls)})


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
