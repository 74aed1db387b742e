"""ShareGPT-format conversations as prompts, read as ``vllm bench serve --dataset-name sharegpt`` reads them
(vllm/benchmarks/datasets.py ``ShareGPTDataset``: entries with a ``conversations`` list of at least two
turns; the first turn's ``value`` is the prompt, the second's the reply whose length bounds the output).

specsweep loads no tokenizer, so the reply's length in tokens is estimated at four characters a token (the
usual figure for English BPE vocabularies); an entry's own ``max_tokens`` wins over the estimate.
"""

from __future__ import annotations

from typing import Any

from specsweep.record.results import UNCATEGORISED

CONVERSATIONS = "conversations"
CHARS_PER_TOKEN = 4
HUMAN, ASSISTANT = ("human", "user"), ("gpt", "assistant", "chatgpt", "bard", "bing")


def is_sharegpt(entry: Any) -> bool:
    return isinstance(entry, dict) and CONVERSATIONS in entry


def prompt_of(entry: dict[str, Any]) -> tuple[str, str, int | None] | None:
    """(prompt, category, max_tokens) of one entry, or None when it has no human turn followed by a reply
    (vLLM leaves such entries out too)."""
    turns = entry.get(CONVERSATIONS)
    if not isinstance(turns, list) or len(turns) < 2 or not all(isinstance(t, dict) for t in turns):
        return None
    first, reply = turns[0], turns[1]
    text = first.get("value")
    if first.get("from") not in HUMAN or not isinstance(text, str) or not text.strip():
        return None
    category = entry.get("category")
    category = category.strip() if isinstance(category, str) and category.strip() else UNCATEGORISED
    own = entry.get("max_tokens")
    if isinstance(own, int) and not isinstance(own, bool) and own > 0:
        return text, category, own
    answer = reply.get("value") if reply.get("from") in ASSISTANT else None
    estimate = -(-len(answer) // CHARS_PER_TOKEN) if isinstance(answer, str) and answer else None
    return text, category, estimate
