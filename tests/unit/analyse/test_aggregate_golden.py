"""summary.csv of a synthetic sweep is byte for byte what it was when the statistics last changed on purpose.

tests/fixtures/summary_golden.csv was written by ``python tests/unit/analyse/test_aggregate_golden.py`` when issue 21
made the session the replicate (analyse/replicates.py: log scale, pooled spread, Holm); until then it
held commit 2f86af2's per-run statistics. A change of any number here is a change of the method: rewrite
the file with that command and say why in the commit.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from run_records import runs_of

from specsweep.analyse.aggregate import summarise, write_csv
from specsweep.plan.config import Configuration

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "summary_golden.csv"


def sweep() -> tuple[dict[str, Configuration], dict[str, list[dict[str, Any]]]]:
    """Run counts 12, 5, 5, 3, 2, 1 and 0, one with no spread, unequal spreads, speculation on some."""
    rng = random.Random(20261129)
    shapes = {
        "baseline": (12, 80.0, 4.0),
        "a": (5, 120.0, 9.0),
        "b": (5, 81.0, 0.5),
        "c": (3, 95.0, 2.0),
        "d": (2, 40.0, 1.0),
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


def test_summary_is_byte_identical_to_the_golden_file(tmp_path):
    configurations, runs = sweep()
    summary = summarise(configurations, runs_of(runs), {})
    assert summary["compared_with"].isna()[0] and list(summary["compared_with"][1:]) == ["baseline"] * 7
    write_csv(summary, tmp_path / "summary.csv")
    assert (tmp_path / "summary.csv").read_text() == GOLDEN.read_text()


if __name__ == "__main__":
    configurations, runs = sweep()
    write_csv(summarise(configurations, runs_of(runs), {}), GOLDEN)
    print(f"written {GOLDEN}", file=sys.stderr)
