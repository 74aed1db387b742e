"""End to end on the real llama-server: an external endpoint started by hand, and a user regex
profile parser on llama.cpp's print_timing lines reaching profile.csv, summary.csv and the
cycle-breakdown figure.

One tiny sweep (2 runs x 32 tokens per configuration): `baseline` and `ngram` on the embedded
engine (launched by specsweep), `external` on a llama-server this test starts itself in its own
process group on 127.0.0.1 and stops afterwards.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
import requests
import yaml
from workflow_runs import snakemake

from specsweep.engines.server import free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.engine

# llama.cpp b11434 tools/server/server-context.cpp print_timing: "prompt eval time = X ms / N tokens" and
# "       eval time = X ms / N tokens" are separate lines of one request; one of the two groups matches each.
TIMING = {
    "pattern": r"print_timing: .*\| (?:prompt eval time =\s*(?P<prompt_ms>[\d.]+) ms"
    r"|\s+eval time =\s*(?P<eval_ms>[\d.]+) ms /\s*(?P<eval_tokens>\d+) tokens)",
    "units": {"prompt_ms": "ms", "eval_ms": "ms", "eval_tokens": "tokens"},
    "breakdown": ["prompt_ms", "eval_ms"],
    "skip_first": 2,
}  # the warmup request's two lines


@pytest.fixture(scope="module")
def hand_started_server(tmp_path_factory, real_engine):
    """A llama-server started the way a user would, outside specsweep: own process group, 127.0.0.1."""
    binary, model = str(real_engine.server), str(real_engine.model)
    log = tmp_path_factory.mktemp("external") / "llama-server.log"
    port = free_port("127.0.0.1")
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                binary,
                "-m",
                model,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "-c",
                "1024",
                "-np",
                "1",
                "-t",
                "1",  # as tests/data/config.yaml: beside other tests, one thread
                "--metrics",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert process.poll() is None, log.read_text()[-2000:]
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}", log, process
    finally:
        for sig, wait in ((signal.SIGTERM, 3), (signal.SIGTERM, 2), (signal.SIGKILL, 5)):
            if process.poll() is not None:
                break
            os.killpg(process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=wait)
        assert process.poll() is not None


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, hand_started_server):
    base_url, log, _ = hand_started_server
    config = yaml.safe_load((REPO / "tests" / "data" / "config.yaml").read_text())
    config["benchmark"].update(prompts=str(REPO / "config" / "prompts.txt"), max_tokens=32)
    config["engines"]["ext"] = {
        "kind": "external",
        "external": {"base_url": base_url, "server_log": str(log), "log_format": "llamacpp"},
    }
    config["configurations"]["baseline"]["engine"] = "llama"
    config["configurations"]["ngram"]["engine"] = "llama"
    config["configurations"]["external"] = {"engine": "ext", "description": "llama-server started by hand"}
    config["profile_parsers"] = {"timing": TIMING}
    workdir = tmp_path_factory.mktemp("sweep-external")
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = snakemake(workdir, "all", timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    return workdir


def test_external_endpoint_runs_the_benchmark(sweep, hand_started_server):
    _, _, process = hand_started_server
    summary = pd.read_csv(sweep / "results" / "summary.csv").set_index("configuration")
    external = summary.loc["external"]
    # both runs measured; the rate check may set one aside when the tests beside it starve the client (a 32-token
    # run's client and engine rates then differ by more than 10 %): it counts as measured, not as lost
    assert external["kind"] == "external" and external["tokens_per_run"] == 32
    assert external["runs"] >= 1 and external["runs"] + external["runs_excluded"] == 2
    assert external["decode_tok_s_mean"] > 1
    assert process.poll() is None  # specsweep did not stop a server it did not start
    launch = (sweep / "results" / "external" / "launch.json").read_text()
    assert '"argv": []' in launch and '"status": "completed"' in launch
    # the endpoint's log, as far as it grew during the session, was copied and parsed
    profile = pd.read_csv(sweep / "results" / "external" / "profile.csv")
    llamacpp_rows = profile[profile["source"] == "llamacpp"]
    assert list(llamacpp_rows["phase"]) == ["warmup", "run", "run"]
    assert (llamacpp_rows.loc[llamacpp_rows["phase"] == "run", "eval_tokens"] == 32).all()


def test_user_parser_reaches_profile_summary_and_figure(sweep):
    for name in ("baseline", "ngram", "external"):
        header = (sweep / "results" / name / "profile.csv").read_text().splitlines()[0].split(",")
        assert len(header) == len(set(header))  # user columns named like engine columns share them
        profile = pd.read_csv(sweep / "results" / name / "profile.csv")
        timing = profile[profile["source"] == "timing"]
        assert list(timing["phase"]) == ["warmup", "warmup", "run", "run", "run", "run"]
        # the user parser read the same numbers as the built-in llama.cpp parser
        engine_rows = profile[(profile["source"] == "llamacpp") & (profile["phase"] == "run")]
        user_runs = timing.loc[timing["phase"] == "run", "eval_ms"].dropna()
        assert list(user_runs) == list(engine_rows["eval_ms"])
    summary = pd.read_csv(sweep / "results" / "summary.csv").set_index("configuration")
    for column in ("timing_rows", "timing_eval_ms_mean", "timing_eval_ms_median", "timing_prompt_ms_mean"):
        assert column in summary.columns
    assert (summary["timing_rows"] == 4).all()
    assert (summary["timing_eval_tokens_mean"] == 32).all()
    assert (summary["timing_eval_ms_mean"] > 0).all()
    assert (sweep / "results" / "figures" / "cycle_breakdown.png").stat().st_size > 1000
