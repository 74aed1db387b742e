"""Where a configuration error is in the user's own file, and what a misspelt key probably meant.

Snakemake reports an exception raised while the workflow is parsed at the workflow line that raised
it (``workflow/rules/common.smk``); a user needs their file, line and key instead. Every
``ConfigError`` message starts with the key it is about (``benchmark/runs: ...``), so ``locate``
finds that key, or its deepest existing parent, in the config files the sweep was given.
"""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml

from specsweep.record import results

# The leading key of a ConfigError message: "a/b/--flag: ..." (no spaces inside a key path).
_LEADING_KEY = re.compile(r"^([A-Za-z0-9_.:{}/-]+): ")
CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


class KeyLines:
    """Key path of a YAML document -> the 1-based line where that key is written, looked up along the node
    graph as composed: a node reached through many aliases is indexed once, so a path below an alias bomb
    (refused by strict_yaml, whose message is then located here) costs its depth, never the expansion."""

    def __init__(self, root: yaml.Node | None) -> None:
        self._root = root
        self._index: dict[int, dict[str, tuple[int, yaml.Node]]] = {}

    def _children(self, node: yaml.Node) -> dict[str, tuple[int, yaml.Node]]:
        if id(node) not in self._index:
            children: dict[str, tuple[int, yaml.Node]] = {}
            if isinstance(node, yaml.MappingNode):
                merged = []
                for key, value in node.value:
                    children[str(key.value)] = (key.start_mark.line + 1, value)
                    if key.tag == "tag:yaml.org,2002:merge":  # <<: *base (or a list of them): its keys are here
                        merged += value.value if isinstance(value, yaml.SequenceNode) else [value]
                for source in merged:
                    for name, entry in self._children(source).items():
                        children.setdefault(name, entry)  # a key written here wins over a merged one
            elif isinstance(node, yaml.SequenceNode):
                children = {str(i): (item.start_mark.line + 1, item) for i, item in enumerate(node.value)}
            self._index[id(node)] = children
        return self._index[id(node)]

    def get(self, path: Sequence[str], default: int | None = None) -> int | None:
        node, line = self._root, default
        if node is None or not path:
            return default
        for key in path:
            found = self._children(node).get(str(key))
            if found is None:
                return default
            line, node = found
        return line

    def __getitem__(self, path: Sequence[str]) -> int:
        line = self.get(path)
        if line is None:
            raise KeyError(path)
        return line

    def __contains__(self, path: object) -> bool:
        return isinstance(path, tuple) and self.get(path) is not None


def key_lines(text: str) -> KeyLines:
    """The lines of every key path of a YAML document (``KeyLines``; empty when it is not valid YAML)."""
    try:
        return KeyLines(yaml.compose(text))
    except yaml.YAMLError:
        return KeyLines(None)


def key_of(error: Exception) -> tuple[str, ...]:
    """The key path an error is about: its ``key``, else the key its message starts with, else ``()``."""
    if getattr(error, "key", ()):
        return tuple(error.key)  # type: ignore[attr-defined]
    match = _LEADING_KEY.match(str(error))
    return tuple(match[1].split("/")) if match else ()


def unexpected_key_hint(error: Any) -> tuple[tuple[str, ...], str]:
    """For a jsonschema error: the key path it is about and, for an unknown key, the closest allowed one
    (`` (did you mean 'runs'?)``). Unknown keys are reported at their parent; the path names the key."""
    path = tuple(str(p) for p in error.absolute_path)
    allowed = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict) or not allowed:
        return path, ""
    unexpected = [str(k) for k in error.instance if k not in allowed]
    if not unexpected:
        return path, ""
    return (*path, unexpected[0]), did_you_mean(unexpected[0], allowed)


def locate(key: Sequence[str], config_files: Sequence[str | Path], exact: bool = False) -> tuple[Path, int] | None:
    """The file and line of ``key`` (or of its deepest parent that is written, unless ``exact``) in the last
    config file holding it: later files override earlier ones, as with Snakemake's ``--configfile a b``."""
    best: tuple[int, Path, int] | None = None
    for path in config_files:
        path = Path(path)
        try:
            lines = key_lines(path.read_text())
        except (OSError, UnicodeDecodeError):
            continue
        for depth in range(len(key), len(key) - 1 if exact else 0, -1):
            line = lines.get(tuple(key[:depth]))
            if line is not None:
                if best is None or depth >= best[0]:
                    best = (depth, path, line)
                break
    return None if best is None else (best[1], best[2])


def where(error: Exception, config_files: Sequence[str | Path], overrides: dict[str, Any] | None = None) -> str:
    """``my-sweep.yaml:12: `` (file and line, as compilers write them) for the key the error is about;
    ``--config: `` when the key was set on the command line (``overrides``, Snakemake's ``--config``, win
    over files); else ``my-sweep.yaml: `` (a missing key belongs in the last file)."""
    key = key_of(error)
    if key and overrides and key[0] in overrides:
        return "--config: "
    written = (locate(k, config_files, exact=True) for k in (key, *getattr(error, "alternatives", ())) if k)
    found = next((f for f in written if f is not None), None) or (locate(key, config_files) if key else None)
    if found is not None:
        return f"{shown(found[0])}:{found[1]}: "
    return f"{shown(config_files[-1])}: " if config_files else ""


def shown(path: str | Path) -> str:
    """A path as the user would write it: relative to the working directory when it lies below it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def explain(error: Exception, config_files: Sequence[str | Path], overrides: dict[str, Any] | None = None) -> str:
    """The one message a user sees for a configuration error: their file and line first, as compilers write
    it, then key, problem and fix (the error's own text)."""
    return f"{where(error, config_files, overrides)}configuration error: {error}"


def exit_with(message: str) -> NoReturn:
    """Stop the workflow while it is read, with only ``message``: raising would make Snakemake print the
    workflow file and line that raised (``workflow/rules/common.smk``), which is not where the mistake is."""
    print(message, file=sys.stderr)
    raise SystemExit(1)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'runs'?)`` for the closest candidate, or ``""`` when none is close."""
    close = closest(word, candidates)
    return f" (did you mean '{close}'?)" if close else ""


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate a misspelt ``word`` most probably meant, or None when none is close."""
    close = difflib.get_close_matches(word, sorted(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


def config_file_problem(value: str | Path) -> str | None:
    """What is wrong with a ``--configfile`` value, worded with its file, line and fix; None when it reads as
    a config. Snakemake reads these files before the workflow runs a line, and answers a missing one with a
    traceback and a YAML syntax error without file or line, so ``specsweep`` checks them first."""
    path, name = Path(value), shown(value)
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else f"does not exist (in {Path.cwd()})"
        return (
            f"{name}: the config file {what}; fix the path, or start a sweep from an example: "
            f"cp config/examples/load-cpu.yaml {name}"
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        return f"{name}: not UTF-8 text ({error.reason} at byte {error.start}); save it as UTF-8"
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        at = f"{mark.line + 1}:{mark.column + 1}: " if mark is not None else ""
        problem = str(error.problem or error.context)
        if error.context and error.problem and error.context_mark is not None:  # where the unclosed thing began
            problem += (
                f" ({error.context} at line {error.context_mark.line + 1}, column {error.context_mark.column + 1})"
            )
        text = path.read_text(encoding="utf-8").splitlines()
        tabs = mark is not None and mark.line < len(text) and "\t" in text[mark.line]
        fix = (
            "indent with spaces, not tabs"
            if tabs
            else "check that line and the one before: indentation, a ':' after each key, closed brackets and quotes"
        )
        return f"{name}:{at}YAML syntax error: {problem}; {fix}"
    except yaml.YAMLError as error:
        return f"{name}: YAML error: {error}"
    if not isinstance(data, dict):
        found = "empty" if data is None else f"a {type(data).__name__}"
        return (
            f"{name}: the config file is {found}, not a mapping of sections (engines:, models:, benchmark:, "
            f"configurations:); start from an example: config/examples/"
        )
    return None


def misplaced_targets(config_files: Sequence[str | Path]) -> list[str]:
    """Values given to ``--configfile`` that are targets, not config files: the option takes several
    values, so ``--configfile my.yaml all`` reads ``all`` as a second config file. A value is taken for a
    target when it lies under the sweep's ``results/`` (but for the search's next round, a config fragment), or
    is not a .yaml/.yml/.json file and does not exist."""
    found = []
    for value in config_files:
        path = Path(value)
        if Path(shown(path)) == Path(results.NEXT_ROUND) and path.is_file():
            continue
        if Path(shown(path)).parts[:1] == ("results",) or (
            path.suffix.lower() not in CONFIG_SUFFIXES and not path.is_file()
        ):
            found.append(shown(path))
    return found


def user_command(arguments: str, config_files: Sequence[str | Path]) -> str:
    """A Snakemake command printed for the user: ``arguments``, then the sweep's ``--configfile`` files (none for
    the default sweep), so that it acts on the results these files made."""
    files = " ".join(shown(f) for f in config_files)
    return f"snakemake {arguments}{f' --configfile {files}' if files else ''}"


def misplaced_target_message(targets: Sequence[str], config_files: Sequence[str | Path]) -> str:
    """How to write the command: targets before ``--configfile`` (or the option last)."""
    files = [shown(f) for f in config_files if shown(f) not in targets]
    command = user_command(f"--cores 1 {' '.join(targets)}", files or ["my-sweep.yaml"])
    return (
        f"--configfile: {', '.join(repr(t) for t in targets)} looks like a target, not a config file; "
        f"--configfile takes every value that follows it, so a target written after it is read as a "
        f"config file. Put targets before the option: {command}"
    )
