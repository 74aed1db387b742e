from __future__ import annotations

import pandas as pd

from specsweep.report import figures


def _summary() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "configuration": ["baseline", "ngram-m3", "ngram-m8", "draft"],
            "group": ["baseline", "ngram", "ngram", "draft"],
            "--spec-ngram-simple-size-m": [None, 3, 8, None],
            "--spec-type": [None, "ngram-simple", "ngram-simple", "draft-simple"],
            "drafted": [None, 100, 200, 300],
            "acceptance_rate": [None, 0.9, 0.8, 1.0],
            "accept_length": [None, 3.5, 6.0, 4.0],
            "speedup": [1.0, 1.2, 1.4, 0.5],
            "speedup_ci95_low": [None, 1.1, 1.3, 0.4],
            "speedup_ci95_high": [None, 1.3, 1.5, 0.6],
            "baseline": [True, False, False, False],
        }
    )


def test_swept_axes_finds_the_one_numeric_parameter_of_each_grid():
    assert figures.swept_axes(_summary()) == {"ngram": "--spec-ngram-simple-size-m"}


def test_acceptance_figure_adds_the_parameter_row_for_grids(tmp_path):
    figure = figures.acceptance(_summary())
    assert len(figure.axes) == 4
    assert figure.axes[2].get_xlabel() == "swept parameter: --spec-ngram-simple-size-m"
    written = figures.save(figure, tmp_path / "acceptance")
    assert all(p.stat().st_size > 1000 for p in written)


def test_figures_are_byte_identical_when_redrawn(tmp_path):
    first = figures.save(figures.acceptance(_summary()), tmp_path / "a")
    second = figures.save(figures.acceptance(_summary()), tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_every_figure_is_also_a_pdf(tmp_path):
    written = figures.save(figures.acceptance(_summary()), tmp_path / "acceptance")
    assert [p.name for p in written] == ["acceptance.png", "acceptance.svg", "acceptance.pdf"]
    assert written[2].read_bytes().startswith(b"%PDF-")


def test_speedup_bars_carry_their_confidence_intervals():
    figure = figures.acceptance(_summary())
    speed_axes = figure.axes[1]
    (bars,) = speed_axes.containers[:1]
    caps = [c for c in speed_axes.containers if c.__class__.__name__ == "ErrorbarContainer"]
    assert len(caps) == 1 and caps[0].get_label() == "95 % CI (sessions, log scale)"
    (segments,) = caps[0].lines[2]  # one LineCollection of x error segments, one per bar
    spans = sorted((float(a[0]), float(b[0])) for a, b in segments.get_segments())
    assert spans == [(0.4, 0.6), (1.1, 1.3), (1.3, 1.5)] and len(bars) == 3


def test_throughput_percent_labels_say_when_a_difference_is_not_significant():
    """Issue 26: the throughput figure's percent labels carry the conclusion's verdict."""
    summary = _summary().assign(
        decode_tok_s_mean=[50.0, 60.0, 70.0, 25.0],
        decode_tok_s_ci95_low=[48.0, 55.0, 68.0, 24.0],
        decode_tok_s_ci95_high=[52.0, 65.0, 72.0, 26.0],
        speedup_pct=[0.0, 20.0, 40.0, -50.0],
        significant=[None, False, True, None],
        runs=[7, 7, 7, 7],
    )
    runs = pd.DataFrame({"configuration": ["baseline"], "decode_tok_s": [50.0]})
    figure = figures.throughput(summary, runs)
    labels = [t.get_text() for t in figure.axes[0].texts]
    assert labels == ["+0.0 %", "+20.0 % (n.s.)", "+40.0 %", "-50.0 % (no test)"]
