"""embedlab.plot: one call measures and draws a figure; options that do not apply are refused."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import embedlab  # noqa: E402
from embedlab import embed  # noqa: E402
from embedlab.figures import OPTIONS  # noqa: E402

ROWS = embed.make_table(30, 4, 5)
SRC = Path(__file__).resolve().parents[1] / "src"


def test_norms_labels_the_longest_rows_of_the_table():
    fig = embedlab.plot("norms", ROWS, top=3, lang="en")
    lengths = np.linalg.norm(np.array(ROWS), axis=1)
    longest = np.argsort(-lengths, kind="stable")[:3]
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert all(any(str(i) in text for text in texts) for i in longest)  # rows without vocabulary: labelled by id
    assert "longest 3 labelled" in fig.axes[0].get_title()


@pytest.mark.parametrize("figure, option", [("bands", "probe"), ("norms", "method"), ("scale", "top"),
                                            ("positions", "k")])
def test_an_option_the_figure_does_not_take_is_refused(figure, option):
    assert option not in OPTIONS[figure]
    with pytest.raises(TypeError, match=f"{option} does not apply to the {figure} figure"):
        embedlab.plot(figure, ROWS, **{option: 1})


def test_perplexity_without_tsne_and_k_beside_tokens_are_refused():
    with pytest.raises(ValueError, match="perplexity applies to method='tsne' only"):
        embedlab.plot("projection", ROWS, method="pca", perplexity=5.0)
    with pytest.raises(TypeError, match="k do not apply with tokens"):
        embedlab.plot("projection", ROWS, tokens=[0, 1, 2], k=3)
    with pytest.raises(ValueError, match="unknown figure 'nope'"):
        embedlab.plot("nope", ROWS)


def test_a_probe_beside_tokens_is_added_and_marked_as_the_projector_does():
    from embedlab.report.locales import WORDS

    fig = embedlab.plot("projection", ROWS, tokens=[1, 2, 3], probe=7, lang="en")
    by_group = {c.get_label(): c.get_offsets() for c in fig.axes[0].collections}
    assert len(by_group[WORDS["en"]["figures"]["group_probe"]]) == 1  # the probe, drawn as a star
    assert len(by_group[WORDS["en"]["figures"]["group_chosen"]]) == 3  # the tokens given
    assert "4" in fig.axes[0].get_title()  # four rows projected
    both = embedlab.plot("projection", ROWS, tokens=[1, 7, 3], probe=7, lang="en")  # a probe among them: once
    by_group = {c.get_label(): c.get_offsets() for c in both.axes[0].collections}
    assert len(by_group[WORDS["en"]["figures"]["group_probe"]]) == 1 and len(by_group[WORDS["en"]["figures"]["group_chosen"]]) == 2


def test_the_scale_figure_shrinks_its_default_k_to_a_small_table():
    small = embed.make_table(4, 3, 1)
    fig = embedlab.plot("scale", small, probe=0)  # default k 10 > V - 1 = 3: shrunk, not refused
    assert fig.axes


def test_without_matplotlib_plot_names_the_plots_extra():
    # report.plots imports matplotlib at its top; figures.plot, on the import-free path, imports it on first
    # use and turns the missing module into a MissingExtraError. A fresh interpreter: here it is imported.
    code = ("import json, sys; sys.modules['matplotlib'] = None\n"
            "import embedlab\n"
            "try:\n"
            "    embedlab.plot('norms', [[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])\n"
            "except ImportError as exc:\n"
            "    print(json.dumps([type(exc).__name__, list(exc.extras), exc.name, str(exc)]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["MissingExtraError", ["plots"], "matplotlib", "figures need matplotlib, which "
                                       "is not installed: pip install -c constraints.txt -e '.[plots]'"]
