"""Measurements: one experiment per module, each returning a frozen result with ``to_dict()``.

A measurement never prints and never writes files; ``embedlab.report`` renders
what it returns.
"""
