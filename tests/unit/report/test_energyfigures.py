"""The efficiency frontier and the figures of tokens per joule (report/energyfigures.py)."""

from __future__ import annotations

import pandas as pd

from specsweep.report import energyfigures, figures

NOT_MEASURED = "not measured: no GPU visible through NVML (NVMLError_LibraryNotFound); no RAPL energy counter"


def test_the_frontier_keeps_only_configurations_no_other_beats_on_both():
    points = [(100.0, 2.0), (120.0, 1.5), (90.0, 1.9), (110.0, 2.0), (130.0, 1.0)]
    # (100, 2.0) is beaten by (110, 2.0); (90, 1.9) by both; the rest trade speed for efficiency
    assert energyfigures.frontier(points) == [3, 1, 4]


def _summary(per_joule):
    return pd.DataFrame(
        {
            "configuration": ["baseline", "ngram", "draft"],
            "baseline": [True, False, False],
            "decode_tok_s_mean": [80.0, 95.0, 70.0],
            "decode_tok_s_ci95_low": [78.0, 90.0, 65.0],
            "decode_tok_s_ci95_high": [82.0, 100.0, 75.0],
            "energy_source": ["nvml energy counter"] * 3 if per_joule else [NOT_MEASURED] * 3,
            "tokens_per_joule_mean": per_joule or [None] * 3,
            "tokens_per_joule_ci95_low": [p - 0.1 for p in per_joule] if per_joule else [None] * 3,
            "tokens_per_joule_ci95_high": [p + 0.1 for p in per_joule] if per_joule else [None] * 3,
        }
    )


def _texts(figure):
    return [t.get_text() for axes in figure.axes for t in axes.texts]


def test_the_efficiency_figure_joins_the_frontier(tmp_path):
    figure = energyfigures.efficiency(_summary([2.0, 1.8, 1.2]))
    (line,) = [line for line in figure.axes[0].lines if line.get_label() == "efficiency frontier"]
    assert list(line.get_xdata()) == [80.0, 95.0]  # draft is slower and less efficient than the baseline
    written = figures.save(figure, tmp_path / "efficiency")
    assert [p.suffix for p in written] == [".png", ".svg", ".pdf"]


def test_without_energy_the_figures_say_why():
    assert any("no GPU visible" in t.replace("\n", " ") for t in _texts(energyfigures.efficiency(_summary(None))))
    load = pd.DataFrame(
        {
            "configuration": ["baseline"],
            "load_kind": ["concurrency"],
            "load_value": [4],
            "energy_source": [NOT_MEASURED],
            "tokens_per_joule_mean": [None],
        }
    )
    assert any("no GPU visible" in t.replace("\n", " ") for t in _texts(energyfigures.load_efficiency(load)))


def test_the_load_figure_draws_one_line_per_configuration():
    load = pd.DataFrame(
        {
            "configuration": ["baseline", "baseline", "ngram", "ngram"],
            "load_kind": ["concurrency"] * 4,
            "load_value": [1, 4, 1, 4],
            "energy_source": ["nvml energy counter"] * 4,
            "tokens_per_joule_mean": [1.0, 3.0, 1.2, 2.5],
            "tokens_per_joule_ci95_low": [0.9, 2.9, 1.1, 2.4],
            "tokens_per_joule_ci95_high": [1.1, 3.1, 1.3, 2.6],
        }
    )
    figure = energyfigures.load_efficiency(load)
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == ["baseline", "ngram"]
