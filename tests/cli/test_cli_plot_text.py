"""embedlab plot --lang, and the note about tokens no font can draw, as a user meets them."""

import re

import pytest

pytest.importorskip("matplotlib")

from embedlab import cli  # noqa: E402
from embedlab.report import plots  # noqa: E402
from embedlab.report.locales import DEFAULT_LANGUAGE, LANGUAGES, WORDS  # noqa: E402

FIGURES = ["projection", "norms", "neighbors", "scale", "positions", "bands"]
UNICORN = "\N{UNICORN FACE}"


@pytest.fixture
def drawn(monkeypatch):
    """The figures the CLI writes, kept as objects to read their text."""
    figures = []
    real = plots.png_bytes
    monkeypatch.setattr(plots, "png_bytes", lambda fig: figures.append(fig) or real(fig))
    return figures


def _title(fig):
    return fig._suptitle.get_text() if fig._suptitle is not None else fig.axes[0].get_title()


@pytest.mark.parametrize("lang", [None, *LANGUAGES])
def test_plot_lang_chooses_the_words_of_the_figure(tmp_path, drawn, lang):
    argv = ["plot", "bands", "--out", str(tmp_path / "b.png"), "--quiet"] + (["--lang", lang] if lang else [])
    assert cli.main(argv) == 0
    assert _title(drawn[0]) == WORDS[lang or DEFAULT_LANGUAGE]["figures"]["bands_title"]


@pytest.mark.parametrize("figure", FIGURES)
def test_every_plot_figure_takes_lang(tmp_path, drawn, figure):
    assert cli.main(["plot", figure, "--lang", "en", "--size", "400x300", "--out", str(tmp_path / "f.png"),
                     "--quiet"]) == 0
    texts = [t.get_text() for ax in drawn[0].axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label) if t.get_text()]
    assert texts and all(_says(text, "en") and not _says(text, "ko") for text in texts), texts


def _says(text, lang):
    """True when ``text`` is one of ``lang``'s figure words, or two of them in a row (a projection's title and
    the distance it keeps), their fields filled in."""
    one = "|".join(re.sub(r"\\\{\w+\\\}", ".+", re.escape(t)) for t in WORDS[lang]["figures"].values())
    return re.fullmatch(f"(?:{one})(?:{one})?" + r"( \(.+\))?", text) is not None


@pytest.mark.parametrize("figure", FIGURES)
def test_help_names_lang_and_its_choices(capsys, figure):
    with pytest.raises(SystemExit):
        cli.main(["plot", figure, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--lang {ko,en,ja,zh}" in out and f"(default {DEFAULT_LANGUAGE})" in out


def test_a_bad_lang_is_a_usage_error_naming_it_and_the_choices(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["plot", "norms", "--lang", "fr", "--out", str(tmp_path / "f.png")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --lang: invalid choice: 'fr'" in err and "'ko', 'en', 'ja', 'zh'" in err
    assert list(tmp_path.iterdir()) == []


def test_a_token_no_font_has_is_named_once_on_the_terminal(tmp_path, capsys):
    np = pytest.importorskip("numpy")
    np.save(tmp_path / "t.npy", np.random.default_rng(0).normal(size=(6, 4)))
    (tmp_path / "w.txt").write_text("\n".join(["king", "queen", UNICORN, "王", "한국어", "かな"]) + "\n", encoding="utf-8")
    out = tmp_path / "p.png"
    assert cli.main(["plot", "projection", "--model", str(tmp_path / "t.npy"), "--words", str(tmp_path / "w.txt"),
                     "--tokens", f"king,queen,{UNICORN},王,한국어,かな", "--out", str(out), "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    notes = [line for line in lines if line.startswith("note:")]
    assert notes == [f"note: 1 token drawn with \N{REPLACEMENT CHARACTER} in place of characters no installed font "
                     f"has: '{UNICORN}'"]
    assert out.exists()
