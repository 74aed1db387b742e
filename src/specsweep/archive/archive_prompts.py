"""What the archive keeps of the prompts file, and what it says about it.

The prompts file may be any path the user gives, also outside the project (a home folder, a shared
drive): it is archived under the neutral name config/prompts.txt (a JSONL dataset as
config/prompts.jsonl), so the archive says where it came from,
and ``archive.include_prompts: false`` keeps only its sha256 (a placeholder that still lets the archived
config validate and rebuild).
"""

from __future__ import annotations

from pathlib import Path

from specsweep.plan.workload import DATASET_SUFFIX, is_dataset
from specsweep.record.cache import sha256_file

MEMBER = "config/prompts.txt"


def member_name(prompts: Path) -> str:
    """Where the archive keeps ``prompts``: a JSONL dataset keeps its suffix, which says how it is read."""
    return f"config/prompts{DATASET_SUFFIX}" if is_dataset(prompts) else MEMBER


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
