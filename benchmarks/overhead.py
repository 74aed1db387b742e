"""Pipeline overhead: wall time of ``snakemake --cores 1 all`` ÷ time the engine processes were alive.

Engine time per configuration = ``launched_at`` → ``stopped_at`` in its launch.json (start-up,
readiness, warmup, runs and stop). Where the rest goes comes from Snakemake's own per-job start
and end times (``.snakemake/metadata``), grouped by rule; the remainder is Snakemake itself (start,
DAG, scheduling). Time a bench job spent waiting for the machine-wide measuring lock (another
developer measuring) is watched from the job's log and subtracted from the wall time.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, run_child, snakemake_argv, spread

SMALL = REPO / "tests" / "data" / "config.yaml"  # 2 configurations x 2 runs x 64 tokens
DEFAULT = REPO / "config" / "config.yaml"


def _epoch(iso: str) -> float:
    return dt.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC).timestamp()


class LockWatch(threading.Thread):
    """Note when each bench job starts waiting for the measuring lock (its first progress line)."""

    def __init__(self, logs: Path) -> None:
        super().__init__(daemon=True)
        self.logs, self.waiting_since, self.done = logs, {}, threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            for log in self.logs.glob("*.log") if self.logs.is_dir() else []:
                if log.stem not in self.waiting_since and "waiting for exclusive use" in log.read_text():
                    self.waiting_since[log.stem] = time.time()


def job_times(workdir: Path) -> dict[str, list[tuple[float, float]]]:
    """Per rule, the (start, end) of each job, from Snakemake's metadata (one record per output file)."""
    jobs: dict[str, set[tuple[float, float]]] = {}
    for record in (workdir / ".snakemake" / "metadata").iterdir():
        meta = json.loads(record.read_text())
        output = base64.b64decode(record.name).decode()
        if meta.get("starttime") and meta.get("endtime") and not output.startswith("results/plan"):
            # the outputs of one job share its end time; its start is the earliest
            jobs.setdefault(meta["rule"], set()).add((round(meta["endtime"], 3), meta["starttime"]))
    return {
        rule: [(min(s for e2, s in found if e2 == e), e) for e in {e for e, _ in found}] for rule, found in jobs.items()
    }


def measure(config_path: Path, keep: Path | None = None) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="specsweep-overhead-")) if keep is None else keep
    config = yaml.safe_load(config_path.read_text())
    # the sweep's own prompt set (the default: the categorised one); the test config names a placeholder
    prompts = REPO / config["benchmark"].get("prompts", "config/prompts.txt")
    config["benchmark"]["prompts"] = str(prompts if prompts.is_file() else REPO / "config" / "prompts.txt")
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    watch = LockWatch(workdir / "logs" / "bench")
    watch.start()
    started = time.time()
    run = run_child(snakemake_argv(workdir, "all"))
    watch.done.set()
    engine_s, lock_wait_s, ready_s = 0.0, 0.0, 0.0
    for launch_path in sorted(workdir.glob("results/*/launch.json")):
        launch = json.loads(launch_path.read_text())
        launched, stopped = _epoch(launch["launched_at"]), _epoch(launch["stopped_at"])
        engine_s += stopped - launched
        ready_s += launch.get("ready_s") or 0.0
        name = launch_path.parent.name
        lock_wait_s += max(0.0, launched - watch.waiting_since.get(name, launched))
    jobs = job_times(workdir)
    by_rule = {rule: sum(e - s for s, e in spans) for rule, spans in jobs.items()}
    in_jobs = sum(by_rule.values())
    wall = run.wall_s - lock_wait_s
    rest = {
        "snakemake_outside_jobs_s": run.wall_s - in_jobs,
        "bench_jobs_outside_engine_s": by_rule.get("bench", 0.0) - engine_s - lock_wait_s,
        **{f"rule_{rule}_s": t for rule, t in sorted(by_rule.items()) if rule != "bench"},
    }
    configurations = len(list(workdir.glob("results/*/launch.json")))
    return {
        "config": str(config_path.relative_to(REPO)),
        "configurations": configurations,
        "wall_s": wall,
        "engine_s": engine_s,
        "ratio": wall / engine_s,
        "lock_wait_s": lock_wait_s,
        "ready_polling_s": ready_s,
        "jobs": sum(len(v) for v in jobs.values()),
        "started": started,
        "where_the_rest_goes": rest,
        "workdir": str(workdir),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="small-sweep repetitions")
    parser.add_argument("--default", action="store_true", help="also run the default sweep once (minutes)")
    args = parser.parse_args()
    small = [measure(SMALL) for _ in range(args.repeat)]
    result = {
        "small": small,
        "small_ratio": spread([s["ratio"] for s in small]),
        "small_overhead_s": spread([s["wall_s"] - s["engine_s"] for s in small]),
    }
    if args.default:
        result["default"] = measure(DEFAULT)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
