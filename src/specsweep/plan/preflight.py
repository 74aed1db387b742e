"""Checks before anything is built, downloaded or launched, beyond what the schema says: the engine kinds
and log formats a config names (``registered``), each engine's settings, the files the sweep reads (a
prompt dataset line by line), each engine's domain checks of its configurations, and the load levels
against each engine's slots. Every error names the key and the fix (``ConfigError``); warnings are
printed and returned.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TextIO

from specsweep.engines import ADAPTERS, adapter_class
from specsweep.plan import inputs
from specsweep.plan.config import ConfigError, Configuration
from specsweep.plan.environment import check_multicast_off, policy_of
from specsweep.plan.load_levels import check_load
from specsweep.plan.model_ids import check_model_ids
from specsweep.plan.registered import check_registered
from specsweep.plan.workload import HUGGING_FACE, WorkloadError, hugging_face_file, read_workload
from specsweep.record import results


def check(config: dict[str, Any], configurations: dict[str, Configuration], out: TextIO = sys.stderr) -> list[str]:
    """Everything below, in order; the warnings of the domain checks."""
    check_registered(config)
    check_engine_settings(config)
    check_model_ids(config)
    check_files(config)
    warnings = check_configurations(configurations, out)
    check_load(config["benchmark"], configurations)
    check_multicast_off(configurations.values(), os.environ, policy_of(config).pass_through)
    return warnings


def check_engine_settings(config: dict[str, Any]) -> None:
    for name, settings in config["engines"].items():
        adapter_class(settings["kind"]).check_settings(name, settings)


def check_files(config: dict[str, Any]) -> None:
    """Files the sweep reads must exist before anything is built or launched."""
    if str(config["benchmark"]["prompts"]).startswith(HUGGING_FACE):
        try:  # read through the datasets library, exported once into the results tree, then a prompt file
            exported = hugging_face_file(str(config["benchmark"]["prompts"]), Path(results.WORKLOADS))
        except WorkloadError as error:
            raise ConfigError(f"benchmark/prompts: {error}") from None
        config["benchmark"]["prompts"] = str(exported)
    prompts = Path(config["benchmark"]["prompts"])
    kind = inputs.kind_of(prompts)
    if kind == "missing":
        raise ConfigError(
            f"benchmark/prompts: {prompts} does not exist (relative paths are relative to the "
            f"working directory); point it at a text file with one prompt per line"
        )
    if kind != "file":
        raise ConfigError(
            f"benchmark/prompts: {prompts} is a {kind}, not a file; point it at a text file with one prompt per line"
        )
    if (why := inputs.not_a_text_file(prompts)) is not None:
        raise ConfigError(
            f"benchmark/prompts: {prompts} is not a UTF-8 text file: {why}; point it at a text file with one "
            f"prompt per line"
        )
    try:
        # a malformed dataset line fails here, before anything is built or launched; an empty set only at the
        # session's start (an archive keeps a comment-only placeholder when archive.include_prompts is false)
        read_workload(prompts, require_prompts=False)
    except WorkloadError as error:
        raise ConfigError(f"benchmark/prompts: {error}") from None
    local = local_models(config)
    for name, model in config.get("models", {}).items():
        if name in local and "path" in model:
            kind = inputs.kind_of(Path(model["path"]).expanduser())
            if kind == "missing":
                raise ConfigError(
                    f"models/{name}/path: {model['path']} does not exist; fix the path or download the model first"
                )
            if kind not in ("file", "directory"):  # the server would block opening it, until the ready timeout
                raise ConfigError(
                    f"models/{name}/path: {model['path']} is a {kind}, not a model file; point it at the model file"
                )
    for name, engine in config["engines"].items():
        if "executable" in engine:
            executable = Path(engine["executable"]).expanduser()
            if not executable.is_file() or not os.access(executable, os.X_OK):
                raise ConfigError(
                    f"engines/{name}/executable: engine binary not found: {engine['executable']} "
                    f"is not an executable file; fix the path, or remove the key to let the "
                    f"pipeline build llama-server"
                )


def local_models(config: dict[str, Any]) -> set[str]:
    """Models that an engine opening its files on this machine (``Engine.opens_local_models``) serves or
    drafts with; other engines' models live on the GPU node (or are hub ids), so planning elsewhere works."""
    engines = config["engines"]
    here = {name for name, e in engines.items() if adapter_class(e["kind"]).opens_local_models}
    local = {engines[name].get("model") for name in here}
    for entry in config["configurations"].values():
        if (entry.get("engine") or next(iter(engines))) in here:
            local.add(entry.get("draft_model"))
    return local - {None}


def check_configurations(configurations: dict[str, Configuration], out: TextIO = sys.stderr) -> list[str]:
    """Each engine's domain checks (raise ConfigError when impossible); warnings are printed and returned."""
    for configuration in configurations.values():
        ADAPTERS[configuration.kind].check_owned_flags(configuration)
    warnings = [w for c in configurations.values() for w in ADAPTERS[c.kind].check_configuration(c)]
    for warning in warnings:
        print(f"specsweep warning: {warning}", file=out)
    return warnings
