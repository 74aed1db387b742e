"""The environment an engine process gets: a documented minimum, the config's variables, a pass-through list.

Why not the caller's whole environment: a variable exported in the shell (``NCCL_PROTO``,
``LLAMA_ARG_THREADS``, ...) would silently change every configuration that does not set it, and
a reboot or another login would silently change it back. So an engine gets only

* ``default``: what a process needs to run (``DEFAULT_NAMES``, ``DEFAULT_PATTERNS``), what a
  scheduler sets for the job (``SCHEDULER_NAMES``, ``SLURM_*``) and what keeps a shared host's GPUs in
  service (``MULTICAST_OFF``), taken from the caller;
* ``pass-through``: the caller's variables the config lists under ``environment.pass_through``;
* ``config``: the configuration's own variables (engine, entry, grid axis, factor level).

A variable the configuration sets to null is removed, whatever its origin. Each variable's origin
is recorded (launch.json ``env_origin``, provenance). The ``MULTICAST_OFF`` variables are the exception:
set in the caller's environment, every configuration must get them unchanged (``check_multicast_off``),
because a program that uses NVLink multicast can put a host's shared GPUs out of service.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specsweep.plan.config import ConfigError, Configuration
from specsweep.record.redact import REDACTED, is_secret

DEFAULT_NAMES = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "LD_LIBRARY_PATH")
SCHEDULER_NAMES = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
DEFAULT_PATTERNS = ("LC_*", "SLURM_*")
# NVLink multicast off (NCCL NVLS, torch symmetric memory, NVSHMEM), as a host whose GPUs are shared sets them.
MULTICAST_OFF = ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")

CONFIG, PASS_THROUGH, DEFAULT = "config", "pass-through", "default"


@dataclass(frozen=True)
class EngineEnvironment:
    values: dict[str, str]
    origins: dict[str, str]  # variable -> config | pass-through | default


@dataclass(frozen=True)
class Policy:
    """What a launch needs to know of the sweep: the pass-through list and the variables it sets anywhere."""

    pass_through: tuple[str, ...] = ()
    swept: frozenset[str] = frozenset()

    def build(self, configuration: Configuration, inherited: Mapping[str, str]) -> tuple[EngineEnvironment, list[str]]:
        """The configuration's engine environment, and the warnings about inherited swept variables."""
        built = engine_environment(inherited, configuration.env, configuration.unset_env, self.pass_through)
        swept = self.swept or frozenset([*configuration.env, *configuration.unset_env])
        return built, launch_warnings(inherited, swept, built)


def policy_of(config: Mapping[str, Any]) -> Policy:
    """The policy of a validated config, read from the config itself (a job need not expand every
    configuration of the sweep to know which variables it sets)."""
    return Policy(
        pass_through=tuple(config.get("environment", {}).get("pass_through", [])), swept=variables_named(config)
    )


def variables_named(config: Mapping[str, Any]) -> frozenset[str]:
    """Every variable the config sets or unsets anywhere: engine and entry env, grid env axes, factor levels,
    CUDA_VISIBLE_DEVICES of an engine's gpus."""
    names: set[str] = set()
    for engine in config["engines"].values():
        names |= set(engine.get("env", {})) | ({"CUDA_VISIBLE_DEVICES"} if "gpus" in engine else set())
    for entry in config["configurations"].values():
        names |= set(entry.get("env", {})) | set((entry.get("grid") or {}).get("env", {}))
    for levels in config.get("factors", {}).values():
        for level in levels.values():
            names |= set((level or {}).get("env") or {})
    return frozenset(names)


def is_default(name: str) -> bool:
    return name in DEFAULT_NAMES or name in SCHEDULER_NAMES or name in MULTICAST_OFF or _matches(name, DEFAULT_PATTERNS)


def check_multicast_off(
    configurations: Iterable[Configuration], inherited: Mapping[str, str], pass_through: Sequence[str] = ()
) -> None:
    """Refuse a configuration whose engine environment lacks, or changes, a ``MULTICAST_OFF`` variable that is
    set where the sweep runs (a null in an env or a factor level unsets it; a value replaces it)."""
    wanted = {name: inherited[name] for name in MULTICAST_OFF if name in inherited}
    for configuration in configurations:
        built = engine_environment(inherited, configuration.env, configuration.unset_env, pass_through)
        for name, value in wanted.items():
            if built.values.get(name) != value:
                how = "unsets it (null)" if name in configuration.unset_env else f"sets {name}={built.values[name]}"
                raise ConfigError(
                    f"configurations/{configuration.group or configuration.name}: configuration "
                    f"{configuration.name} {how}, but {name}={value} is set where the sweep runs: NVLink "
                    f"multicast must stay off on this host (it can put its shared GPUs out of service); remove "
                    f"{name} from that configuration's env (engine, entry, grid or factor level)"
                )


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def engine_environment(
    inherited: Mapping[str, str],
    config_values: Mapping[str, str],
    unset: Iterable[str],
    pass_through: Sequence[str] = (),
) -> EngineEnvironment:
    """The engine's environment from the caller's (``inherited``) and the configuration's variables."""
    values: dict[str, str] = {}
    origins: dict[str, str] = {}
    for name, value in inherited.items():
        if is_default(name):
            values[name], origins[name] = value, DEFAULT
        elif _matches(name, pass_through):
            values[name], origins[name] = value, PASS_THROUGH
    for name, value in config_values.items():
        values[name], origins[name] = value, CONFIG
    for name in unset:
        values.pop(name, None)
        origins.pop(name, None)
    return EngineEnvironment(values=dict(sorted(values.items())), origins=dict(sorted(origins.items())))


def swept_variables(configurations: Iterable[Configuration]) -> dict[str, list[str]]:
    """Variable -> the configurations that set it or unset it (null), for every variable of the sweep."""
    found: dict[str, list[str]] = {}
    for configuration in configurations:
        for name in [*configuration.env, *configuration.unset_env]:
            found.setdefault(name, []).append(configuration.name)
    return dict(sorted(found.items()))


def _shown(name: str, value: str) -> str:
    return f"{name}={REDACTED if is_secret(name) else value}"


def inherited_warnings(inherited: Mapping[str, str], swept: Mapping[str, list[str]]) -> list[str]:
    """Before launch: one warning per inherited variable that the sweep sets or unsets somewhere."""
    return [
        f"{_shown(name, inherited[name])} is set in the calling environment and this sweep sets or unsets "
        f"{name} ({_few(swept[name])}); it does not reach the engine unless a configuration sets it "
        f"(environment.pass_through lists what is passed on)"
        for name in swept
        if name in inherited
    ]


def launch_warnings(inherited: Mapping[str, str], swept: Iterable[str], environment: EngineEnvironment) -> list[str]:
    """For one launch: what became of each inherited variable that the sweep sets or unsets somewhere."""
    warnings = []
    for name in sorted(swept):
        if name not in inherited:
            continue
        origin = environment.origins.get(name)
        fate = {
            CONFIG: "this configuration's own value is used",
            PASS_THROUGH: "it is passed through (environment.pass_through), so this launch gets it",
            DEFAULT: "it is passed on as part of the default environment",
            None: "this launch runs without it",
        }[origin]
        warnings.append(
            f"inherited {_shown(name, inherited[name])}, which this sweep sets or unsets in some configurations: {fate}"
        )
    return warnings


def _few(names: list[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
