"""benchmark.sessions: {min, max} through Snakemake, on the stand-in engine: the plan says what the workflow does
with it (every configuration in max sessions until the rounds run) and plans those sessions, and counts the
confirmation sessions of benchmark.confirm_sessions."""

from __future__ import annotations

from conftest import snakemake, write_config

from specsweep.analyse import sequential
from specsweep.plan.design import session_name


def test_the_plan_says_the_sessions_range_is_measured_at_its_maximum(tmp_path, standin, model_file):
    write_config(
        tmp_path,
        standin,
        model_file,
        {"baseline": {"baseline": True}, "other": {}},
        sessions={"min": 2, "max": 3},
        confirm_sessions=2,
    )
    done = snakemake(tmp_path, "results/commands.sh")
    assert done.returncode == 0, done.stderr[-3000:]
    commands = (tmp_path / "results" / "commands.sh").read_text()
    assert "Sessions: 2 to 3 per configuration (benchmark.sessions)" in commands
    assert "every configuration is measured in 3 sessions, the fixed design" in commands
    assert "other-s3" in commands and "other-s4" not in commands
    assert "Confirmation: after the summary, 4 more sessions" in commands

    write_config(tmp_path, standin, model_file, {"baseline": {"baseline": True}}, sessions={"min": 3, "max": 2})
    refused = snakemake(tmp_path, "-n", "results/commands.sh")
    assert refused.returncode != 0 and "benchmark/sessions: max 2 is below min 3" in refused.stderr


def test_a_round_gives_the_next_session_only_to_the_open_configurations(tmp_path, standin, model_file):
    write_config(
        tmp_path,
        standin,
        model_file,
        {"baseline": {"baseline": True}, "same": {}, "slow": {"env": {"STANDIN_MODE": "token-delay=0.01"}}},
        sessions={"min": 2, "max": 3},
    )
    done = snakemake(tmp_path, "results/sequential_round_2.json")
    assert done.returncode == 0, done.stderr[-3000:]
    following = sequential.read_round(tmp_path / "results" / "sequential_round_2.json")
    assert session_name("slow", 3) not in following  # five times slower: decided at the first look
    assert not (tmp_path / "results" / session_name("slow", 3)).exists()
    again = snakemake(tmp_path, "-n", "results/sequential_round_2.json")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
