"""Renderers: results -> JSON, Markdown, terminal text, HTML and figures, and file writing.

A renderer never computes: it formats the values a measurement returned.
"""
