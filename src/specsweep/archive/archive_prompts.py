"""What the archive keeps of the prompts file, and what it says about it.

The prompts file may be any path the user gives, also outside the project (a home folder, a shared
drive): it is archived under the neutral name config/prompts.txt (a JSONL dataset as
config/prompts.jsonl, a ShareGPT or synthetic document as config/prompts.json), so the archive says where it
came from (config/prompts.provenance.json: its path, sha256, format and what was read from it),
and ``archive.include_prompts: false`` keeps only its sha256 (a placeholder that still lets the archived
config validate and rebuild).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specsweep.plan import sharegpt, synthetic
from specsweep.plan.workload import DATASET_SUFFIX, DOCUMENT_SUFFIX, categories, read_workload
from specsweep.record.cache import sha256_file

MEMBER = "config/prompts.txt"
PROVENANCE = "config/prompts.provenance.json"


def member_name(prompts: Path) -> str:
    """Where the archive keeps ``prompts``: a dataset or document keeps its suffix, which says how it is read."""
    suffix = prompts.suffix.lower()
    return f"config/prompts{suffix}" if suffix in (DATASET_SUFFIX, DOCUMENT_SUFFIX) else MEMBER


def provenance(prompts: Path) -> dict[str, Any]:
    """Where the prompts came from and what was read: enough to tell a rebuilt workload from another one
    even when only the sha256 is archived (a synthetic document's seed and distributions regenerate it)."""
    read = read_workload(prompts, require_prompts=False)
    text = prompts.read_text(encoding="utf-8-sig", errors="replace")
    found: dict[str, Any] = {
        "source": str(prompts.resolve()),
        "sha256": sha256_file(prompts),
        "format": _format(prompts, text),
        "prompts": len(read),
        "categories": categories(read),
        "max_tokens_per_prompt": sum(p.max_tokens is not None for p in read),
    }
    if isinstance(document := _document(prompts, text), dict) and synthetic.SYNTHETIC in document:
        found["synthetic"] = document[synthetic.SYNTHETIC]
    return found


def _document(prompts: Path, text: str) -> Any:
    """The parsed .json document (None for another file, or the archive's comment-only placeholder)."""
    if prompts.suffix.lower() != DOCUMENT_SUFFIX:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _format(prompts: Path, text: str) -> str:
    suffix = prompts.suffix.lower()
    if suffix == DOCUMENT_SUFFIX:
        document = _document(prompts, text)
        return "synthetic" if isinstance(document, dict) and synthetic.SYNTHETIC in document else "sharegpt"
    if suffix == DATASET_SUFFIX:
        return "sharegpt" if f'"{sharegpt.CONVERSATIONS}"' in text else "jsonl"
    return "text"


def member(prompts: Path, project: Path, include: bool) -> tuple[bytes | Path, str | None]:
    """The archive member for ``prompts`` (the file, or a placeholder with its sha256) and a note for the console,
    or None when there is nothing to say (a file inside the project, archived)."""
    resolved, root = prompts.resolve(), project.resolve()
    outside = not resolved.is_relative_to(root)
    if not include:
        placeholder = (
            f"# benchmark/prompts ({prompts.name}) was not archived (archive.include_prompts: false)\n"
            f"# sha256 {sha256_file(resolved)}\n"
        )
        return placeholder.encode(), (
            f"benchmark/prompts {prompts}: not archived (archive.include_prompts: false); "
            f"{member_name(prompts)} holds its sha256 only"
        )
    if outside:
        return resolved, (
            f"NOTE: benchmark/prompts {resolved} is outside this project ({root}); it is archived as "
            f"{member_name(prompts)}. To leave it out, set archive: {{include_prompts: false}} (the archive then keeps "
            f"its sha256 only)"
        )
    return resolved, None
