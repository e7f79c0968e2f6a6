"""Markdown building blocks every generated document shares: a safe table cell and a table."""

from __future__ import annotations


def cell(text: str) -> str:
    """Free text made safe for one markdown table cell or list line: one line, pipes escaped,
    and `<`/`>` as entities so that `<tier>` is shown rather than taken for an HTML tag."""
    one_line = " ".join(str(text).split())
    return one_line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines
