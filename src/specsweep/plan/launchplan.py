"""See before you spend GPU time: each configuration's resolved launch, without launching anything.

``results/plan/<cfg>.json`` holds the argv (secrets redacted), the environment it sets, the
engine and model; ``results/commands.sh`` reproduces every launch by hand. Nothing is built,
downloaded or started: the llama-server path and wheel model paths are where the engine and
model rules will put them, and SGLang/vLLM model paths are taken as written (they exist on the
GPU node, not necessarily here).
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Iterable
from typing import Any

from specsweep.engines import adapter, adapter_class
from specsweep.engines.base import Engine, EngineResources
from specsweep.engines.server import exposure_warning
from specsweep.plan import references
from specsweep.plan.config import Configuration
from specsweep.record.models import model_path
from specsweep.record.redact import REDACTED, is_secret, redact_argv, redact_env


def plan(
    configuration: Configuration, engine: dict[str, Any], models: dict[str, Any], swept: Iterable[str] = ()
) -> dict[str, Any]:
    """The launch of ``configuration``; ``swept``: variables the sweep sets or unsets in any configuration,
    which this launch runs without unless it sets them itself (the engine gets a clean environment)."""
    resources = _resources(configuration, engine, models)
    server = adapter(configuration.kind, engine, resources)
    host = engine.get("host", "127.0.0.1")
    port = engine.get("port") or server.default_port
    argv, from_env = _argv_with_references(server, configuration, host, port) if server.launches else ([], {})
    # gpus: N (a count): the GPUs of the caller's environment, as the session takes a Slurm job's
    # (placement.select_gpus); never unset, so commands.sh run in a job uses the job's GPUs
    scheduler_gpus = isinstance(engine.get("gpus"), int) and "CUDA_VISIBLE_DEVICES" not in configuration.env
    gpus_env = {"CUDA_VISIBLE_DEVICES": {references.KEY: "CUDA_VISIBLE_DEVICES"}} if scheduler_gpus else {}
    return {
        "configuration": configuration.name,
        "engine": configuration.engine,
        "kind": configuration.kind,
        "model": resources.model,
        "draft_model": resources.draft_model,
        "argv": redact_argv(argv),
        "argv_from_env": {str(i): name for i, name in from_env.items()},
        "env_set": {
            # what the adapter sets itself (vLLM's stats interval; never a secret: the API key stays out), then
            # the configuration's own, as the session lays them
            **{k: v for k, v in server.launch_env().items() if not is_secret(k) and k not in configuration.env},
            **{
                k: configuration.env[k] if references.name_of(configuration.env[k]) else v
                for k, v in redact_env(configuration.env).items()
            },
        }
        | gpus_env,
        "env_unset": sorted({*configuration.unset_env, *swept} - set(configuration.env) - set(gpus_env)),
        "base_url": server.base_url(host, port),
        "port": "picked at launch (engines/*/port: 0); the plan shows the engine's usual port"
        if not engine.get("port") and server.launches
        else port,
        "warnings": type(server).check_configuration(configuration)
        + [w for w in [exposure_warning(host, configuration.engine)] if w and server.launches],
        "launches": server.launches,
    }


def _resources(configuration: Configuration, engine: dict[str, Any], models: dict[str, Any]) -> EngineResources:
    """Where the engine's executable and models will be (nothing is built or fetched)."""
    model_name = engine.get("model")
    return EngineResources(
        executable=adapter_class(engine["kind"]).planned_executable(engine),
        model=str(model_path(models[model_name])) if model_name else None,
        draft_model=str(model_path(models[configuration.draft_model])) if configuration.draft_model else None,
    )


def _argv_with_references(
    server: Engine, configuration: Configuration, host: str, port: int
) -> tuple[list[str], dict[int, str]]:
    """The argv, a ``{from_env: NAME}`` flag value shown as ``${NAME}`` (commands.sh reads it from the
    caller's environment); and the position of each such value -> its variable's name."""
    shown = dataclasses.replace(
        configuration,
        args={k: f"${{{name}}}" if (name := references.name_of(v)) else v for k, v in configuration.args.items()},
    )
    argv = server.command(shown, host, port)
    from_env = {
        len(argv) - argv[::-1].index(flag): name  # the value right after the flag's last occurrence
        for flag, value in configuration.args.items()
        if (name := references.name_of(value)) and flag in argv
    }
    return argv, from_env


def shell_line(planned: dict[str, Any]) -> str:
    """One POSIX shell line; a redacted variable is taken from the caller's environment instead, and a
    variable the launch runs without is removed from it (``env -u``) whatever the caller exported."""
    assignments = [
        f"{name}={references.shell_word(value)}"
        if references.name_of(value)
        else f'{name}="${{{name}}}"'
        if is_secret(name) or value == REDACTED
        else f"{name}={shlex.quote(value)}"
        for name, value in planned["env_set"].items()
    ]
    from_env = planned.get("argv_from_env", {})
    words = [
        f'"${{{from_env[str(i)]}}}"' if str(i) in from_env else shlex.quote(word)
        for i, word in enumerate(planned["argv"])
    ]
    removals = [f"-u {shlex.quote(name)}" for name in planned.get("env_unset", [])]
    return " ".join(["env", *removals, *assignments, *words] if assignments or removals else words)


def commands_script(plans: list[dict[str, Any]], walltime: Iterable[str] = ()) -> str:
    """The script of every launch; ``walltime``: the expected wall time (plan/walltime.py), kept as comments."""
    lines = [
        "#!/bin/sh",
        "# Every server launch of this sweep, as specsweep would run it (written by rule plan;",
        "# nothing was started). Run one at a time; each blocks until stopped. Secrets are read",
        "# from your environment, never written here. specsweep itself starts engines with a minimal",
        "# environment (see config/README.md, 'environment'); here the variables a launch runs without",
        "# are removed with env -u, the rest of your environment is inherited.",
        "",
        *(f"# {line}".rstrip() for line in walltime),
        *([""] if walltime else []),
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
