"""Names that changed: the old spelling still works for now, with a ``DeprecationWarning``.

embedlab names one idea one way, and the flag that sets a parameter is that
parameter's name (``growth_factor`` is ``--growth-factor``). Where a Python
keyword or a public name had another spelling before, the old one is still
accepted: ``renamed`` maps old keywords of a function to new ones,
``renamed_names`` old names of a module to new ones. Each use warns once per
call site (Python's default filter), naming the new spelling.

Standard library only: the API's front door (``embedlab.api``) uses it, and
``import embedlab`` needs nothing else.

>>> import warnings
>>> @renamed(factor="growth_factor")
... def grow(V, *, growth_factor=2):
...     return V * growth_factor
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     grow(10, factor=3), caught[0].category.__name__
(30, 'DeprecationWarning')
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, TypeVar

__all__ = ["renamed", "renamed_names"]

F = TypeVar("F", bound=Callable[..., Any])


def renamed(**old_to_new: str) -> Callable[[F], F]:
    """A decorator: each keyword ``old`` given to the function is passed on as ``new``, with a warning.

    The function's own signature, docstring and module are kept (``functools.wraps``;
    ``inspect.unwrap`` reaches the function itself).

    Raises
    ------
    TypeError
        When a call gives both the old and the new keyword, as Python does for a
        keyword given twice.
    """
    def decorate(function: F) -> F:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            used = [old for old in old_to_new if old in kwargs]
            for old in used:
                new = old_to_new[old]
                if new in kwargs:
                    raise TypeError(f"{function.__name__}() got {new}= and its old name {old}=: give {new}= alone")
                kwargs[new] = kwargs.pop(old)
            if used:  # one warning a call, naming every old keyword it used
                name = function.__name__
                before = ", ".join(f"{old}=..." for old in used)
                after = ", ".join(f"{old_to_new[old]}=..." for old in used)
                warnings.warn(f"{name}({before}) is now {name}({after}); the old names will be removed",
                              DeprecationWarning, stacklevel=2)
            return function(*args, **kwargs)

        call.renamed = dict(old_to_new)  # type: ignore[attr-defined]  # for help and for tests
        return call  # type: ignore[return-value]

    return decorate


def renamed_names(module: str, namespace: dict[str, Any], old_to_new: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that answers each old name with the new name's object, with a warning.

    ``module`` is the module's name (for the messages), ``namespace`` its
    ``globals()``. Any other missing name is an ``AttributeError``, as without it.
    """
    def __getattr__(name: str) -> Any:
        if name in old_to_new:
            new = old_to_new[name]
            warnings.warn(f"{module}.{name} is now {module}.{new}; {name} will be removed", DeprecationWarning,
                          stacklevel=2)
            return namespace[new]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
