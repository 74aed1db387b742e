"""summary.csv of a synthetic sweep is byte for byte what the per-configuration statistics wrote before
the configurations were computed together (stats.describe_many).

tests/fixtures/summary_golden.csv was written by commit 2f86af2's ``aggregate.summarise`` from ``sweep()``
below (its run records as JSON, which that commit read): ``git worktree add /tmp/old 2f86af2 &&
PYTHONPATH=/tmp/old/src python tests/test_aggregate_golden.py``.
The empty ``host`` column (no launch records here) was inserted later; every number is unchanged.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from specsweep.analyse.aggregate import summarise, write_csv
from specsweep.plan.config import Configuration

GOLDEN = Path(__file__).parent / "fixtures" / "summary_golden.csv"


def sweep() -> tuple[dict[str, Configuration], dict[str, list[dict[str, Any]]]]:
    """Run counts 12, 5, 5, 3, 2, 1 and 0, one with no spread, unequal spreads, speculation on some."""
    rng = random.Random(20261129)
    shapes = {
        "baseline": (12, 80.0, 4.0),
        "a": (5, 120.0, 9.0),
        "b": (5, 81.0, 0.5),
        "c": (3, 95.0, 2.0),
        "d": (2, 60.0, 1.0),
        "e": (1, 70.0, 0.0),
        "f": (0, 0.0, 0.0),
        "flat": (5, 90.0, 0.0),
    }
    configurations = {
        name: Configuration(
            name=name,
            engine="llama",
            kind="llamacpp",
            baseline=name == "baseline",
            args={"--spec-ngram-simple-size-m": i},
            env={},
            axes={"--spec-ngram-simple-size-m": i},
            group="g",
        )
        for i, name in enumerate(shapes)
    }
    runs = {}
    for name, (count, mean, spread) in shapes.items():
        spec = None if name == "baseline" else {"drafted": 400, "accepted": 250 + len(name), "verify_steps": 120}
        runs[name] = [
            {
                "run": r,
                "prompt_index": r % 3,
                "tokens": 500,
                "text_sha256": f"t{r % 3}",
                "client": {
                    "decode_tokens_per_s": round(rng.gauss(mean, spread), 3) if spread else mean,
                    "ttft_s": 0.05 + rng.random() / 10,
                    "itl_median_s": 0.01,
                },
                "engine": {"timings": {"predicted_per_second": rng.gauss(mean, spread)}},
                "speculation": spec,
            }
            for r in range(count)
        ]
    return configurations, runs


def test_summary_is_byte_identical_to_the_per_configuration_statistics(tmp_path):
    """The golden file predates the compared_with column (which baseline; one here): the rest is unchanged."""
    from run_records import runs_of  # typed records: not in the code that wrote the golden file

    configurations, runs = sweep()
    summary = summarise(configurations, runs_of(runs), {})
    assert summary["compared_with"].isna()[0] and list(summary["compared_with"][1:]) == ["baseline"] * 7
    write_csv(summary.drop(columns="compared_with"), tmp_path / "summary.csv")
    assert (tmp_path / "summary.csv").read_text() == GOLDEN.read_text()


if __name__ == "__main__":  # with the code of commit 2f86af2 on PYTHONPATH (see above): it reads the JSON form
    write_csv(summarise(*sweep(), {}), GOLDEN)
    print(f"written {GOLDEN}", file=sys.stderr)
