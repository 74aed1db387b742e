"""The prompts a sweep sends: a text file (one prompt a line), a JSONL dataset with categories, a ShareGPT
file (JSON or JSONL, plan/sharegpt.py) or a synthetic document (JSON, plan/synthetic.py).

A JSONL line is an object ``{"prompt": str, "category": str, "max_tokens": int}``; only
``prompt`` is required (category defaults to ``uncategorised``, max_tokens to
``benchmark.max_tokens``); a line with ``conversations`` is a ShareGPT entry. Request ``i`` of a sweep
uses prompt ``i mod n``, so a set written with its categories interleaved covers every category in any
``n_categories`` consecutive requests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specsweep.plan import sharegpt, synthetic
from specsweep.plan.inputs import not_a_text_file
from specsweep.record.results import UNCATEGORISED


class WorkloadError(ValueError):
    """A dataset problem, naming the file, the line and the fix."""


@dataclass(frozen=True)
class Prompt:
    text: str
    category: str = UNCATEGORISED
    max_tokens: int | None = None  # None: benchmark.max_tokens

    def tokens_wanted(self, default: int) -> int:
        return self.max_tokens if self.max_tokens is not None else default


DATASET_SUFFIX = ".jsonl"  # in any case (.JSONL); what a file is called says how it is read
DOCUMENT_SUFFIX = ".json"  # one JSON document: a ShareGPT list or a synthetic description
HUGGING_FACE = "hf:"


def is_dataset(path: Path) -> bool:
    """Whether ``path`` is read as a JSONL dataset (else as one prompt a line)."""
    return path.suffix.lower() == DATASET_SUFFIX


def read_workload(path: Path, require_prompts: bool = True) -> list[Prompt]:
    """Every prompt of ``path`` (``.jsonl``: a dataset; ``.json``: a ShareGPT list or a synthetic
    description; anything else: one prompt a line). Lines starting with ``#`` are comments in a text file
    and a dataset."""
    if (why := not_a_text_file(path)) is not None:
        raise WorkloadError(
            f"{path}: not a UTF-8 text file: {why}; benchmark/prompts needs one prompt a line "
            f"(or one JSON object a line, .jsonl)"
        )
    if path.suffix.lower() == DOCUMENT_SUFFIX:
        prompts = _read_document(path)
    else:
        prompts = _read_jsonl(path) if is_dataset(path) else _read_lines(path)
    if require_prompts and not prompts:
        raise WorkloadError(
            f"{path}: no prompts (a text file has one prompt a line, blank lines and # comments "
            f"ignored; a .jsonl file has one object with a 'prompt' key a line)"
        )
    return prompts


# utf-8-sig: a byte-order mark (as some Windows editors write) is not part of the first prompt or JSON line.
def _read_lines(path: Path) -> list[Prompt]:
    lines = [line.strip() for line in path.read_text(encoding="utf-8-sig", errors="replace").splitlines()]
    prompts = [(number, line) for number, line in enumerate(lines, start=1) if line and not line.startswith("#")]
    if prompts and _looks_like_dataset_line(prompts[0][1]):  # a dataset would be sent as its JSON text
        raise WorkloadError(
            f"{path}: line {prompts[0][0]} is a JSON object with a 'prompt' key, but only a {DATASET_SUFFIX} "
            f"file is read as a dataset; rename it to {path.stem}{DATASET_SUFFIX} (or write one prompt a line)"
        )
    return [Prompt(line) for _, line in prompts]


def _looks_like_dataset_line(line: str) -> bool:
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    return isinstance(entry, dict) and "prompt" in entry


def _read_jsonl(path: Path) -> list[Prompt]:
    prompts = []
    for number, line in enumerate(path.read_text(encoding="utf-8-sig", errors="replace").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        where = f"{path}, line {number}"
        try:
            entry = json.loads(line)
        except ValueError as error:
            raise WorkloadError(
                f'{where}: not JSON ({error}); write one object a line, e.g. {{"prompt": "...", "category": "code"}}'
            ) from None
        if sharegpt.is_sharegpt(entry):
            prompts.extend(Prompt(*found) for found in [sharegpt.prompt_of(entry)] if found)
            continue
        if not isinstance(entry, dict):
            raise WorkloadError(f"{where}: a line must be a JSON object with a 'prompt' key")
        unknown = set(entry) - {"prompt", "category", "max_tokens"}
        if unknown:
            raise WorkloadError(
                f"{where}: unknown key(s) {', '.join(sorted(unknown))}; allowed: prompt, category, max_tokens"
            )
        text, category, max_tokens = entry.get("prompt"), entry.get("category", UNCATEGORISED), entry.get("max_tokens")
        if not isinstance(text, str) or not text.strip():
            raise WorkloadError(f"{where}: 'prompt' must be a non-empty string")
        if not isinstance(category, str) or not category.strip():
            raise WorkloadError(f"{where}: 'category' must be a non-empty string")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise WorkloadError(
                f"{where}: 'max_tokens' must be a positive integer (or left out for benchmark.max_tokens)"
            )
        prompts.append(Prompt(text, category.strip(), max_tokens))
    return prompts


def _read_document(path: Path) -> list[Prompt]:
    """A ShareGPT list or a synthetic description; a comment-only file is the archive's placeholder."""
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    if all(not line.strip() or line.startswith("#") for line in text.splitlines()):
        return []
    try:
        document = json.loads(text)
    except ValueError as error:
        raise WorkloadError(
            f"{path}: not one JSON document ({error}); a .json file is a ShareGPT list or a "
            f'{{"synthetic": ...}} description; a dataset of one JSON object a line must be named '
            f"{DATASET_SUFFIX} (rename it to {path.stem}{DATASET_SUFFIX})"
        ) from None
    if isinstance(document, dict) and synthetic.SYNTHETIC in document:
        try:
            made = synthetic.generate(document[synthetic.SYNTHETIC])
        except synthetic.SyntheticError as error:
            raise WorkloadError(f"{path}: {error}") from None
        return [Prompt(text, synthetic.CATEGORY, tokens) for text, tokens in made]
    if isinstance(document, list) and any(sharegpt.is_sharegpt(e) for e in document):
        found = (sharegpt.prompt_of(e) for e in document if sharegpt.is_sharegpt(e))
        return [Prompt(*prompt) for prompt in found if prompt]
    raise WorkloadError(
        f'{path}: a .json file must be a ShareGPT list ([{{"conversations": [{{"from": "human", ...}}]}}]) '
        f'or {{"synthetic": {{"prompts": n, "input_tokens": ..., "output_tokens": ...}}}} (docs/load.md)'
    )


def hugging_face_refusal(value: str, why: str = "") -> str | None:
    """Why ``benchmark.prompts`` naming a Hugging Face dataset (``hf:owner/name``) cannot be read here, with the
    fix: export it once where the network is (a compute node has none, and the archive must hold what was
    sent). ``why``: what went wrong (the datasets library missing, the dataset not to be had offline)."""
    if not value.startswith(HUGGING_FACE):
        return None
    name, split = _hugging_face_name(value)
    target = f"config/workloads/{name.split('/')[-1]}.jsonl"
    return (
        f"{value} names a Hugging Face dataset, which cannot be read here ({why or 'not exported yet'}); export "
        f'it once where the network is: python -c "from datasets import load_dataset; '
        f"load_dataset('{name}', split='{split}').to_json('{target}')\" (a ShareGPT-format set is read as it "
        f"is; otherwise keep a 'prompt' column) and set benchmark.prompts to that file"
    )


def hugging_face_file(value: str, folder: Path) -> Path:
    """``hf:owner/name[:split]`` (split ``train`` by default) read through the ``datasets`` library where it is
    installed (from its cache when HF_HUB_OFFLINE is set), exported once to ``folder/<owner>--<name>-<split>
    .jsonl``, which the sweep then reads and archives as any prompt file. A WorkloadError with the export
    command where the library is missing or the dataset cannot be had."""
    name, split = _hugging_face_name(value)
    path = folder / f"{name.replace('/', '--')}-{split}{DATASET_SUFFIX}"
    if path.is_file():
        return path  # exported by an earlier run: the same prompts, with no network
    try:
        import datasets  # optional: not one of specsweep's pinned packages
    except ImportError:
        raise WorkloadError(hugging_face_refusal(value, "the datasets library is not installed") or "") from None
    try:
        rows = datasets.load_dataset(name, split=split)
    except Exception as error:  # offline, unknown id, no such split: the library's own words
        raise WorkloadError(hugging_face_refusal(value, f"{type(error).__name__}: {error}") or "") from None
    columns = set(rows.column_names)
    if not columns & {"conversations", "prompt"}:
        raise WorkloadError(
            f"{value}: has no 'conversations' (ShareGPT) or 'prompt' column (it has {', '.join(sorted(columns))}); "
            f"export it with a 'prompt' column and set benchmark.prompts to that file"
        )
    folder.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    rows.to_json(str(partial))  # JSON lines, one row each
    partial.replace(path)
    return path


def _hugging_face_name(value: str) -> tuple[str, str]:
    """``hf:owner/name[:split]`` -> (owner/name, split)."""
    name, _, split = value[len(HUGGING_FACE) :].partition(":")
    return name, split or "train"


def categories(prompts: list[Prompt]) -> list[str]:
    """Categories in the order they first appear."""
    return list(dict.fromkeys(p.category for p in prompts))
