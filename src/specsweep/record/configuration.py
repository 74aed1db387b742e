"""One server configuration as every stage sees it: what the plan expands from the config, the measuring job
launches, the analysis groups and the records keep (launch.json). Here, on the ground floor, so that the engine
adapters and parsers read it without importing the planning stage."""

from __future__ import annotations

from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from specsweep.record.redact import fingerprint, redact_mapping

# Free text that changes neither the launch nor the measurement: editing it reruns nothing.
NOT_IDENTITY = frozenset({"description"})


@dataclass(frozen=True)
class Configuration:
    """One server configuration after grid expansion and merging with its engine's defaults."""

    name: str
    engine: str
    kind: str
    baseline: bool
    args: dict[str, Any]
    env: dict[str, str]
    # The values this configuration sets for each grid axis ("--flag" or "env:NAME").
    axes: dict[str, Any] = field(default_factory=dict)
    # The configurations entry this one came from (itself unless it was expanded from a grid).
    group: str = ""
    draft_model: str | None = None
    description: str = ""
    # Variables set to null: removed from the engine's environment even when inherited or passed through.
    # Lists, not tuples, here and below: a configuration is compared with its JSON form in launch.json.
    unset_env: list[str] = field(default_factory=list)
    # The level of each factor crossed into this configuration (factors.py), in the entry's order.
    levels: dict[str, str] = field(default_factory=dict)
    # The factors whose level (marked baseline: true) makes this configuration a baseline.
    baseline_factors: list[str] = field(default_factory=list)
    # The baseline this configuration is compared with, when its entry names one (see factors.baseline_of).
    compared_with: str | None = None
    # The configuration this one is a further session (server launch) of (plan/design.py), else None.
    session_of: str | None = None

    def as_params(self) -> dict[str, Any]:
        return asdict(self)

    def identity(self) -> dict[str, Any]:
        """What Snakemake ``params:`` see: a change here reruns this configuration only. Fields at their
        default are left out, so a field added by a later specsweep does not rerun finished measurements.
        Secret env values and secret flag values appear as fingerprints, because Snakemake stores params
        in .snakemake/metadata in plain text; the job reads the real values from the config."""
        defaults = {
            f.name: f.default_factory() if f.default_factory is not MISSING else f.default
            for f in fields(self)
            if f.default is not MISSING or f.default_factory is not MISSING
        }
        values = {
            k: v for k, v in asdict(self).items() if k not in NOT_IDENTITY and (k not in defaults or v != defaults[k])
        }
        return redact_mapping(values, replace=fingerprint)
