"""Run one configuration's session from a JSON spec: the fault tests' stand-in for the bench job script.

Usage: ``python drive_session.py SPEC.json`` (written by conftest.session_spec). It calls the same
``session.measure`` the Snakemake job calls, so signals and SIGKILL hit the real code path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, TextIO

from specsweep.engines.base import EngineResources
from specsweep.engines.llamacpp import LlamaCpp
from specsweep.measure.session import Session, SessionPaths, measure
from specsweep.plan.config import Configuration
from specsweep.plan.workload import Prompt

PROMPTS = [Prompt("Write a short story about a lighthouse keeper."), Prompt("Explain how a bicycle works.")]


def drive(spec: dict[str, Any], progress: TextIO) -> None:
    configuration = Configuration(**spec["configuration"])
    engine = LlamaCpp(
        {"kind": "llamacpp", "host": spec["host"], "port": spec["port"], **spec.get("engine_settings", {})},
        EngineResources(executable=spec["executable"], model=spec["model"]),
    )
    out = Path(spec["results"])
    paths = SessionPaths(
        log=out / "server.log",
        launch=out / "launch.json",
        runs=[out / "runs" / f"run_{i}.json" for i in range(spec["benchmark"]["runs"])],
        stale_pgid=out / "server.pgid",
        failed_root=out / "failed",
        windows={
            label: [out / "load" / label / f"window_{w}.json" for w in range(count)]
            for label, count in spec.get("windows", {}).items()
        },
        rate_search=out / "load" / "rate_search.json",  # written only with benchmark.load.rate_search
    )
    measure(Session(configuration, engine, spec["benchmark"], PROMPTS, spec["host"], spec["port"], paths), progress)


if __name__ == "__main__":
    drive(json.loads(Path(sys.argv[1]).read_text()), sys.stdout)
