"""llama.cpp ``llama-server`` (the embedded engine).

Formats checked against llama.cpp b11434 (tools/server/server-context.cpp, server-task.cpp):
``/health`` 503 while loading then 200; streamed ``/completion`` events carry ``content`` and,
with ``return_tokens``, the generated token ids; the final event has ``timings`` with
``predicted_n``/``predicted_ms``/``predicted_per_second`` and, when anything was drafted,
``draft_n``/``draft_n_accepted``. ``/slots`` says whether speculation is active.
"""

from __future__ import annotations

from typing import Any, ClassVar, TextIO

from specsweep.engines import llamacpp_build, openai
from specsweep.engines.base import Engine, GenerationRequest, check_loaded_model, render_flags
from specsweep.record.configuration import Configuration
from specsweep.record.errors import ConfigError
from specsweep.record.speculation import SpeculationCounts, count


class LlamaCpp(Engine):
    kind: ClassVar[str] = "llamacpp"
    counters: ClassVar[tuple[str, ...]] = openai.LLAMACPP_COUNTERS
    slot_flags: ClassVar[tuple[str, ...]] = ("-np", "--parallel")  # unset: auto, read from /props after launch
    # llama.cpp common/arg.cpp (b11434): every way to name the model, the address or the port. The LLAMA_ARG_*
    # variables lose to the argv the adapter writes, but would still contradict it in launch.json.
    owned_flags: ClassVar[dict[str, str]] = {
        **dict.fromkeys(
            (
                "-m",
                "--model",
                "-mu",
                "--model-url",
                "-dr",
                "--docker-repo",
                "-hf",
                "-hfr",
                "--hf-repo",
                "-hff",
                "--hf-file",
                "LLAMA_ARG_MODEL",
                "LLAMA_ARG_MODEL_URL",
                "LLAMA_ARG_HF_REPO",
                "LLAMA_ARG_DOCKER_REPO",
            ),
            "model",
        ),
        **dict.fromkeys(("--host", "LLAMA_ARG_HOST"), "host"),
        **dict.fromkeys(("--port", "LLAMA_ARG_PORT"), "port"),
        **dict.fromkeys(("--api-key", "--api-key-file", "LLAMA_API_KEY"), "api_key_env"),
    }
    log_format: ClassVar[str] = "llamacpp"
    opens_local_models: ClassVar[bool] = True
    # /slots "speculative" of the server this adapter checked (check_started): a run without draft_n drafted 0.
    speculative: bool = False

    @classmethod
    def check_settings(cls, name: str, settings: dict[str, Any]) -> None:
        super().check_settings(name, settings)
        if "llamacpp" not in settings and "executable" not in settings:
            raise ConfigError(
                f"engines/{name}: kind llamacpp needs a 'llamacpp: source:' pin (to build "
                f"llama-server) or an 'executable:' path (to use one you have)"
            )

    @classmethod
    def planned_executable(cls, settings: dict[str, Any]) -> str | None:
        return llamacpp_build.server_binary(settings).path

    @classmethod
    def engine_record(cls, name: str, settings: dict[str, Any], progress: TextIO) -> dict[str, Any]:
        return llamacpp_build.engine_record(name, settings, progress)

    def command(self, configuration: Configuration, host: str, port: int) -> list[str]:
        if not self.resources.executable or not self.resources.model:
            raise ValueError("llama-server needs its executable and model; run the engine and model rules first")
        argv = [self.resources.executable, "-m", self.resources.model, "--host", host, "--port", str(port)]
        return argv + render_flags(configuration.args, self.placeholders())

    def check_started(self, base_url: str, configuration: Configuration) -> dict[str, Any]:
        answers = {path: self.http.get(base_url + path, timeout=5) for path in ("/props", "/slots")}
        if refused := [path for path, answer in answers.items() if answer.status_code == 401]:
            # tools/server/server-http.cpp: with an API key, every path but /health answers 401 without it
            raise RuntimeError(
                f"configuration {configuration.name}: the server requires an API key ({refused[0]} "
                f"answered 401); set engines/{configuration.engine}/api_key_env to the environment "
                f"variable that holds it" + (" (the key sent was refused)" if self.api_key() else "")
            )
        props, wanted = answers["/props"].json(), expects_speculation(configuration.args)
        slots = answers["/slots"].json() if answers["/slots"].status_code == 200 else None
        warning = None
        if not isinstance(slots, list):
            # --no-slots: /slots answers 501 {"error": ...} (tools/server/server-context.cpp), so whether
            # speculation is active cannot be checked; the runs' draft_n still says what was drafted.
            warning = (
                f"/slots answered {answers['/slots'].status_code} (--no-slots?): whether speculation is active "
                "was not checked" + ("; the runs' draft counts say what was drafted" if wanted else "")
            )
            speculative = self.speculative = wanted
        else:
            speculative = self.speculative = bool(slots and slots[0].get("speculative"))
        if wanted and not speculative:
            # llama-server keeps serving without speculation after a bad flag combination
            # (e.g. --spec-type draft-simple without -md): measuring that would be a lie.
            raise RuntimeError(
                f"configuration {configuration.name}: --spec-type {configuration.args.get('--spec-type')} was "
                f"asked for but /slots says speculation is off; check the server log for the reason "
                f"(draft-simple needs -md DRAFT.gguf)"
            )
        loaded = check_loaded_model(props.get("model_path"), self.resources.model, configuration, "/props model_path")
        return {
            "version": props.get("build_info"),
            "speculative": speculative,
            "model_path": loaded,
            "total_slots": props.get("total_slots"),
            **({"warning": warning} if warning else {}),
        }

    def launch_env(self) -> dict[str, str]:
        key = self.api_key()  # common/arg.cpp: --api-key reads LLAMA_API_KEY
        return {"LLAMA_API_KEY": key} if key else {}

    chat_template_route: ClassVar[str] = "/apply-template"

    def apply_chat_template(self, base_url: str, text: str) -> str:
        # POST /apply-template (tools/server/README.md): the model's template, rendered by the server itself
        response = self.http.post(
            base_url + "/apply-template", json={"messages": [{"role": "user", "content": text}]}, timeout=30
        )
        response.raise_for_status()
        return str(response.json()["prompt"])

    def generation(self, request: GenerationRequest) -> tuple[str, dict[str, Any]]:
        return "/completion", {
            "prompt": request.prompt,
            "n_predict": request.max_tokens,
            "temperature": request.temperature,
            "ignore_eos": request.ignore_eos,
            "seed": request.seed,
            "stream": True,
            "cache_prompt": False,  # every run processes its prompt: runs stay independent
            "return_tokens": True,
        }

    @property
    def exact_events(self) -> bool:
        return True  # return_tokens: every event lists its tokens

    def event_tokens(self, event: dict[str, Any]) -> int:
        tokens = event.get("tokens")
        return len(tokens) if isinstance(tokens, list) else 0

    def event_text(self, event: dict[str, Any]) -> str:
        return str(event.get("content", ""))

    def engine_fields(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        final = next((e for e in reversed(events) if e.get("stop") is True), {})
        timings = final.get("timings")
        # Only well-typed values pass: a malformed final event reads as "not reported", never a crash.
        return {
            "timings": timings if isinstance(timings, dict) else {},
            "tokens_predicted": count(final.get("tokens_predicted")),
            "tokens_evaluated": count(final.get("tokens_evaluated")),
            "stop_type": final.get("stop_type"),
        }

    def tokens_generated(self, fields: dict[str, Any]) -> int | None:
        return fields.get("tokens_predicted") or count(fields.get("timings", {}).get("predicted_n"))

    def prompt_tokens(self, fields: dict[str, Any]) -> int | None:
        # /completion's final event: tokens_evaluated (the prompt tokens processed, the cache flushed first)
        return count(fields.get("tokens_evaluated"))

    @classmethod
    def window_speculation(cls, counter_delta: dict[str, float]) -> SpeculationCounts | None:
        return openai.counter_speculation(counter_delta, 0)  # the same counters as an external llama-server

    def speculation(
        self, fields: dict[str, Any], counter_delta: dict[str, float], emitted: int
    ) -> SpeculationCounts | None:
        # The same timings and counters as an external llama-server: one reading of them (openai.py).
        counts = openai.merge(
            openai.response_speculation(fields, emitted), openai.counter_speculation(counter_delta, emitted)
        )
        if counts is None and self.speculative:  # timings carry draft_n only when something was drafted
            return SpeculationCounts(drafted=0, accepted=0, emitted=emitted, source="response timings (no draft_n)")
        return counts


def expects_speculation(args: dict[str, Any]) -> bool:
    spec_type = args.get("--spec-type")
    return bool(spec_type) and str(spec_type) != "none"
