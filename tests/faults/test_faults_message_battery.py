"""A battery of mistakes in the default config, each through every check `snakemake -n` runs before anything
starts (schema, expansion, user parsers, preflight): each is refused as a ConfigError (never a traceback), at
the file's line, naming the key, and saying what is wanted in words, never in a regular expression or a
JSON-schema type name (issue 35 item 20: 47 cases gave poor messages)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml
from conftest import REPO

from specsweep.parsers.user import compile_parsers
from specsweep.plan import config as sweep_config
from specsweep.plan import config_errors, design, preflight
from specsweep.plan.schema_messages import PATTERNS

CONFIG = REPO / "config" / "config.yaml"
GONE = object()

# (key path, value or GONE, words the message must hold besides the key)
MISTAKES: list[tuple[tuple[str, ...], Any, str]] = [
    (("benchmark", "runs"), 0, "less than the minimum of 1"),
    (("benchmark", "runs"), "seven", "not a whole number"),
    (("benchmark", "max_tokens"), 2.5, "not a whole number"),
    (("benchmark", "sessions"), 0, "minimum of 1"),
    (("benchmark", "prompts"), "nope.jsonl", "does not exist"),
    (("benchmark", "prompts"), "config", "is a directory"),
    (("benchmark", "temperature"), "hot", "not a number"),
    (("benchmark", "chat_template"), "yes", "not true or false"),
    (("benchmark", "load"), {"concurrency": [0]}, "minimum of 1"),
    (("benchmark", "load"), {"concurrency": [2], "requests_per_window": 4}, "set it to at least 8"),
    (("benchmark", "load"), {"windows": 3}, "needs concurrency, request_rate, rate_search or ramp_up"),
    (("benchmark", "load"), {"concurrency": 2}, "write [2]"),
    (("benchmark", "load"), {"concurrency": [1], "slo": {"ttft": 100}}, "did you mean 'ttft_ms'"),
    (("engines", "llama", "kind"), "llamacp", "did you mean 'llamacpp'"),
    (("engines", "llama", "model"), "nomodel", "not defined under 'models'"),
    (("engines", "llama", "args", "-c"), [1, 2], "grid"),
    (("engines", "llama", "args"), ["-c", "2048"], "not a mapping of keys to values"),
    (("engines", "llama", "llamacpp", "variant"), "gpu", "not one of ['cpu', 'cuda']"),
    (("engines", "llama", "port"), 70000, "maximum of 65535"),
    (("models", "smollm2-135m", "sha256"), "abc", "64 lowercase hexadecimal digits"),
    (("models", "smollm2-135m", "pypi_wheel"), GONE, "needs either pypi_wheel and sha256, or path, or hub"),
    (("configurations", "baseline", "baseline"), False, "mark one configuration 'baseline: true'"),
    (("configurations", "x y"), {"description": "a space"}, "not a name: letters, digits"),
    (("configurations", "z"), {"engine": "missing"}, "not defined under 'engines'"),
    (("configurations", "z"), {"argz": {}}, "did you mean 'args'"),
    (("configurations", "z"), {"grid": {"args": {"--draft-max": 5}}}, "write [5]"),
    (("configurations", "z"), {"grid": {"args": {"--draft-max": []}}}, "should be non-empty"),
    (("profile_parsers",), {"p": 1}, "not a mapping of keys to values"),
    (("environment",), {"pass_through": "PATH"}, "write ['PATH']"),
    (("paper",), {"macro_prefix": "1bad"}, "letters only"),
]


def checked(config: dict[str, Any]) -> None:
    """What common.smk runs on a config before any job."""
    valid = sweep_config.validate_schema(config)
    configurations = design.configurations_of(valid)
    compile_parsers(valid.get("profile_parsers"))
    preflight.check(valid, configurations)


@pytest.mark.parametrize(
    ("path", "value", "words"),
    MISTAKES,
    ids=["/".join(m[0]) + ("-deleted" if m[1] is GONE else f"={m[1]!r}") for m in MISTAKES],
)
def test_a_mistake_is_refused_in_words_at_its_key(path, value, words, monkeypatch):
    monkeypatch.chdir(REPO)
    config = copy.deepcopy(yaml.safe_load(CONFIG.read_text()))
    parent = config
    for key in path[:-1]:
        parent = parent.setdefault(key, {})
    if value is GONE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    with pytest.raises(sweep_config.ConfigError) as refused:
        checked(config)
    message = config_errors.explain(refused.value, [CONFIG])
    assert re.match(r"config/config\.yaml(:\d+)?: configuration error: ", message.replace(str(REPO) + "/", ""))
    assert words in message, message
    named = "/".join(k for k in path if k not in ("x y", "z", "p")) or path[0]
    assert named.split("/")[0] in message, message  # the key's section at least, usually its whole path
    assert not re.search(r"\^\[|\{64\}|of type '", message), message  # no regular expression, no schema type
    assert len(message.splitlines()) == 1 and len(message) < 600, message


def test_every_worded_pattern_is_one_the_schema_uses():
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    used = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            used.update(v for k, v in node.items() if k == "pattern" and isinstance(v, str))
            used.update(node.get("patternProperties") or {})  # a key's pattern (slo's percentile objectives)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert set(PATTERNS) <= used, sorted(set(PATTERNS) - used)
