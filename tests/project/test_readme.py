"""The README: it starts with the two commands, stays short, and every file it links to exists."""

from __future__ import annotations

import re

from conftest import REPO

README = (REPO / "README.md").read_text()


def test_the_readme_starts_with_exactly_make_run_and_make_test():
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block[1].splitlines()]
    assert commands == ["make run", "make test"]
    assert README.index("```sh") < README.index("\n## ", README.index("## Quick start") + 1)


def test_ci_runs_the_readmes_two_commands_in_its_order():
    # as a new user does in a fresh clone: `make test` must pass beside the results/ and logs/ of `make run`
    commands = [
        line.strip().removeprefix("exec ").strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip().removeprefix("exec ").startswith("make")
    ]
    assert commands == ["make run", "make test"]


def test_the_readme_says_what_it_measures_and_what_it_does_not_before_any_section_on_use():
    box = README.index("**What it measures.**")
    assert box < README.index("**What it does not.**") < README.index("## Supported engines")


def test_long_reference_lives_in_docs_and_every_link_resolves():
    assert len(README.splitlines()) <= 220
    for moved in ("| failure | what you see | what is kept |", "**What runs where.**", "before 2026-12-01"):
        assert moved not in README, moved
    for document in ("docs/reliability.md", "docs/cluster.md", "docs/upgrading.md"):
        assert f"]({document}" in README, document
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    missing = [link for link in links if "://" not in link and not (REPO / link).exists()]
    assert missing == []
