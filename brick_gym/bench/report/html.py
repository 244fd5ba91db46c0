"""HTML building blocks of the report: every piece of text escaped on the way in, bounded in length, and one page
shell (title, stylesheet, scripts) that works from disk.

Text from run folders is untrusted: it only ever reaches a page through :func:`text` (or :func:`pre`, :func:`fmt`),
which HTML-escape it (quotes included) after cutting it to a bounded length. Attribute values and links are made
here from our own names (file names checked by the collector), and still escaped.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["MAX_TEXT_CHARS", "details", "fmt", "link", "page", "pre", "table", "text"]

MAX_TEXT_CHARS = 20_000
"""Characters of one text shown on a page (a tool result, a reply); the rest is cut with a note of how much."""


def text(value: Any, limit: int = MAX_TEXT_CHARS) -> str:
    """``value`` as escaped HTML text, cut to ``limit`` characters with a note of what was left out."""
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    cut = ""
    if len(s) > limit:
        cut = f" … ({len(s) - limit:,} more characters not shown)"
        s = s[:limit]
    return html.escape(s, quote=True) + html.escape(cut)


def pre(value: Any, limit: int = MAX_TEXT_CHARS, cls: str = "") -> str:
    """A ``<pre>`` block of escaped text."""
    attr = f' class="{html.escape(cls)}"' if cls else ""
    return f"<pre{attr}>{text(value, limit)}</pre>"


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table cell (``—`` for None, NaN or inf); anything else escaped."""
    if value is None or isinstance(value, bool):
        return "—" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else "—"
    return text(value, 200)


def link(href: str, label: str) -> str:
    """An ``<a>`` to one of the report's own relative paths."""
    return f'<a href="{html.escape(href, quote=True)}">{text(label, 300)}</a>'


def details(summary: str, body: str, open_: bool = False) -> str:
    """A collapsible block; ``summary`` is escaped, ``body`` is HTML already made by these helpers."""
    return f"<details{' open' if open_ else ''}><summary>{text(summary, 300)}</summary>{body}</details>"


def table(head: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table; ``head`` escaped, each row's cells HTML already made by these helpers."""
    attr = f' class="{html.escape(cls)}"' if cls else ""
    out = [f"<table{attr}><thead><tr>", *(f"<th>{text(h, 200)}</th>" for h in head), "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def page(
    title: str, body: str, *, root: str, scripts: Sequence[str] = (), crumbs: Sequence[tuple[str, str]] = ()
) -> str:
    """A whole page: ``root`` is the relative path to the report's top folder (``.``, ``../..``), ``scripts`` the
    page-relative classic scripts to load after the body, ``crumbs`` (href, label) links shown above the title."""
    nav = " › ".join(link(h, label) for h, label in crumbs)
    tags = "".join(f'<script src="{html.escape(s, quote=True)}"></script>' for s in scripts)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title, 300)}</title>"
        f'<link rel="stylesheet" href="{html.escape(root, quote=True)}/assets/style.css"></head>'
        f"<body><nav>{nav}</nav><h1>{text(title, 300)}</h1>{body}{tags}</body></html>\n"
    )
