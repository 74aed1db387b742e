"""An alias bomb is refused, and so is its error message's search for the line (misuse): locating a key in a
config file must walk the node graph as written (each node once), never the expanded document."""

from __future__ import annotations

import subprocess
import sys
import textwrap

BOMB = "\n".join(
    ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]  # 10^9 leaves
    + ["benchmark: {runs: 1}", "bomb: *a8", ""]
)

# The workflow's own path (common.smk): check_file refuses, then explain() locates the key of the message.
PROBE = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GiB: the expansion needs tens
    from specsweep.plan import config_errors, strict_yaml
    try:
        strict_yaml.check_file(sys.argv[1])
    except strict_yaml.YamlError as error:
        print(config_errors.explain(error, [sys.argv[1]]))
        print(config_errors.locate(("bomb", "3", "7", "0"), [sys.argv[1]]))
    """
)


def test_the_message_of_a_refused_alias_bomb_is_found_without_expanding_it(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    message, located = probe.stdout.splitlines()
    assert "configuration error:" in message and "expand to more than 1,000,000 values" in message
    # bomb[3][7][0] is the node a5 (an item of a6, itself an item of a7, of a8): written at line 6
    assert located.endswith(", 6)")


def test_keys_reached_through_aliases_and_merge_keys_are_located(tmp_path):
    from specsweep.plan.config_errors import key_lines

    lines = key_lines("base: &b\n  runs: 1\ncfg:\n  a: *b\n  list: [1, 2]\n")
    assert lines.get(("cfg", "a", "runs")) == 2  # where the aliased key is written
    assert lines.get(("cfg", "list", "1")) == 5 and lines.get(("cfg", "nope")) is None
    assert lines[("cfg",)] == 3 and ("base", "runs") in lines
