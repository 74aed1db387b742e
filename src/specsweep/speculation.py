"""One definition of speculation metrics, because the engines disagree.

Counts are stored per run; the ratios are derived here and only here:

* acceptance rate = accepted drafted tokens / drafted tokens (drafts only, no bonus token);
* accept length   = tokens emitted per verify step, bonus token included
                  = 1 + accepted / verify_steps (one bonus token per verify step).

SGLang's "accept rate" meant three different things between 0.5.4 and 0.5.23, so engine-side
ratios are never compared; the counts are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SpeculationCounts:
    drafted: int | None  # None: the engine did not say (SGLang <= 0.5.4 without its server args)
    accepted: int
    emitted: int
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


def count(value: Any) -> int | None:
    """A non-negative integer count from engine JSON, else None (bools and floats are not counts),
    so a malformed or truncated final event reads as "not reported", never a crash."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
