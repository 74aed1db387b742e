"""A run counts only when its client decode rate is defined and agrees with the engine's own."""

from dataclasses import replace

from specsweep.measure.rate_check import exclusion_reason, kept_and_excluded
from specsweep.record.results import ClientTimings, Run


def run(client: float, engine: float | None = None, tokens: int = 100, excluded: str | None = None) -> Run:
    timings = ClientTimings(0.01, 1.0, 1.0, client, 0.01, 0.01, tokens)
    fields = {} if engine is None else {"timings": {"predicted_per_second": engine}}
    return Run(
        run=0,
        prompt_index=0,
        tokens=tokens,
        client=timings,
        engine=fields,
        speculation=None,
        text_sha256="t",
        excluded=excluded,
    )


def test_agreeing_rates_count_and_a_paused_client_does_not():
    assert exclusion_reason(run(55.5, 55.7), 10) is None
    reason = exclusion_reason(run(4.3, 55.7), 10)  # the Ctrl-Z / fg run
    assert reason.startswith("the client measured 4.3 tok/s but the engine 55.7 tok/s (92 % apart")
    assert exclusion_reason(run(70.0, 55.7), 10) is not None  # a burst after a pause: too fast is wrong too


def test_no_engine_rate_means_no_comparison_but_an_undefined_client_rate_never_counts():
    assert exclusion_reason(run(55.0), 10) is None  # SGLang, vLLM: the engine reports no per-request rate
    assert "could not be timed" in exclusion_reason(run(float("nan"), 55.0, tokens=1), 10)


def test_excluded_runs_are_split_off_and_the_reason_survives_the_json_form():
    paused = run(4.3, 55.7, excluded="paused")
    kept, excluded = kept_and_excluded([run(55.0), paused])
    assert len(kept) == 1 and excluded == [paused]
    assert Run.from_json(paused.to_json()).excluded == "paused"


def test_a_configuration_whose_every_run_is_excluded_says_so_not_missing():
    from specsweep.analyse.aggregate import summarise
    from specsweep.plan.config import Configuration

    base = Configuration(name="base", engine="e", kind="llamacpp", baseline=True, args={}, env={})
    other = Configuration(name="other", engine="e", kind="llamacpp", baseline=False, args={"--x": 1}, env={})
    runs = {"base": [run(50.0 + i, 50.0 + i) for i in range(3)], "other": [run(4.0, 55.0, excluded="paused")] * 3}
    frame = summarise({"base": base, "other": other}, runs, {}).set_index("configuration")
    assert frame.loc["other", "status"] == "excluded" and frame.loc["other", "runs_excluded"] == 3
    assert frame.loc["other", "runs"] == 0 and frame.loc["base", "status"] == "ok"


def test_runs_csv_lists_every_run_and_says_which_are_excluded():
    from specsweep.analyse.runs_table import runs_table

    table = runs_table({"a": [run(50.0, 50.0), run(4.0, 55.0, excluded="paused")]})
    assert len(table) == 2 and list(table["excluded"].notna()) == [False, True] and table["excluded"][1] == "paused"


def test_a_run_whose_count_its_stream_does_not_carry_never_counts():
    # issue 35 item 6: llama-server events list their tokens; 4 streamed while the final event claims 16
    claimed = replace(run(55.5, 55.7, tokens=16), streamed_tokens=4, arrivals_us=[1000] * 4, exact_events=True)
    assert exclusion_reason(claimed, 10) == "the engine reports 16 tokens but its stream carried 4"
    assert Run.from_json(claimed.to_json()).flagged == claimed.flagged
    # an OpenAI chunk says only that it carries text: 16 tokens in 4 chunks is a speculative burst
    assert exclusion_reason(replace(claimed, exact_events=False), 10) is None
