"""Hub model ids (``meta-llama/Llama-3.1-8B-Instruct``) as models, before anything is planned or launched.

An id given as ``path`` used to be planned as a folder under the working directory (``model_path`` resolves
a relative path), with no warning, and the server failed on the GPU node. So: ``models/<name>/hub`` names an
id, allowed only for engines that resolve ids themselves (``Engine.resolves_model_ids``: vLLM, SGLang), and a
``path`` that does not exist here and reads as an id is refused with the fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from specsweep.engines import adapter_class
from specsweep.plan.config import ConfigError

HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")


def users(config: dict[str, Any]) -> dict[str, set[str]]:
    """Model name -> the engines that serve it or draft with it."""
    engines = config["engines"]
    found: dict[str, set[str]] = {}
    for name, engine in engines.items():
        if engine.get("model"):
            found.setdefault(engine["model"], set()).add(name)
    for entry in config["configurations"].values():
        if entry.get("draft_model"):
            found.setdefault(entry["draft_model"], set()).add(entry.get("engine") or next(iter(engines)))
    return found


def check_model_ids(config: dict[str, Any]) -> None:
    using = users(config)
    for name, model in config.get("models", {}).items():
        engines = sorted(using.get(name, ()))
        if "hub" in model:
            for engine in engines:
                kind = config["engines"][engine]["kind"]
                if not adapter_class(kind).resolves_model_ids:
                    raise ConfigError(
                        f"models/{name}/hub: engines/{engine} (kind {kind}) opens local model files only and "
                        f"cannot resolve the id {model['hub']}; download it (e.g. `huggingface-cli download "
                        f"{model['hub']} --local-dir DIR`) and give models/{name}/path: DIR"
                    )
        elif "path" in model and HUB_ID.match(model["path"]) and not Path(model["path"]).expanduser().exists():
            resolving = [e for e in engines if adapter_class(config["engines"][e]["kind"]).resolves_model_ids]
            fix = (
                f"write `hub: {model['path']}` instead of path ({', '.join(resolving)} resolve ids themselves)"
                if resolving and resolving == engines
                else "download it and give its local path"
            )
            raise ConfigError(
                f"models/{name}/path: {model['path']} is no file or folder here and reads as a Hugging Face "
                f"model id, which would be planned as the folder {Path(model['path']).resolve()}; {fix}"
            )
