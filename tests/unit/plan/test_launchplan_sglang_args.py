"""The seed campaign's SGLang launches, parsed by SGLang 0.5.10.post1's own argument definitions.

``fixtures/sglang_server_args.json`` holds ``ServerArgs.add_cli_args`` of the released wheel
``sglang-0.5.10.post1-py3-none-any.whl`` (``sglang/srt/server_args.py``), read as text by
``fixtures/extract_sglang_args.py`` (importing it needs torch and CUDA); an argparse parser is rebuilt from
it. What this verifies: every flag exists under its full name (no prefix: a prefix breaks when SGLang adds a
flag), is not deprecated, takes a value or none as SGLang declares, and a value is one of its choices and
parses as its int or float type. What it does not: SGLang's checks after parsing
(``ServerArgs.__post_init__``: model-dependent defaults, speculative parameter rules beyond the adapter's
own, hardware), choices that are computed at import time (``--reasoning-parser``, ``--tool-call-parser``,
``--lora-target-modules``, ``--speculative-draft-model-quantization``), and the server's behaviour.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from specsweep.plan.launchplan import plan

DEFINITIONS = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "sglang_server_args.json").read_text())
LAUNCHER = ["python3", "-m", "sglang.launch_server"]
TYPES = {"int": int, "float": float}


class Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits; a test wants the reason
        raise Refused(message)


class _Deprecated(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        raise Refused(f"{option_string} is deprecated in SGLang 0.5.10.post1 (see its help for the replacement)")


def sglang_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sglang.launch_server", allow_abbrev=False)
    for argument in DEFINITIONS["arguments"]:
        action = argument["action"]
        kwargs: dict = {}
        if action == "store_true":
            kwargs["action"] = "store_true"
        elif action == "argparse.BooleanOptionalAction":
            kwargs["action"] = argparse.BooleanOptionalAction
        elif action in ("DeprecatedAction", "DeprecatedStoreTrueAction"):  # no-op, or renamed
            kwargs.update(action=_Deprecated, nargs=0)
        else:  # store, and SGLang's own store-like actions (LoRAPathAction)
            kwargs["nargs"] = argument["nargs"]
            kwargs["type"] = TYPES.get(argument["type"] or "", str)
            if argument["choices"] is not None:
                kwargs["choices"] = argument["choices"]
                kwargs["type"] = type(argument["choices"][0]) if argument["choices"] else str
        parser.add_argument(*argument["options"], **kwargs)
    return parser


@pytest.fixture(scope="module")
def campaign(example_campaign):
    return example_campaign("sglang-eagle3-steps.yaml")


def test_the_fixture_is_the_released_wheels():
    assert DEFINITIONS["source"].startswith("sglang-0.5.10.post1-py3-none-any.whl:sglang/srt/server_args.py")
    assert len(DEFINITIONS["arguments"]) > 300


def test_every_launch_of_the_seed_campaign_parses(campaign):
    config, configurations = campaign
    parser = sglang_parser()
    for name, configuration in configurations.items():
        argv = plan(configuration, config["engines"][configuration.engine], config["models"])["argv"]
        assert argv[:3] == LAUNCHER, name
        parsed = parser.parse_args(argv[3:])
        if configuration.args.get("--speculative-algorithm"):
            assert parsed.speculative_algorithm == "EAGLE3" and parsed.speculative_eagle_topk == 1


@pytest.mark.parametrize(
    ("change", "refusal"),
    [
        ({"--speculative-num-step": 2}, "unrecognized arguments: --speculative-num-step"),  # misspelt
        ({"--speculative-algorithm": "EAGLE4"}, "invalid choice: 'EAGLE4'"),
        ({"--stream-output": True}, "--stream-output is deprecated"),  # renamed --incremental-streaming-output
        ({"--enable-piecewise-cuda-graph": True}, "--enable-piecewise-cuda-graph is deprecated"),  # now a no-op
        ({"--speculative-eagle-topk": "one"}, "invalid int value: 'one'"),
        ({"--mem-frac": 0.8}, "unrecognized arguments: --mem-frac"),  # a prefix argparse would take
    ],
)
def test_a_wrong_flag_or_value_is_refused(campaign, change, refusal):
    config, configurations = campaign
    configuration = next(c for c in configurations.values() if c.args.get("--speculative-algorithm"))
    changed = type(configuration)(**{**configuration.as_params(), "args": {**configuration.args, **change}})
    argv = plan(changed, config["engines"][changed.engine], config["models"])["argv"]
    with pytest.raises(Refused, match=refusal):
        sglang_parser().parse_args(argv[3:])
