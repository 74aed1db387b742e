"""Names (misuse): every user-given name that becomes a path, file name, shell word or LaTeX is matched as a
whole string in one place (names.py), reserved names come from what the rules write, and a secret grid axis
never names a configuration."""

from __future__ import annotations

import copy
import re

import pytest
import yaml
from conftest import REPO, snakemake, write_config

from specsweep.parsers.user import compile_parsers
from specsweep.plan.config import ConfigError, expand, validate_schema
from specsweep.record import names


def _rename(section: str, old: str, new: str):
    def edit(config):
        config[section] = {(new if k == old else k): v for k, v in config[section].items()}
        if section == "models":
            config["engines"]["llama"]["model"] = new

    return edit


def _key(section: str, key: str):
    def edit(config):
        config["configurations"]["baseline"].setdefault(section, {})[key] = "1"

    return edit


# A trailing newline passed `$` (it matches before a final "\n"): each such name is refused, naming the key.
@pytest.mark.parametrize(
    ("edit", "key"),
    [
        (_rename("configurations", "baseline", "baseline\n"), "configurations/'baseline\\n'"),
        (_rename("engines", "llama", "llama\n"), "engines/'llama\\n'"),
        (_rename("models", "smollm2-135m", "smollm2-135m\n"), "models/'smollm2-135m\\n'"),
        (_key("env", "MY_VAR\n"), "configurations/baseline/env"),
        (_key("args", "--threads\n"), "configurations/baseline/args"),
    ],
    ids=["configuration", "engine", "model", "env", "flag"],
)
def test_a_name_with_a_trailing_newline_is_refused(default_config, edit, key):
    config = copy.deepcopy(default_config)
    edit(config)
    if "engines/'llama" in key:
        for entry in config["configurations"].values():
            entry.pop("engine", None)
    with pytest.raises(ConfigError) as error:
        expand(validate_schema(config))
    assert key in str(error.value) and "is not allowed" in str(error.value)


def test_a_grid_template_that_ends_a_name_with_a_newline_is_refused(default_config):
    config = copy.deepcopy(default_config)
    config["configurations"]["ngram"]["grid"]["name"] = "ngram-m{--spec-ngram-simple-size-m}\n"
    with pytest.raises(ConfigError, match="configurations/ngram: name 'ngram-m3\\\\n' is not allowed"):
        expand(validate_schema(config))


def test_a_profile_parser_name_with_a_trailing_newline_is_refused():
    with pytest.raises(ConfigError, match="profile_parsers/p\n: name 'p\\\\n' is not allowed"):
        compile_parsers({"p\n": {"pattern": "(?P<x>\\d+)"}})


def test_a_grid_over_a_secret_flag_names_configurations_by_position(default_config):
    config = copy.deepcopy(default_config)
    secrets = ["sk-live-aaaaaaaa", "sk-live-bbbbbbbb"]
    config["configurations"]["keyed"] = {"grid": {"args": {"--api-key": secrets, "-t": [1, 2]}}}
    configurations = expand(validate_schema(config))
    made = sorted(n for n in configurations if n.startswith("keyed"))
    assert made == ["keyed-api-key-1-t-1", "keyed-api-key-1-t-2", "keyed-api-key-2-t-1", "keyed-api-key-2-t-2"]
    assert configurations["keyed-api-key-2-t-1"].args["--api-key"] == secrets[1]
    assert not [n for n in configurations if any(s in n for s in secrets)]


def test_reserved_names_are_every_top_level_output_of_the_rules():
    reserved = names.reserved_names(
        [
            "results/summary.csv",
            "results/{cfg}/launch.json",
            "results/plan/{cfg}.json",
            "results/archive/x.tar.gz",
            "logs/summary.log",
            "results/commands.sh",
        ]
    )
    assert reserved == {"summary.csv", "plan", "archive", "commands.sh"}


@pytest.mark.parametrize("name", ["summary.csv", "commands.sh", "provenance.json", "figures"])
def test_a_configuration_named_like_a_results_file_is_refused_before_anything_runs(tmp_path, name):
    write_config(
        tmp_path, tmp_path / "llama-server", tmp_path / "model.gguf", {"baseline": {"baseline": True}, name: {}}
    )
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["engines"]["llama"].pop("executable")  # checked later than names: the pin is never built here
    config["engines"]["llama"]["llamacpp"] = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["engines"][
        "llama"
    ]["llamacpp"]
    config["models"]["tiny"] = {"path": str(REPO / "config" / "prompts.txt")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    done = snakemake(tmp_path, "-n", "results/commands.sh")
    said = done.stdout + done.stderr  # with -n, Snakemake prints the error to stdout
    assert done.returncode != 0
    assert (
        f"configuration error: configurations: name '{name}' is taken by the pipeline's own results/{name}" in said
    ), said[-2000:]
    assert "Traceback" not in said
    assert not (tmp_path / "results").exists()


def test_every_reserved_name_the_readme_gives_is_refused(tmp_path):
    """config/README.md lists reserved names by example: each of them is refused, all in one message."""
    text = (REPO / "config" / "README.md").read_text()
    marker = "writes directly under `results/`"
    sentence = text[text.index(marker) + len(marker) :].split("That list", 1)[0]
    documented = re.findall(r"`([^`/]+)`", sentence)
    assert len(documented) >= 10
    write_config(
        tmp_path,
        tmp_path / "llama-server",
        tmp_path / "model.gguf",
        {"baseline": {"baseline": True}, **{name: {} for name in documented}},
    )
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["engines"]["llama"].pop("executable")
    config["engines"]["llama"]["llamacpp"] = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["engines"][
        "llama"
    ]["llamacpp"]
    config["models"]["tiny"] = {"path": str(REPO / "config" / "prompts.txt")}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    said = (done := snakemake(tmp_path, "-n", "results/commands.sh")).stdout + done.stderr
    assert done.returncode != 0
    for name in documented:
        assert f"name '{name}' is taken by the pipeline's own results/{name}" in said, said[-2000:]
