"""The next value worth measuring of the one speculative flag a sweep varies (analyse/schedule.py
``swept_flag``): from the measured values' throughput, the values between the best and its measured
neighbours, until both neighbours are measured; then the next step is to confirm the winner in fresh sessions.

The throughput of speculative decoding against its draft length has one interior optimum (each draft token
costs verify time, and is accepted less often than the one before: analyse/costmodel.py), so the best's
neighbours bracket it and the search narrows that bracket. In a gap wider than one step the value proposed is
the cost model's predicted optimum when it lies inside the gap, else the middle rounded towards the best
(steps 3 between a winning 2 and a losing 5). A best that is the largest value measured is doubled: the curve
may still rise. The baseline (no speculation) is value 0, the lowest there is. The proposal follows the point
estimates; whether the best is *shown* best is the verdicts' matter (analyse/loadbest.py, summary.csv).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CONFIRM = "confirm the winner: re-measure it and the baseline in fresh sessions"


@dataclass(frozen=True)
class Proposal:
    """The best measured value, the values to measure next (none: its neighbours are measured) and why."""

    best: int
    next_values: tuple[int, ...]
    why: str


def propose(rates: Mapping[int, float], predicted: float | None = None) -> Proposal:
    """The next values from ``rates`` (swept value -> throughput, any scale where higher is better) and the
    cost model's predicted optimum in the flag's units, if any."""
    if not rates:
        raise ValueError("no measured value to search from")
    measured = sorted(rates)
    best = max(measured, key=lambda value: rates[value])
    below = [v for v in measured if v < best]
    above = [v for v in measured if v > best]
    proposed: list[int] = []
    reasons: list[str] = []
    low = below[-1] if below else 0  # 0, no speculation: the baseline every sweep has
    if best - low > 1:
        proposed.append(_inside(low, best, predicted, towards=best))
        reasons.append(f"between {low} and the best {best}")
    if above and above[0] - best > 1:
        proposed.append(_inside(best, above[0], predicted, towards=best))
        reasons.append(f"between the best {best} and {above[0]}")
    elif not above:
        proposed.append(max(2 * best, best + 1))
        reasons.append(f"above the best {best}, the largest measured (the curve may still rise)")
    if not proposed:
        return Proposal(best, (), f"the best {best}'s neighbours are measured: {CONFIRM}")
    return Proposal(best, tuple(sorted(set(proposed))), "; ".join(reasons))


def _inside(low: int, high: int, predicted: float | None, towards: int) -> int:
    """A value strictly between low and high: the predicted optimum there, else the middle nearer ``towards``."""
    if predicted is not None and math.isfinite(predicted) and low < predicted < high:
        return min(max(round(predicted), low + 1), high - 1)
    middle = (low + high) / 2
    value = math.floor(middle) if towards < middle else math.ceil(middle)
    return min(max(value, low + 1), high - 1)


def next_values(proposals: Iterable[Proposal]) -> list[int]:
    """What one more round measures: every proposal's values (per load level, say), once."""
    return sorted({value for p in proposals for value in p.next_values})
