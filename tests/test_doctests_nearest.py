"""The worked examples in the docstrings of the search modules run and hold."""

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["nearest", "neighbors", "hubs", "table"])
def test_docstring_examples(name):
    module = importlib.import_module(f"embedlab.{name}")
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE).failed == 0
