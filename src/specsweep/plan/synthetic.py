"""Synthetic prompts with seeded input and output lengths, as ``vllm bench serve --dataset-name random``
(``--random-input-len``/``--random-output-len``/``--random-range-ratio``), AIPerf's ``--synthetic-input-tokens-mean``/
``-stddev`` and GuideLLM's ``--data prompt_tokens=...`` generate them, from a JSON document::

    {"synthetic": {"seed": 1, "prompts": 64,
                   "input_tokens": {"distribution": "uniform", "min": 100, "max": 300},
                   "output_tokens": {"distribution": "normal", "mean": 128, "std": 32}}}

Distributions: ``fixed`` (``value``), ``uniform`` (``min``, ``max``, inclusive), ``normal`` (``mean``,
``std``; rounded, at least 1), ``values`` (drawn from a list, e.g. the lengths of a trace or of another
tool's dataset). specsweep loads no tokenizer: a prompt of n input tokens is n words drawn from
a list of common English words, each one token in the usual BPE vocabularies (the engine's own prompt count
is what the exports report). The output length is the prompt's ``max_tokens``; set ``benchmark.ignore_eos``
for the server to generate all of them. The same document gives the same prompts on every machine, so the
archive keeps the document, not the prompts.
"""

from __future__ import annotations

import random
from typing import Any

SYNTHETIC = "synthetic"
CATEGORY = "synthetic"
MAX_PROMPTS = 100_000
# Short common words: each is a single token (with its leading space) in GPT-2, Llama and Qwen vocabularies.
_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her she there been one all we their has would when if so no will more can out up some time into "
    "about than them only other new could these two may first then do any like my now over such our man me even "
    "most made after also did many before must through back years where much your way well down should because "
    "each just those people how too little state good very make world still own see men work long get here "
    "between both life being under never day same another know while last might us great old year off come "
    "since against go came right used take three"
)
WORDS = _WORDS.split()
SHAPES = {"fixed": ("value",), "uniform": ("min", "max"), "normal": ("mean", "std"), "values": ("values",)}


class SyntheticError(ValueError):
    """A synthetic document that cannot be generated; the message names the key and the fix."""


def lengths(spec: Any, key: str, count: int, rng: random.Random) -> list[int]:
    """``count`` lengths from ``spec`` (one of SHAPES), each at least 1."""
    if not isinstance(spec, dict) or spec.get("distribution") not in SHAPES:
        raise SyntheticError(
            f"synthetic.{key}: give {{'distribution': one of {', '.join(SHAPES)}, ...}}, e.g. "
            f"{{'distribution': 'uniform', 'min': 100, 'max': 300}}"
        )
    shape = spec["distribution"]
    wanted = SHAPES[shape]
    if shape == "values":
        values = spec.get("values")
        if set(spec) != {"distribution", "values"} or not isinstance(values, list) or not values:
            raise SyntheticError(f"synthetic.{key}: a values distribution takes exactly values (a non-empty list)")
        if not all(_number(v) and v >= 1 for v in values):
            raise SyntheticError(f"synthetic.{key}: every one of values must be a number of at least 1")
        return [round(v) for v in rng.choices(values, k=count)]
    if set(spec) != {"distribution", *wanted} or not all(_number(spec[k]) for k in wanted):
        raise SyntheticError(f"synthetic.{key}: a {shape} distribution takes exactly {', '.join(wanted)} (numbers)")
    if shape == "fixed":
        return [max(1, round(spec["value"]))] * count
    if shape == "uniform":
        low, high = round(spec["min"]), round(spec["max"])
        if not 1 <= low <= high:
            raise SyntheticError(f"synthetic.{key}: uniform needs 1 <= min <= max (got {low}, {high})")
        return [rng.randint(low, high) for _ in range(count)]
    if spec["mean"] < 1 or spec["std"] < 0:
        raise SyntheticError(f"synthetic.{key}: normal needs mean >= 1 and std >= 0")
    return [max(1, round(rng.gauss(spec["mean"], spec["std"]))) for _ in range(count)]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def generate(spec: Any) -> list[tuple[str, int]]:
    """(prompt, output tokens) for each synthetic prompt of ``spec`` (the ``synthetic`` object)."""
    allowed = {"seed", "prompts", "input_tokens", "output_tokens"}
    if not isinstance(spec, dict) or not {"prompts", "input_tokens", "output_tokens"} <= set(spec) <= allowed:
        raise SyntheticError("synthetic: an object with prompts, input_tokens, output_tokens and optional seed")
    count, seed = spec["prompts"], spec.get("seed", 0)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PROMPTS:
        raise SyntheticError(f"synthetic.prompts: an integer from 1 to {MAX_PROMPTS}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise SyntheticError("synthetic.seed: an integer")
    rng = random.Random(seed)  # one stream: the inputs first, then the outputs, then the words
    inputs = lengths(spec["input_tokens"], "input_tokens", count, rng)
    outputs = lengths(spec["output_tokens"], "output_tokens", count, rng)
    return [(" ".join(rng.choices(WORDS, k=n)), out) for n, out in zip(inputs, outputs, strict=True)]
