"""See before you spend GPU time: each configuration's resolved launch, without launching anything.

``results/plan/<cfg>.json`` holds the argv (secrets redacted), the environment it sets, the
engine and model; ``results/commands.sh`` reproduces every launch by hand. Nothing is built,
downloaded or started: the llama-server path and wheel model paths are where the engine and
model rules will put them, and SGLang/vLLM model paths are taken as written (they exist on the
GPU node, not necessarily here).
"""

from __future__ import annotations

import shlex
import sys
from typing import Any, TextIO

from specsweep.config import Configuration
from specsweep.engines import ADAPTERS, adapter, adapter_class
from specsweep.engines.base import EngineResources
from specsweep.models import model_path
from specsweep.redact import REDACTED, is_secret, redact_argv, redact_env
from specsweep.server import exposure_warning


def plan(configuration: Configuration, engine: dict[str, Any], models: dict[str, Any]) -> dict[str, Any]:
    model_name = engine.get("model")
    resources = EngineResources(
        executable=adapter_class(engine["kind"]).planned_executable(engine),
        model=str(model_path(models[model_name])) if model_name else None,
        draft_model=str(model_path(models[configuration.draft_model])) if configuration.draft_model else None,
    )
    server = adapter(configuration.kind, engine, resources)
    host = engine.get("host", "127.0.0.1")
    port = engine.get("port") or server.default_port
    argv = server.command(configuration, host, port) if server.launches else []
    return {
        "configuration": configuration.name,
        "engine": configuration.engine,
        "kind": configuration.kind,
        "model": resources.model,
        "draft_model": resources.draft_model,
        "argv": redact_argv(argv),
        "env_set": redact_env(configuration.env),
        "base_url": server.base_url(host, port),
        "port": "picked at launch (engines/*/port: 0); the plan shows the engine's usual port"
        if not engine.get("port") and server.launches
        else port,
        "warnings": type(server).check_configuration(configuration)
        + [w for w in [exposure_warning(host, configuration.engine)] if w and server.launches],
        "launches": server.launches,
    }


def shell_line(planned: dict[str, Any]) -> str:
    """One POSIX shell line; a redacted variable is taken from the caller's environment instead."""
    assignments = [
        f'{name}="${{{name}}}"' if is_secret(name) or value == REDACTED else f"{name}={shlex.quote(value)}"
        for name, value in planned["env_set"].items()
    ]
    return " ".join(
        ["env", *assignments, shlex.join(planned["argv"])] if assignments else [shlex.join(planned["argv"])]
    )


def commands_script(plans: list[dict[str, Any]]) -> str:
    lines = [
        "#!/bin/sh",
        "# Every server launch of this sweep, as specsweep would run it (written by rule plan;",
        "# nothing was started). Run one at a time; each blocks until stopped. Secrets are read",
        "# from your environment, never written here.",
        "",
    ]
    for planned in plans:
        lines.append(f"# {planned['configuration']} ({planned['kind']}, engine {planned['engine']})")
        lines.extend(f"#   warning: {w}" for w in planned["warnings"])
        if planned["launches"]:
            lines.append(shell_line(planned))
        else:
            lines.append(f"#   external endpoint {planned['base_url']}: nothing to launch")
        lines.append("")
    return "\n".join(lines)


def check_configurations(configurations: dict[str, Configuration], out: TextIO = sys.stderr) -> list[str]:
    """Each engine's domain checks (raise ConfigError when impossible); warnings are printed and returned."""
    warnings = [w for c in configurations.values() for w in ADAPTERS[c.kind].check_configuration(c)]
    for warning in warnings:
        print(f"specsweep warning: {warning}", file=out)
    return warnings
