"""The throughput rates specsweep reports, each named and defined once: every output (the console, the
tables' column descriptions, ``bench_serve.json``, the figures' axes, the docs) uses these words.

One baseline has up to four different token rates, and they differ by design: a rate per request
excludes the first token and the queueing, a rate of the server counts every request in flight, and a
window's ramp-up and drain lower its end-to-end rate below its steady one. A number is never quoted without its name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rate:
    name: str  # the words every output uses for it
    unit: str
    definition: str  # how it is computed, in a sentence

    @property
    def label(self) -> str:
        """``single-request decode rate (tok/s)``: an axis label, a column's first words."""
        return f"{self.name} ({self.unit})"

    def quote(self, value: float, digits: int = 1) -> str:
        """``37.6 tok/s single-request decode rate``: a number with its name."""
        return f"{value:.{digits}f} {self.unit} {self.name}"

    @property
    def described(self) -> str:
        """``single-request decode rate (tok/s): <definition>``."""
        return f"{self.label}: {self.definition}"


SINGLE_REQUEST_DECODE = Rate(
    "single-request decode rate",
    "tok/s",
    "decode tokens / decode time of requests sent one at a time to an idle server, as the client saw them "
    "(the first token is excluded: it is TTFT's); summary.csv's decode_tok_s_*, runs.csv's decode_tok_s",
)
PER_REQUEST_DECODE = Rate(
    "per-request decode rate under load",
    "tok/s",
    "1 / TPOT = (tokens - 1) / (E2EL - TTFT) of each request of a load window's steady interval, mean over "
    "them; load.csv's decode_tok_s_mean",
)
STEADY_OUTPUT = Rate(
    "steady output rate",
    "tok/s",
    "tokens of every request in flight that arrived within a load window's steady interval / its length, "
    "mean over windows; load.csv's output_tok_s_*",
)
END_TO_END_OUTPUT = Rate(
    "end-to-end output rate",
    "tok/s",
    "every output token of a load window / its first send to its last end (ramp-up and drain included); "
    "bench_serve.json's output_throughput (vLLM's definition) over the windows pooled",
)

RATES = (SINGLE_REQUEST_DECODE, PER_REQUEST_DECODE, STEADY_OUTPUT, END_TO_END_OUTPUT)
