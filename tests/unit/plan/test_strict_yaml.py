"""Config files: duplicate keys and alias bombs are refused, naming the file and line."""

from __future__ import annotations

import time

import pytest

from specsweep.plan.config import ConfigError
from specsweep.plan.strict_yaml import YamlError, check_file


def _file(tmp_path, text):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return path


def test_a_second_benchmark_block_is_refused_with_both_lines(tmp_path):
    path = _file(tmp_path, "benchmark:\n  runs: 5\nengines: {}\nbenchmark:\n  max_tokens: 8\n")
    with pytest.raises(YamlError) as error:
        check_file(path)
    assert str(error.value).startswith(f"{path}: line 4: duplicate key 'benchmark' (first at line 1)")
    assert isinstance(error.value, ConfigError)  # the workflow reports it as a configuration error


def test_a_second_configuration_of_the_same_name_is_refused(tmp_path):
    path = _file(tmp_path, "configurations:\n  a: {baseline: true}\n  b: {}\n  a:\n    args: {--x: 1}\n")
    with pytest.raises(YamlError, match="line 4: duplicate key 'a' \\(first at line 2\\)"):
        check_file(path)


def test_equal_keys_in_different_mappings_and_merge_keys_are_fine(tmp_path):
    check_file(_file(tmp_path, "base: &b {runs: 1}\na: {<<: *b, x: 1}\nb: {<<: *b, x: 2}\nc: {runs: 2}\n"))


def test_an_alias_bomb_is_refused_quickly_without_expanding_it(tmp_path):
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]  # 10^10 values
    path = _file(tmp_path, "\n".join(levels) + "\n")
    started = time.monotonic()
    with pytest.raises(YamlError) as error:
        check_file(path)
    assert time.monotonic() - started < 5
    assert "expand to more than 1,000,000 values" in str(error.value) and "line " in str(error.value)
    assert len(str(error.value)) < 400  # never the expanded document


def test_a_small_reuse_of_aliases_is_allowed(tmp_path):
    check_file(_file(tmp_path, "env: &e {A: '1'}\nconfigurations:\n  a: {env: *e}\n  b: {env: *e}\n"))
