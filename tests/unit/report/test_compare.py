from __future__ import annotations

import io
import tarfile

import numpy as np
import pandas as pd
import pytest
from doc_tables import documented_columns
from run_records import write_session

from specsweep.report import compare


def _write_sweep(root, rates, args=None):
    for name, values in rates.items():
        configuration = {
            "name": name,
            "kind": "llamacpp",
            "args": (args or {}).get(name, {"-t": 2}),
            "env": {},
            "draft_model": None,
        }
        write_session(root / "results" / name, configuration, values)
    return root


def _sweeps(tmp_path):
    rng = np.random.default_rng(3)
    before = {
        "baseline": list(rng.normal(60, 2, 5)),
        "ngram": list(rng.normal(90, 3, 5)),
        "gone": [1.0, 2.0, 3.0],
        "retuned": [50.0, 51.0, 52.0],
    }
    after = {
        "baseline": list(rng.normal(60, 2, 5)),
        "ngram": list(rng.normal(120, 3, 5)),
        "new": [1.0, 2.0, 3.0],
        "retuned": [70.0, 71.0, 72.0],
    }
    a = _write_sweep(tmp_path / "a", before)
    b = _write_sweep(tmp_path / "b", after, args={"retuned": {"-t": 1}})
    return a, b


def test_matches_by_name_and_parameters(tmp_path):
    a, b = _sweeps(tmp_path)
    frame = compare.compare(compare.load(a), compare.load(b / "results")).set_index("configuration")
    assert frame.loc["gone", "status"] == "only in before" and frame.loc["new", "status"] == "only in after"
    assert frame.loc["retuned", "status"] == "parameters differ (args -t: 2 -> 1)" and np.isnan(
        frame.loc["retuned", "ratio"]
    )
    ngram = frame.loc["ngram"]
    # one session on each side: the within-launch test is given, and declares nothing
    assert ngram["status"] == "compared" and ngram["p_value"] < 0.05 and pd.isna(ngram["significant"])
    assert ngram["ratio_ci95_low"] < ngram["ratio"] < ngram["ratio_ci95_high"]
    assert ngram["ratio"] == pytest.approx(ngram["decode_tok_s_after"] / ngram["decode_tok_s_before"])
    assert "straddles 1" in frame.loc["baseline", "warnings"]
    assert compare.ONE_LAUNCH_EACH in ngram["warnings"]  # the interval's replicate is a run, and it says so
    lines = compare.describe(frame.reset_index(), str(a), str(b))
    assert "Fieller" in lines[3] and any(line.startswith("ngram:") and "nothing declared" in line for line in lines)


def test_reads_an_archive_like_a_folder(tmp_path):
    a, b = _sweeps(tmp_path)
    archive = tmp_path / "b.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted((b / "results").rglob("*.json")):
            data = path.read_bytes()
            info = tarfile.TarInfo("specsweep-0123/" + path.relative_to(b).as_posix())
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    from_folder = compare.compare(compare.load(a), compare.load(b))
    from_archive = compare.compare(compare.load(a), compare.load(archive))
    assert from_folder.equals(from_archive)


def test_the_compare_job_writes_the_table_the_figure_and_the_findings(tmp_path):
    a, b = _sweeps(tmp_path)
    progress = io.StringIO()
    compare.write(str(a), str(b), str(tmp_path / "comparison.csv"), str(tmp_path / "comparison.png"), progress)
    written = pd.read_csv(tmp_path / "comparison.csv")
    assert list(written.columns) == list(compare.COLUMNS) and len(written) == 5
    assert (tmp_path / "comparison.png").stat().st_size > 0 and (tmp_path / "comparison.svg").exists()
    assert "ngram:" in progress.getvalue()


def test_rejects_what_is_not_a_result_set(tmp_path):
    with pytest.raises(FileNotFoundError):
        compare.load(tmp_path / "missing")
    (tmp_path / "empty" / "results").mkdir(parents=True)
    with pytest.raises(ValueError, match="no results"):
        compare.load(tmp_path / "empty")


def test_match_by_name_compares_pairs_whose_parameters_differ_on_purpose(tmp_path):
    a, b = _sweeps(tmp_path)
    frame = compare.compare(compare.load(a), compare.load(b), match="name").set_index("configuration")
    retuned = frame.loc["retuned"]
    assert retuned["status"] == "compared" and retuned["differences"] == "args -t: 2 -> 1"
    assert retuned["ratio"] == pytest.approx(71.0 / 51.0) and retuned["p_value"] < 0.05
    assert frame.loc["ngram", "status"] == "compared" and frame.loc["ngram", "differences"] == ""
    lines = compare.describe(frame.reset_index(), str(a), str(b))
    assert any(line.startswith("retuned:") and line.endswith("; parameters differ: args -t: 2 -> 1") for line in lines)
    with pytest.raises(ValueError, match="compare/match"):
        compare.compare(compare.load(a), compare.load(b), match="names")


def test_nothing_compared_is_said_in_the_log_and_in_the_figure(tmp_path):
    from specsweep.report import figures

    cpu = _write_sweep(tmp_path / "cpu", {"baseline": [10.0, 11.0, 12.0]})
    gpu = _write_sweep(tmp_path / "gpu", {"baseline": [100.0, 101.0, 99.0]}, args={"baseline": {"-ngl": 99}})
    frame = compare.compare(compare.load(cpu), compare.load(gpu))
    why = compare.nothing_compared(frame)
    assert why.startswith("nothing compared: the 1 configuration(s) in both result sets have different parameters")
    assert "match: name" in why
    assert f"WARNING: {why}" in compare.describe(frame, str(cpu), str(gpu))
    figure = figures.comparison(frame, str(cpu), str(gpu), why)
    shown = " ".join(text.get_text() for text in figure.axes[0].texts).replace("\n", " ")
    assert shown == why
    disjoint = compare.compare(compare.load(cpu), compare.load(_write_sweep(tmp_path / "x", {"other": [1.0, 2.0]})))
    assert compare.nothing_compared(disjoint).startswith("nothing compared: no configuration name is in both")
    assert compare.nothing_compared(compare.compare(compare.load(cpu), compare.load(cpu))) is None


def test_docs_give_every_comparison_column_with_the_code_meaning_in_order():
    documented = documented_columns("summary.md", "## comparison.csv columns")
    assert list(documented.items()) == list(compare.COLUMNS.items())


def _contend(run_file, pct=40.0):
    import json

    record = json.loads(run_file.read_text())
    record["telemetry"] = {
        "contention": {
            "other_cpu_pct": pct,
            "other_cpu_s": 5.0,
            "steal_pct": 0.0,
            "top_other": [{"command": "make", "cpu_s": 5.0}],
            "gpu_other_processes": [],
        }
    }
    run_file.write_text(json.dumps(record))


def test_a_comparison_across_machines_says_so_first_and_declares_nothing(tmp_path):
    """A CPU sweep against an H200 archive printed '-95.1 % ... significant' naming neither machine (issue 35,
    item 15): the machines come first, from the launch records, no difference is declared, contended runs named."""
    configuration = {"name": "baseline", "kind": "llamacpp", "args": {"-t": 2}, "env": {}, "draft_model": None}
    cpu = {"host": "laptop", "gpu_models": None, "gpu_driver": None}
    h200 = {"host": "gpu-node-7", "gpu_models": ["NVIDIA H200"], "gpu_driver": "570.1"}
    write_session(tmp_path / "a" / "results" / "baseline", configuration, [60.0, 61.0, 59.0, 60.5], {"placement": h200})
    write_session(tmp_path / "b" / "results" / "baseline", configuration, [3.0, 3.1, 2.9, 3.05], {"placement": cpu})
    _contend(tmp_path / "b" / "results" / "baseline" / "runs" / "run_2.json")
    frame = compare.compare(compare.load(tmp_path / "a"), compare.load(tmp_path / "b"))
    row = frame.iloc[0]
    assert row["status"] == "compared" and pd.isna(row["significant"])
    assert "gpu-node-7 (NVIDIA H200)" in row["warnings"] and "laptop (no GPU)" in row["warnings"]
    assert "after: run 2 contended" in row["warnings"]
    lines = compare.describe(frame, "a", "b")
    assert lines[0].startswith("compare: ACROSS MACHINES:")
    assert "gpu-node-7 (NVIDIA H200)" in lines[0] and "laptop (no GPU)" in lines[0]
    assert "nothing is declared" in lines[0]
    (finding,) = [line for line in lines if line.startswith("baseline:")]
    assert "significant" not in finding.replace("no significance declared", "")
    assert "across machines" in finding and "run 2" in finding


def test_same_machine_contended_runs_are_named_and_declare_nothing(tmp_path):
    a, b = _sweeps(tmp_path)
    _contend(b / "results" / "ngram" / "runs" / "run_1.json")
    frame = compare.compare(compare.load(a), compare.load(b)).set_index("configuration")
    assert pd.isna(frame.loc["ngram", "significant"]) and "after: run 1 contended" in frame.loc["ngram", "warnings"]
    lines = compare.describe(frame.reset_index(), "a", "b")
    assert not any("ACROSS MACHINES" in line for line in lines)
    (finding,) = [line for line in lines if line.startswith("ngram:")]
    assert "contended" in finding and "run 1" in finding


@pytest.mark.parametrize(
    ("file", "content", "why"),
    [
        ("runs/run_1.json", '{"run": 1, "prompt_index": 0, "tokens": 5, "text_sha256": "t"}', "no key 'client'"),
        ("runs/run_1.json", '{"run": 1, "prom', "Unterminated string"),
        ("runs/run_1.json", "[1, 2]", "a JSON list, not an object"),
        ("launch.json", "{", "Expecting property name"),
    ],
)
def test_a_damaged_record_is_named_with_the_fix(tmp_path, file, content, why):
    """A damaged run file gave `KeyError: 'client'` naming no file (issue 35, item 20)."""
    a, _ = _sweeps(tmp_path)
    damaged = a / "results" / "ngram" / file
    damaged.write_text(content)
    with pytest.raises(ValueError) as raised:
        compare.load(a)
    message = str(raised.value)
    assert message.startswith(f"{damaged}: damaged {'launch' if file == 'launch.json' else 'run'} record (")
    assert why in message and "restore the file from the sweep's archive" in message
    assert damaged.read_text() == content  # compare only reads: nothing set aside
    archive = tmp_path / "a.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(a / "results", arcname="specsweep-0123/results")
    with pytest.raises(ValueError, match=f"{archive}:specsweep-0123/results/ngram/{file}: damaged"):
        compare.load(archive)


def test_a_missing_result_set_names_the_path_and_what_to_give(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing: .*\(no such path\); give compare's before and after"):
        compare.load(tmp_path / "missing")


def _write_sessions(root, name, sessions):
    """A configuration measured in several sessions (server launches): ``name``, ``name-s2``, ..."""
    for k, rates in enumerate(sessions, start=1):
        folder = name if k == 1 else f"{name}-s{k}"
        configuration = {"name": folder, "kind": "llamacpp", "args": {"-t": 2}, "env": {}, "draft_model": None}
        configuration["session_of"] = None if k == 1 else name
        write_session(root / "results" / folder, configuration, rates)
    return root


def test_sessions_are_paired_and_are_the_replicate(tmp_path):
    """Issue 36 item 5: compare tested runs of one launch against runs of another, so a rerun whose launches
    sat 5 % apart was 'significant'. Session k after is paired with session k before, each session's mean
    log rate the unit: the launches' own spread decides, and a configuration is one row."""
    tight = [0.0, 0.1, -0.1, 0.05]
    before = _write_sessions(tmp_path / "a", "base", [[60 + e for e in tight], [66 + e for e in tight]])
    after = _write_sessions(tmp_path / "b", "base", [[63 + e for e in tight], [57 + e for e in tight]])
    frame = compare.compare(compare.load(before), compare.load(after))
    [row] = frame.to_dict("records")
    assert row["configuration"] == "base" and row["sessions_paired"] == 2 and row["runs_after"] == 8
    assert row["significant"] is False or row["significant"] == False  # noqa: E712
    ratio = ((63 / 60) * (57 / 66)) ** 0.5
    assert row["ratio"] == pytest.approx(ratio, rel=1e-4)
    assert row["ratio"] == pytest.approx(row["decode_tok_s_after"] / row["decode_tok_s_before"])
    assert row["ratio_ci95_low"] < ratio < row["ratio_ci95_high"]
    assert compare.ONE_LAUNCH_EACH not in row["warnings"]


def test_a_change_over_paired_sessions_is_declared(tmp_path):
    before = _write_sessions(tmp_path / "a", "ngram", [[90.0, 91.0], [93.0, 92.0], [89.0, 90.0]])
    after = _write_sessions(tmp_path / "b", "ngram", [[120.0, 121.0], [124.0, 123.0], [118.0, 119.0]])
    [row] = compare.compare(compare.load(before), compare.load(after)).to_dict("records")
    assert row["sessions_paired"] == 3 and bool(row["significant"]) and row["p_value"] < 0.05
    lines = compare.describe(pd.DataFrame([row]), "a", "b")
    assert any(line.startswith("ngram:") and "(significant)" in line for line in lines)


def test_one_session_each_declares_nothing(tmp_path):
    """Runs of one launch on each side: the within-launch interval is given, no difference declared."""
    before = _write_sessions(tmp_path / "a", "base", [[60.0, 60.1, 59.9, 60.05]])
    after = _write_sessions(tmp_path / "b", "base", [[63.0, 63.1, 62.9, 63.05]])
    [row] = compare.compare(compare.load(before), compare.load(after)).to_dict("records")
    assert row["sessions_paired"] == 1 and pd.isna(row["significant"]) and row["p_value"] < 0.05
    assert compare.ONE_LAUNCH_EACH in row["warnings"]
    lines = compare.describe(pd.DataFrame([row]), "a", "b")
    (finding,) = [line for line in lines if line.startswith("base:")]
    assert "nothing declared" in finding and "(significant)" not in finding
