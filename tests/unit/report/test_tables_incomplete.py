"""The partial summary of an unfinished sweep (the onerror path) has the summary job's columns."""

from __future__ import annotations

import io
import json
import os

import pandas as pd
from run_records import run_record

from specsweep.analyse import aggregate, incomplete
from specsweep.plan.config import expand, validate_schema
from specsweep.record import results
from specsweep.record.redact import redact_mapping
from specsweep.record.results import Launch
from specsweep.report import tables

BENCHMARK = {"runs": 3, "max_tokens": 500}
PARSERS = {"eval": {"pattern": r"eval time = (?P<eval_ms>[\d.]+) ms"}}


def _sweep_on_disk(root, configurations, failed=()):
    """Every configuration's launch, runs, server log and profile.csv, as a finished session leaves them."""
    runs, launches, profiles = {}, {}, {}
    for i, name in enumerate(configurations):
        spec = {"drafted": 400, "accepted": 300, "verify_steps": 100, "emitted": 500} if i % 2 else None
        rates = [60.0 + i + r for r in range(3)]
        runs[name] = [
            run_record(
                {
                    "client": {
                        "decode_tokens_per_s": rate,
                        "decode_s": 499 / rate,
                        "ttft_s": 0.1,
                        "itl_median_s": 0.01,
                    },
                    "speculation": spec,
                    "started_at": f"2026-01-01T00:0{r}:00Z",
                },
                r,
            )
            for r, rate in enumerate(rates)
        ]
        launches[name] = Launch(
            configuration=redact_mapping(configurations[name].as_params()),  # what it was measured under
            argv=["llama-server"],
            port=8080,
            host="127.0.0.1",
            env_set={},
            env={},
            launched_at="t",
            status="completed",
            engine={"version": "b1"},
        )
        profiles[name] = pd.DataFrame(
            {"phase": ["run", "run"], "source": ["eval", "eval"], "eval_ms": [10.0, 12.0 + i]}
        )
        if name in failed:
            (root / name / "failed" / "20260101T000000Z").mkdir(parents=True)
            (root / name / "failed" / "20260101T000000Z" / "error.txt").write_text("boom")
            continue
        for record in runs[name]:
            path = root / name / "runs" / f"run_{record.run}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record.to_json()))
        (root / name / "launch.json").write_text(json.dumps(launches[name].to_json()))
        (root / name / "server.log").write_text("")
        profiles[name].to_csv(results.profile_file(name, root), index=False)
    return runs, launches, profiles


def test_the_error_path_and_the_summary_job_build_the_same_columns(default_config, tmp_path):
    configurations = expand(validate_schema(default_config))
    runs, launches, profiles = _sweep_on_disk(tmp_path, configurations)
    normal = tables.build(aggregate.Measured(configurations, runs, launches, profiles), PARSERS).summary
    path = incomplete.write_summary(configurations, 3, tmp_path, BENCHMARK, PARSERS, io.StringIO())
    partial = pd.read_csv(path)
    assert list(partial.columns) == list(normal.columns)
    assert "eval_eval_ms_mean" in partial.columns and (partial["status"] == "ok").all()
    aggregate.write_csv(normal, tmp_path / "complete.csv")
    assert path.read_text() == (tmp_path / "complete.csv").read_text()  # nothing failed: the same file


def test_a_failed_configuration_keeps_the_columns_and_says_where_to_look(default_config, tmp_path):
    configurations = expand(validate_schema(default_config))
    runs, launches, profiles = _sweep_on_disk(tmp_path, configurations, failed={"ngram-m8"})
    normal = tables.build(aggregate.Measured(configurations, runs, launches, profiles), PARSERS).summary
    out = io.StringIO()
    partial = pd.read_csv(incomplete.write_summary(configurations, 3, tmp_path, BENCHMARK, PARSERS, out))
    assert list(partial.columns) == list(normal.columns)
    row = partial.set_index("configuration").loc["ngram-m8"]
    assert row["status"].startswith("failed (") and row["runs"] == 0
    assert "ngram-m8: failed" in out.getvalue()


def test_a_failed_job_after_a_finished_sweep_leaves_its_summary_alone(default_config, tmp_path):
    # e.g. a failed `compare` or archive: before, "the sweep did not finish" and summary.csv was rewritten and
    # dated 1970, so the next `all` recomputed the summary and everything after it
    configurations = expand(validate_schema(default_config))
    runs, launches, profiles = _sweep_on_disk(tmp_path, configurations)
    summary = tmp_path / "summary.csv"
    aggregate.write_csv(
        tables.build(aggregate.Measured(configurations, runs, launches, profiles), PARSERS).summary, summary
    )
    before = (summary.read_text(), summary.stat().st_mtime_ns)
    out = io.StringIO()
    assert incomplete.write_summary(configurations, 3, tmp_path, BENCHMARK, PARSERS, out) == summary
    assert (summary.read_text(), summary.stat().st_mtime_ns) == before
    assert "did not finish" not in out.getvalue()
    assert f"every configuration finished and {summary} is up to date" in out.getvalue()
    # a run measured again after the summary was written: the summary is no longer up to date
    run = tmp_path / "ngram-m8" / "runs" / "run_0.json"
    os.utime(run, ns=(before[1] + 10**9, before[1] + 10**9))
    incomplete.write_summary(configurations, 3, tmp_path, BENCHMARK, PARSERS, io.StringIO())
    assert summary.stat().st_mtime == 0
