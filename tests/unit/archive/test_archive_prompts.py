"""The prompts file in the archive (misuse): a file from outside the project is archived with a note saying so,
and ``archive.include_prompts: false`` keeps only its sha256."""

from __future__ import annotations

from pathlib import Path

from specsweep.archive.archive_prompts import member
from specsweep.record.cache import sha256_file


def test_a_prompts_file_inside_the_project_is_archived_without_a_word(tmp_path):
    prompts = tmp_path / "config" / "prompts.txt"
    prompts.parent.mkdir()
    prompts.write_text("hello\n")
    assert member(prompts, tmp_path, include=True) == (prompts.resolve(), None)


def test_a_prompts_file_from_outside_the_project_is_named(tmp_path):
    project, elsewhere = tmp_path / "project", tmp_path / "home" / "private-prompts.txt"
    project.mkdir()
    elsewhere.parent.mkdir()
    elsewhere.write_text("my private prompt\n")
    archived, note = member(elsewhere, project, include=True)
    assert archived == elsewhere.resolve()
    assert f"benchmark/prompts {elsewhere.resolve()} is outside this project" in note
    assert "archive: {include_prompts: false}" in note


def test_an_excluded_prompts_file_leaves_only_its_sha256(tmp_path):
    elsewhere = tmp_path / "private-prompts.txt"
    elsewhere.write_text("my private prompt\n")
    archived, note = member(elsewhere, tmp_path / "project", include=False)
    assert isinstance(archived, bytes) and b"my private prompt" not in archived
    assert f"# sha256 {sha256_file(elsewhere)}".encode() in archived
    assert "not archived (archive.include_prompts: false)" in note
    assert Path(elsewhere).read_text() == "my private prompt\n"  # nothing of the user's is touched


def test_a_jsonl_dataset_keeps_its_suffix_in_the_archive(tmp_path):
    from specsweep.archive.archive_prompts import MEMBER, member_name

    assert member_name(tmp_path / "set.jsonl") == "config/prompts.jsonl"
    assert member_name(tmp_path / "prompts.txt") == member_name(tmp_path / "prompts") == MEMBER
