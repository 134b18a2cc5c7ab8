"""A report as a list of blocks, written as Markdown and as one self-contained HTML page.

Both renderers walk the same blocks, so the two files cannot disagree; they
differ in styling only. The HTML page has its CSS inline and its images as
base64 PNG, so it can be mailed or archived as one file. All text is escaped:
error messages and plugin names come from files, not from us.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass
from typing import Union

from synbench.report.table import Cell, Table


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Notes:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Image:
    """A PNG: embedded in the HTML, referenced by `href` (relative to the report) from the Markdown."""

    caption: str
    png: bytes
    href: str


@dataclass(frozen=True)
class Gallery:
    images: tuple[Image, ...]


@dataclass(frozen=True)
class Details:
    """Content folded away by default (long tables of secondary keys)."""

    summary: str
    blocks: tuple["Block", ...]


Block = Union[Heading, Text, Notes, Image, Gallery, Details, Table]

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1d1d1f;
       max-width: 1320px; margin: 24px auto; padding: 0 24px; }
h1 { font-size: 24px; border-bottom: 2px solid #3b5b92; padding-bottom: 6px; }
h2 { font-size: 19px; margin-top: 34px; color: #23395d; border-bottom: 1px solid #d5dbe5; padding-bottom: 4px; }
h3 { font-size: 16px; margin-top: 22px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 6px 0 14px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d5dbe5; padding: 4px 9px; text-align: left; }
th { background: #eef2f8; text-align: center; }
/* a table too wide for the page wraps its cells rather than hide its last columns: text at spaces, a long name
   after an underscore, an interval before its ± (`html_text`), never inside a number; wide ones are set smaller */
.half { white-space: nowrap; }
table.wide { font-size: 12.5px; }
table.wide th, table.wide td { padding: 3px 6px; }
table.wider { font-size: 11.5px; }
td.num { text-align: right; }
td.wrap { text-align: left; min-width: 10em; }
tbody tr:nth-child(even) td { background: #fafbfd; }
td.best { font-weight: 700; }
td.missing { color: #8a8a8a; }
tbody tr td.baseline { font-style: italic; background: #f1f4f9; color: #444; }
tbody tr td.violation { background: #fde0e0; color: #a00000; font-weight: 700; }
figure { margin: 10px 0 18px; }
figcaption { font-size: 12px; color: #555; margin-bottom: 4px; }
figure img { max-width: 100%; border: 1px solid #e3e6eb; }
.gallery { display: flex; flex-wrap: wrap; gap: 12px; }
.gallery figure { width: 420px; margin: 0; }
.gallery figure img { width: 100%; }
ul.notes { font-size: 13px; color: #444; }
details { margin: 6px 0 16px; }
summary { cursor: pointer; color: #23395d; }
"""
WRAP_AT = 40  # cells longer than this (reasons, error messages) are left-aligned text with a width to wrap in
LONG_NAME = 12  # names of at least this many characters may break after an underscore in a narrowed column
# tables with at least this many columns (the audit's) are set smaller, and smaller again from WIDER_AT (the audit's
# detail table), so they fit a 1400 px page
WIDE_AT = 10
WIDER_AT = 14
NUMERIC = re.compile(r"[-+]?[0-9∞]|– \(")  # right-aligned: numbers, ∞, and the missing marks in number columns
MD_STYLE = {"best": "**{}**", "violation": "**⚠ {}**", "baseline": "*{}*", "missing": "{}", "": "{}"}


def md_escape(text: str) -> str:
    """Text safe inside a Markdown table cell: no pipes, emphasis, HTML tags or line breaks from the data."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;").replace("\n", " ")


def md_cell(cell: Cell) -> str:
    return MD_STYLE[cell.kind].format(md_escape(cell.text)) if cell.text else ""


def md_table(table: Table) -> str:
    lines = [f"*{md_escape(table.caption)}*", ""] if table.caption else []
    lines.append("| " + " | ".join(md_escape(c) for c in table.columns) + " |")
    lines.append("|" + "---|" * len(table.columns))
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def to_markdown(blocks: list[Block]) -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            parts.append(f"{'#' * block.level} {block.text}")
        elif isinstance(block, Text):
            parts.append(block.text)
        elif isinstance(block, Notes):
            parts.append("\n".join(f"- {item}" for item in block.items))
        elif isinstance(block, Image):
            parts.append(f"![{block.caption}](<{block.href}>)")
        elif isinstance(block, Gallery):
            parts.append(to_markdown(list(block.images)).rstrip())
        elif isinstance(block, Details):
            parts.append(f"**{block.summary}**\n\n" + to_markdown(list(block.blocks)).rstrip())
        else:
            parts.append(md_table(block))
    return "\n\n".join(parts) + "\n"


def html_text(text: str) -> str:
    """Text of a table as HTML that a narrowed column can wrap: a long name may break after an underscore
    (`drugreview_` / `condition6`, `eps_emp_` / `lower`; a short one, `one_run`, stays whole) and an interval
    `0.550 ± 0.635` before its `±`, never inside a number or a half-width."""
    value, plus_minus, half = text.partition(" ± ")
    breakable = " ".join(
        html.escape(word).replace("_", "_<wbr>") if len(word) >= LONG_NAME else html.escape(word)
        for word in value.split(" ")
    )
    return f'{breakable} <span class="half">± {html.escape(half)}</span>' if plus_minus else breakable


def html_cell(cell: Cell) -> str:
    layout = "wrap" if len(cell.text) > WRAP_AT else "num" if NUMERIC.match(cell.text) else ""
    classes = " ".join(filter(None, (cell.kind, layout)))
    return f'<td class="{classes}">{html_text(cell.text)}</td>' if classes else f"<td>{html_text(cell.text)}</td>"


def size_class(n_columns: int) -> str:
    """The class that sets a table of `n_columns` smaller (`WIDE_AT`, `WIDER_AT`): the audit's tables then fit a
    1400 px page with every column, their verdict last, in view."""
    return "wide wider" if n_columns >= WIDER_AT else "wide" if n_columns >= WIDE_AT else ""


def html_table(table: Table) -> str:
    head = "".join(f"<th>{html_text(c)}</th>" for c in table.columns)
    body = "".join("<tr>" + "".join(html_cell(c) for c in row) + "</tr>" for row in table.rows)
    caption = f"<figcaption>{html.escape(table.caption)}</figcaption>" if table.caption else ""
    size = size_class(len(table.columns))
    attributes = f' class="{size}"' if size else ""
    table_html = f"<table{attributes}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<figure>{caption}<div class="scroll">{table_html}</div></figure>'


def html_image(image: Image) -> str:
    data = base64.b64encode(image.png).decode("ascii")
    caption = html.escape(image.caption)
    return (
        f'<figure><figcaption>{caption}</figcaption><img src="data:image/png;base64,{data}" alt="{caption}"></figure>'
    )


def html_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"<h{block.level}>{html.escape(block.text)}</h{block.level}>"
    if isinstance(block, Text):
        return f"<p>{html.escape(block.text)}</p>"
    if isinstance(block, Notes):
        return '<ul class="notes">' + "".join(f"<li>{html.escape(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Image):
        return html_image(block)
    if isinstance(block, Gallery):
        return '<div class="gallery">' + "".join(map(html_image, block.images)) + "</div>"
    if isinstance(block, Details):
        inner = "".join(map(html_block, block.blocks))
        return f"<details><summary>{html.escape(block.summary)}</summary>{inner}</details>"
    return html_table(block)


def to_html(blocks: list[Block], title: str) -> str:
    body = "\n".join(map(html_block, blocks))
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
