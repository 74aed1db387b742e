"""benchmark.sessions: {min, max} through Snakemake, on the stand-in engine: the plan says what the workflow does
with it (every configuration in max sessions until the rounds run) and plans those sessions, and counts the
confirmation sessions of benchmark.confirm_sessions."""

from __future__ import annotations

from conftest import snakemake, write_config


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
