"""One measured request: a single-request run (its counters scraped around it, its tokens checked against the
engine's count) or a window of requests at a load level, each recorded as the engine made it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from specsweep.engines.base import Engine, GenerationRequest
from specsweep.measure.client import StreamedResponse, stream_post, timings_from_arrivals
from specsweep.measure.load import run_window, steady_interval
from specsweep.plan.load_levels import CONCURRENCY, LoadLevel, arrivals_of, window_seed
from specsweep.plan.workload import Prompt
from specsweep.record.arrivals import encode_arrivals
from specsweep.record.cache import sha256_bytes
from specsweep.record.clock import now_iso
from specsweep.record.results import Run, Window, WindowRequest
from specsweep.record.speculation import usable_speculation


class RunError(RuntimeError):
    """A request the engine answered wrongly (no final report, another token count, too few slots)."""


def generate(engine: Engine, base_url: str, prompt: str, max_tokens: int, benchmark: dict[str, Any]):
    path, payload = engine.generation(
        GenerationRequest(
            prompt=prompt,
            max_tokens=max_tokens,
            temperature=benchmark["temperature"],
            ignore_eos=benchmark["ignore_eos"],
            seed=benchmark["seed"],
        )
    )
    timeouts = float(benchmark["request_timeout_s"]), engine.auth_headers(), benchmark.get("run_timeout_s")
    return stream_post(base_url, path, payload, *timeouts)


def measured_run(engine: Engine, base_url: str, prompts: list[Prompt], index: int, benchmark: dict[str, Any]) -> Run:
    prompt = prompts[index % len(prompts)]
    max_tokens = prompt.tokens_wanted(benchmark["max_tokens"])
    engine.flush_cache(base_url)
    before = engine.scrape_counters(base_url)
    started_at = now_iso()
    response = generate(engine, base_url, prompt.text, max_tokens, benchmark)
    after = engine.scrape_counters(base_url)
    delta = {k: after[k] - before.get(k, 0.0) for k in after}
    # Deltas of counters printed with 6 significant digits are quantised: kept on record, never used.
    quantised = sorted(engine.quantised & set(delta))
    usable = {k: v for k, v in delta.items() if k not in quantised}
    fields, tokens, per_event = checked_response(engine, response, max_tokens, f"run {index}")
    streamed = sum(per_event)
    arrivals = [t for n, t in zip(per_event, response.arrivals_s, strict=True) if n]
    timings = timings_from_arrivals(arrivals, tokens, response.total_s)
    text = engine.response_text(response.events)
    spec, refused = usable_speculation(engine.speculation(fields, usable, tokens))
    return Run(
        run=index,
        prompt_index=index % len(prompts),
        category=prompt.category,
        started_at=started_at,
        tokens=tokens,
        streamed_tokens=streamed,
        client=timings,
        engine=fields,
        counter_delta=delta,
        counters_quantised=quantised,
        speculation=spec,
        speculation_refused=refused,
        text_sha256=sha256_bytes(text),
        text_chars=len(text),
        malformed_events=response.malformed,
        arrivals_us=encode_arrivals(arrivals),
        exact_events=engine.exact_events,
    )


def checked_response(
    engine: Engine, response: StreamedResponse, max_tokens: int, label: str
) -> tuple[dict[str, Any], int, list[int]]:
    """The engine's own report of a finished request, its token count and tokens per event; raise
    when the stream ended without the report or generated a different number of tokens."""
    fields = engine.engine_fields(response.events)
    tokens = engine.tokens_generated(fields)
    per_event = engine.tokens_per_event(response.events)
    if tokens is None:
        raise RunError(
            f"{label}: the stream ended after {len(response.events)} events without the engine's "
            f"final report (the server closed the connection early?)"
        )
    if tokens != max_tokens:
        raise RunError(
            f"{label}: the engine generated {tokens} tokens, not the {max_tokens} asked for (benchmark.max_tokens "
            f"or the prompt's max_tokens; streamed {sum(per_event)}); is ignore_eos honoured and the context (per "
            f"slot) large enough?"
        )
    return fields, tokens, per_event


def measured_window(
    engine: Engine,
    benchmark: dict[str, Any],
    prompts: list[Prompt],
    base_url: str,
    level: LoadLevel,
    window: int,
    ended: Callable[[], None],
    warmup: bool = False,
) -> Window:
    """One window of requests at ``level``. Request i of window w uses prompt (w * requests + i) mod n:
    the same prompts, in the same order, for every configuration. ``ended()`` is called as each request ends."""
    load = benchmark["load"]
    requests = int(load["requests_per_window"])

    def send(index: int) -> WindowRequest:
        prompt_index = (window * requests + index) % len(prompts)
        prompt = prompts[prompt_index]
        max_tokens = prompt.tokens_wanted(benchmark["max_tokens"])
        response = generate(engine, base_url, prompt.text, max_tokens, benchmark)
        fields, tokens, per_event = checked_response(
            engine, response, max_tokens, f"{level.label} window {window} request {index}"
        )
        arrivals = [t for n, t in zip(per_event, response.arrivals_s, strict=True) if n]
        # per request: the response's own counts only; impossible ones are not kept (the window's counter
        # deltas, refused the same way by the load tables, still count the request's drafts)
        spec, _impossible = usable_speculation(engine.speculation(fields, {}, tokens))
        ended()
        return WindowRequest(
            index=index,
            sent_s=0.0,  # set by the window, which knows when it sent the request
            prompt_index=prompt_index,
            category=prompt.category,
            tokens=tokens,
            e2e_s=response.total_s,
            arrivals_us=encode_arrivals(arrivals),
            event_tokens=[n for n in per_event if n],
            prompt_tokens=engine.prompt_tokens(fields),
            text_sha256=sha256_bytes(engine.response_text(response.events)),
            engine_decode_tok_s=(fields.get("timings") or {}).get("predicted_per_second"),
            drafted=spec.drafted if spec else None,
            accepted=spec.accepted if spec else None,
            malformed_events=response.malformed,
            exact_events=engine.exact_events,
        )

    engine.flush_cache(base_url)
    before = engine.scrape_counters(base_url)
    started_at = now_iso()
    arrivals = arrivals_of(benchmark)
    sent, duration = run_window(level, requests, send, window_seed(int(load["seed"]), window), arrivals)
    after = engine.scrape_counters(base_url)
    recorded = [replace(s.result, sent_s=s.sent_s) for s in sent]
    # each request's end as its record says (its last token), not when its thread got back: the record
    # alone then gives the interval, and a loaded client's lag does not move it
    steady_start, steady_end = steady_interval(level, [r.sent_s for r in recorded], [r.ended_s for r in recorded])
    return Window(
        level=level.as_dict(),
        window=-1 if warmup else window,
        started_at=started_at,
        duration_s=duration,
        requests=recorded,
        # window totals: per request they cannot be told apart while requests overlap
        counter_delta={k: after[k] - before.get(k, 0.0) for k in after},
        steady_start_s=steady_start,
        steady_end_s=steady_end,
        warmup=warmup,
        arrivals=arrivals.as_dict() if level.kind != CONCURRENCY else None,
    )
