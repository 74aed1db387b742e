"""'noisy' is not judged from one degree of freedom: two sessions' spread says little about a configuration."""

from __future__ import annotations

from specsweep.analyse import aggregate, conclusion
from specsweep.plan import design
from specsweep.plan.config import Configuration
from specsweep.record.results import Run


def _run(index: int, rate: float) -> Run:
    client = {"decode_s": 99 / rate, "decode_tokens_per_s": rate, "ttft_s": 0.05, "itl_median_s": 1 / rate}
    return Run.from_json({"run": index, "prompt_index": index, "tokens": 100, "text_sha256": "t", "client": client})


def _summary(tmp_path, sessions: int, launches: list[float]):
    """base steady, 'jumpy' with launches this far apart, one run per prompt (no within-session spread)."""
    base = {n: Configuration(n, "llama", "llamacpp", n == "base", {}, {}, group=n) for n in ("base", "jumpy")}
    configurations = design.with_sessions(base, sessions)
    runs = {}
    for name, c in configurations.items():
        k = design.sessions_of(configurations)[c.session_of or name].index(name)
        scale = launches[k] if (c.session_of or name) == "jumpy" else 1.0 + 0.001 * k
        runs[name] = [_run(i, 50.0 * scale * (1 + 0.001 * i)) for i in range(3)]
    path = tmp_path / "summary.csv"
    aggregate.write_csv(aggregate.summarise(configurations, runs, {}), path)
    return conclusion.read(path)


def test_two_sessions_do_not_judge_noisy(tmp_path):
    rows = _summary(tmp_path, 2, [1.0, 1.25])  # a 22 % between-session CV, from one degree of freedom
    jumpy = next(r for r in rows if r["configuration"] == "jumpy")
    assert jumpy["decode_tok_s_cv"] == "" and "noisy" not in jumpy["warnings"]
    text = conclusion.lines(rows)
    assert "  noisy: none" in text
    assert any(line.startswith("  noisy not judged (2 sessions") and "jumpy" in line for line in text)


def test_three_sessions_judge_noisy_on_the_launches(tmp_path):
    rows = _summary(tmp_path, 3, [1.0, 1.25, 0.9])
    text = conclusion.lines(rows)
    assert any(line.startswith("  noisy: jumpy (CV") for line in text)
    assert not any("not judged" in line for line in text)
