from specsweep.record.redact import REDACTED, redact_argv, redact_env, redact_mapping, redact_values


def test_env_names_that_look_secret_are_hidden():
    env = redact_env({"HF_TOKEN": "hf_abc", "OPENAI_API_KEY": "sk", "DB_PASSWORD": "p", "NCCL_ALGO": "Ring"})
    assert env == {"DB_PASSWORD": REDACTED, "HF_TOKEN": REDACTED, "NCCL_ALGO": "Ring", "OPENAI_API_KEY": REDACTED}


def test_argv_values_after_secret_flags_are_hidden():
    assert redact_argv(["srv", "--api-key", "s3cr3t", "--hf-token=xyz", "--port", "1"]) == [
        "srv",
        "--api-key",
        REDACTED,
        f"--hf-token={REDACTED}",
        "--port",
        "1",
    ]


def test_literal_values_and_nested_mappings():
    assert redact_values("key is s3cr3tvalue here", ["s3cr3tvalue"]) == f"key is {REDACTED} here"
    assert redact_mapping({"a": {"MY_SECRET": "x", "ok": [1]}}) == {"a": {"MY_SECRET": REDACTED, "ok": [1]}}


def test_names_are_secret_by_word_not_by_substring():
    from specsweep.record.redact import is_secret, secret_values

    for name in (
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "OPENAI_API_KEY",
        "DB_PASSWORD",
        "--hf-token",
        "--api-key",
        "env:HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
    ):
        assert is_secret(name), name
    # their values (false, 500) would otherwise be scrubbed out of every server log and archive member
    for name in (
        "TOKENIZERS_PARALLELISM",
        "KEYBOARD_LAYOUT",
        "max_tokens",
        "--speculative-num-draft-tokens",
        "--max-num-batched-tokens",
    ):
        assert not is_secret(name), name
    assert secret_values({"TOKENIZERS_PARALLELISM": "false", "HF_TOKEN": "hf_x1234"}) == ["hf_x1234"]


def test_value_redaction_never_alters_data_that_is_not_secret():
    """An environment with SOME_KEY=16 or A_TOKEN=500 must not turn the numbers of an archive into <redacted>."""
    from specsweep.record.redact import substitutable

    text = "max_tokens: 500\nwarmup_max_tokens: 16\nignore_eos: true\nseed: 42\nrate: 1234.5678\n"
    assert redact_values(text, ["500", "16", "true", "1234.5678", "password", "localhost"]) == text
    for value in ("500", "16", "true", "12345678", "1234.5678", "password", "localhost"):
        assert not substitutable(value), value
    for value in ("hf_AbCdEf123456", "sk-proj-x1y2z3w4", "s3cr3tvalue", "Tr0ub4dor&3"):
        assert substitutable(value), value


def test_flags_are_secret_only_by_the_documented_list():
    """SGLang's --speculative-token-map (a path) and its --bucket-inter-token-latency (a number) were read
    '<redacted>' in commands.sh, the plans, launch.json and the archive: the record could not relaunch them."""
    import json
    from pathlib import Path

    from specsweep.record.redact import SECRET_FLAGS, is_secret

    argv = ["srv", "--speculative-token-map", "/m/map.pt", "--ds-heavy-token-num=8", "--ssl-keyfile", "k.pem"]
    assert redact_argv(argv) == argv
    fixture = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "sglang_server_args.json").read_text())
    secret = {o for a in fixture["arguments"] for o in a["options"] if is_secret(o)}
    assert secret == {"--api-key", "--admin-api-key", "--ssl-keyfile-password"}
    typed = {o for a in fixture["arguments"] if a["type"] in ("int", "float") for o in a["options"]}
    assert not secret & typed
    assert {"--api-key", "--hf-token"} <= SECRET_FLAGS
    assert redact_argv(["srv", "--ssl-keyfile-password", "pw", "-hft", "hf_x"]) == [
        "srv",
        "--ssl-keyfile-password",
        REDACTED,
        "-hft",
        REDACTED,
    ]
