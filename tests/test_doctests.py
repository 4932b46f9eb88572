"""The tiny worked examples in the docstrings run and hold."""

import doctest
import importlib

import pytest

MODULES = ["embed", "vocabulary", "table", "render", "lab", "sources", "checkpoint", "projection"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"embedlab.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
