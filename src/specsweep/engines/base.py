"""The interface every engine adapter implements, and what the rest of specsweep relies on."""

from __future__ import annotations

import abc
import contextlib
import math
import os
from dataclasses import dataclass
from typing import Any, ClassVar, TextIO

import requests
from prometheus_client.parser import text_string_to_metric_families

from specsweep.record.configuration import Configuration
from specsweep.record.errors import ConfigError
from specsweep.record.speculation import SpeculationCounts


@dataclass(frozen=True)
class EngineResources:
    """Files the pipeline obtained for an engine: its executable (if built) and model files."""

    executable: str | None = None
    model: str | None = None
    draft_model: str | None = None


@dataclass(frozen=True)
class GenerationRequest:
    prompt: str
    max_tokens: int
    temperature: float
    ignore_eos: bool
    seed: int


class Engine(abc.ABC):
    kind: ClassVar[str]
    health_path: ClassVar[str] = "/health"
    # Prometheus counters whose before/after difference is recorded for each run.
    counters: ClassVar[tuple[str, ...]] = ()
    # False for an endpoint someone else runs: no launch, no teardown, no server log of ours.
    launches: ClassVar[bool] = True
    # Port written into results/commands.sh when the config says 0 (pick a free one at launch).
    default_port: ClassVar[int] = 8080
    default_launcher: ClassVar[tuple[str, ...]] = ()
    health_timeout_s: ClassVar[float] = 2.0
    # Flags (and environment variables) the adapter sets itself, each with the engines/<name>/<key> that says
    # what to set: given again in args, the engine would take the later one (a second --host bypasses the
    # exposure warning, a -m serves another model than provenance records, a --port is never ready).
    owned_flags: ClassVar[dict[str, str]] = {}
    # Python engines parse flags with argparse, which also accepts any unambiguous prefix (--hos for --host).
    flag_prefixes_accepted: ClassVar[bool] = False
    # The server log's format: a parser module's LOG_FORMAT name (parsers/), or "none" (lines counted only).
    log_format: ClassVar[str] = "none"
    # Python packages provenance records when they are installed here: the engine's own and what it runs on.
    packages: ClassVar[tuple[str, ...]] = ()
    # False for an endpoint someone else serves: its engines entry names no model.
    needs_model: ClassVar[bool] = True
    # True when the server opens its model files on this machine, so they must exist before anything starts.
    opens_local_models: ClassVar[bool] = False
    # True when the server takes a hub model id for a model and resolves it itself (models/<name>/hub).
    resolves_model_ids: ClassVar[bool] = False

    def __init__(self, settings: dict[str, Any], resources: EngineResources) -> None:
        self.settings = settings
        self.resources = resources
        # Every request of the job (readiness probe included) goes through this session, with the API key as
        # an Authorization header when engines/<name>/api_key_env names one: read here, never written anywhere.
        self.http = requests.Session()
        # Counters seen printed with 6 significant digits past 10^6 (quantised_counters): their deltas are not used.
        self.quantised: set[str] = set()
        if self.api_key() is not None:
            self.http.headers["Authorization"] = f"Bearer {self.api_key()}"

    def api_key(self) -> str | None:
        """The API key the server requires, from the environment variable engines/<name>/api_key_env names."""
        name = self.settings.get("api_key_env")
        return os.environ.get(name) if name else None

    def auth_headers(self) -> dict[str, str]:
        """The Authorization header for requests made outside ``http`` (the measured stream), if any."""
        return {k: v for k, v in self.http.headers.items() if k == "Authorization"}

    def check_api_key(self, engine: str) -> None:
        """Before a session: a named variable must be set (else every request would be refused, 401)."""
        name = self.settings.get("api_key_env")
        if name and not os.environ.get(name):
            raise ConfigError(
                f"engines/{engine}/api_key_env: the environment variable {name} is not set (or empty) "
                f"where the session runs; export it, e.g. `export {name}=...`, before snakemake"
            )

    def launch_env(self) -> dict[str, str]:
        """Environment variables the adapter sets for the server it launches (the API key, where the engine
        reads it from one: never on its command line)."""
        return {}

    @classmethod
    def check_settings(cls, name: str, settings: dict[str, Any]) -> None:
        """Its ``engines`` entry beyond the schema (``preflight``): raise ``ConfigError`` naming the key and fix."""
        if cls.needs_model and settings.get("model") is None:
            raise ConfigError(f"engines/{name}: no 'model'; name an entry of 'models'")

    @classmethod
    def log_format_of(cls, settings: dict[str, Any]) -> str:
        """The format of this engine's server log (``settings`` are its ``engines`` entry)."""
        return cls.log_format

    @classmethod
    def planned_executable(cls, settings: dict[str, Any]) -> str | None:
        """Where the server binary the engine rule provides will be, for the plan; None when the engine
        is started from an installed package (its launcher) or not started at all."""
        return None

    @classmethod
    def engine_record(cls, name: str, settings: dict[str, Any], progress: TextIO) -> dict[str, Any]:
        """The engine rule's record (results/engine/<name>.json): the executable it provides, if any."""
        return {"kind": cls.kind, "executable": None}

    def base_url(self, host: str, port: int) -> str:
        return f"http://{host}:{port}"

    @classmethod
    def check_configuration(cls, configuration: Configuration) -> list[str]:
        """Domain checks before launch: return warnings; raise ``ConfigError`` only when impossible."""
        return []

    @classmethod
    def create(cls, settings: dict[str, Any], resources: EngineResources) -> Engine:
        """The adapter for an ``engines`` entry of this kind (an external endpoint may declare another engine)."""
        return cls(settings, resources)

    @classmethod
    def check_owned_flags(cls, configuration: Configuration) -> None:
        """Refuse a flag or env variable of ``owned_flags`` in a configuration (naming the key to use instead)."""
        for given in [*configuration.args, *configuration.env]:
            owned = [
                f
                for f in cls.owned_flags
                if f == given
                or (cls.flag_prefixes_accepted and given.startswith("--") and len(given) > 3 and f.startswith(given))
            ]
            if owned:
                key = cls.owned_flags[owned[0]]
                where = "env" if given in configuration.env else "args"
                raise ConfigError(
                    f"configurations/{configuration.group or configuration.name}: {where} sets {given}, which the "
                    f"{cls.kind} adapter sets itself from engines/{configuration.engine}/{key}; remove it from "
                    f"{where} (of the configuration or of engines/{configuration.engine}) and set "
                    f"engines/{configuration.engine}/{key} instead"
                )

    # Flags that set how many requests the engine serves at once (first found wins).
    slot_flags: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def slots(cls, configuration: Configuration) -> tuple[str, int] | None:
        """The flag that sets how many requests the configuration serves at once, and its value
        (None: not set, the engine decides)."""
        for flag in cls.slot_flags:
            value = configuration.args.get(flag)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return flag, value
            if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
                return flag, int(value)
        return None

    # How benchmark.chat_template is rendered (launch.json chat_template.rendered_by); None: not supported.
    chat_template_route: ClassVar[str | None] = None

    def apply_chat_template(self, base_url: str, text: str) -> str:
        """``text`` as one user turn in the served model's chat template (engines that can say override)."""
        raise NotImplementedError(
            f"benchmark.chat_template is not supported for engine kind {self.kind}; set it to false"
        )

    @abc.abstractmethod
    def command(self, configuration: Configuration, host: str, port: int) -> list[str]:
        """argv of the server (no shell ever sees it)."""

    def placeholders(self) -> dict[str, str]:
        """What ``{model}`` and ``{draft_model}`` in a flag value stand for."""
        return {"model": self.resources.model or "", "draft_model": self.resources.draft_model or ""}

    def launcher(self) -> list[str]:
        """argv prefix that starts a Python-packaged engine (``engines/<name>/launcher`` overrides)."""
        return list(self.settings.get("launcher") or self.default_launcher)

    def is_ready(self, base_url: str) -> bool:
        try:
            return self.http.get(base_url + self.health_path, timeout=self.health_timeout_s).status_code == 200
        except requests.RequestException:
            return False

    def check_started(self, base_url: str, configuration: Configuration) -> dict[str, Any]:
        """After readiness: check the server really runs this configuration; return facts about it."""
        return {}

    @abc.abstractmethod
    def generation(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        """Path and JSON body of one streamed generation."""

    @abc.abstractmethod
    def event_tokens(self, event: dict[str, Any]) -> int:
        """Number of generated tokens an event of the stream carries (0 for bookkeeping events)."""

    @abc.abstractmethod
    def event_text(self, event: dict[str, Any]) -> str: ...

    @property
    def exact_events(self) -> bool:
        """Whether an event says how many tokens it carries (record/tokens.py: then the stream must carry the
        engine's count exactly); an OpenAI chunk says only that it carries text."""
        return False

    def tokens_per_event(self, events: list[dict[str, Any]]) -> list[int]:
        """Generated tokens of each event; engines whose events carry running totals override this."""
        return [self.event_tokens(e) for e in events]

    def response_text(self, events: list[dict[str, Any]]) -> str:
        """The generated text; engines that stream cumulative text override this."""
        return "".join(self.event_text(e) for e in events)

    @abc.abstractmethod
    def engine_fields(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        """What the engine itself reported about the request (its own timings, counts)."""

    @abc.abstractmethod
    def tokens_generated(self, fields: dict[str, Any]) -> int | None: ...

    def prompt_tokens(self, fields: dict[str, Any]) -> int | None:
        """The prompt's tokens as the engine counted them (vLLM's total_input_tokens); None where it says not.
        OpenAI-style ``usage.prompt_tokens`` here; an engine that reports it elsewhere says where."""
        tokens = (fields.get("usage") or {}).get("prompt_tokens")
        return int(tokens) if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else None

    @abc.abstractmethod
    def speculation(
        self, fields: dict[str, Any], counter_delta: dict[str, float], emitted: int
    ) -> SpeculationCounts | None:
        """Speculation counts of one run, from the most precise source available."""

    @classmethod
    def window_speculation(cls, counter_delta: dict[str, float]) -> SpeculationCounts | None:
        """Speculation counts of a load window from its counters' totals over the window's requests
        (analyse/loadsummary.py); None where this engine's counters do not say them."""
        return None

    def flush_cache(self, base_url: str) -> None:  # noqa: B027 (optional hook)
        """Make runs independent (default: nothing to flush; requests disable caching)."""

    def scrape_counters(self, base_url: str) -> dict[str, float]:
        if not self.counters:
            return {}
        try:
            response = self.http.get(base_url + "/metrics", timeout=5)
        except requests.RequestException:
            return {}
        if response.status_code != 200:  # e.g. llama-server without --metrics answers 501
            return {}
        self.quantised |= quantised_counters(response.text, self.counters)
        # never raises, even on non-Prometheus text
        return {**scan_prometheus(response.text, self.counters)[0], **self.more_counters(response.text)}

    def more_counters(self, metrics: str) -> dict[str, float]:
        """Counters of the same /metrics text beyond the summed ``counters`` (vLLM's per draft position)."""
        return {}


def check_loaded_model(loaded: Any, configured: str | None, configuration: Configuration, source: str) -> str:
    """What the server says it loaded must be the configured model (paths compared once resolved); returns it.
    A server that does not say (an old version) is not refused: provenance then records None."""
    if loaded is None or configured is None:
        return loaded
    same = str(loaded) == configured or os.path.realpath(str(loaded)) == os.path.realpath(configured)
    if not same:
        raise RuntimeError(
            f"configuration {configuration.name}: the server loaded {loaded!r} ({source}), not the "
            f"configured model {configured!r} (engines/{configuration.engine}/model); results would "
            f"be recorded under the wrong model, so the session stops"
        )
    return str(loaded)


def quantised_counters(text: str, names: tuple[str, ...]) -> set[str]:
    """Wanted counters printed in scientific notation at or past 10^6: llama-server writes /metrics values with a
    C++ stream's default 6 significant digits (``1.23457e+06``), so a per-run difference of such a counter is
    only good to 10 or more (150 verify steps read as 160). Python exporters (vLLM, SGLang) print full floats."""
    found = set()
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name not in names:
            continue
        after_name = line.rsplit("}", 1)[1] if "{" in line else line[len(name) :]
        with contextlib.suppress(ValueError, IndexError):
            value = after_name.split()[0]  # then an optional timestamp
            if "e" in value.lower() and abs(float(value)) >= 1e6:
                found.add(name)
    return found


def scan_prometheus(text: str, names: tuple[str, ...]) -> tuple[dict[str, float], int]:
    """Sum of every sample (all label sets) of each wanted counter, and the number of sample lines
    that could not be parsed (never raises).

    Lines are parsed one at a time: prometheus_client stops at the first bad line, and one
    garbled line must not cost the counters of a whole run.
    """
    totals: dict[str, float] = {}
    wanted = set(names)
    malformed = 0
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if not any(name in line for name in wanted):
            continue  # only the wanted counters are parsed (and can be malformed)
        try:
            samples = [s for f in text_string_to_metric_families(line + "\n") for s in f.samples]
        except Exception:  # prometheus_client raises ValueError, TypeError, IndexError... on bad input
            malformed += 1
            continue
        for sample in samples:
            # vLLM and SGLang label their counters (model_name, engine, ...): sum every label set.
            if sample.name in wanted and math.isfinite(sample.value):
                totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return totals, malformed


def render_flags(args: dict[str, Any], placeholders: dict[str, str]) -> list[str]:
    """``{"--flag": value}`` to argv: true -> bare flag, false/None -> omitted."""
    argv: list[str] = []
    for flag, value in args.items():
        if value is None or value is False:
            continue
        argv.append(flag)
        if value is not True:
            text = str(value)
            for key, replacement in placeholders.items():
                text = text.replace("{" + key + "}", replacement)
            argv.append(text)
    return argv
