"""Small HTML building blocks for a self-contained report: no scripts, no network assets."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from html import escape

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; } td:not(.text) { white-space: nowrap; }
caption { caption-side: top; text-align: left; font-weight: 600; padding-bottom: 0.3em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #555; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; white-space: pre-wrap; }
.note { color: #8a5a00; } .lead { font-size: 1.1em; }
details { margin: 1.5em 0; } summary { cursor: pointer; font-weight: 600; font-size: 1.1em; }
"""


def cell(value: object, digits: int = 4) -> str:
    """A value as table text: floats with `digits` decimals, None/NaN as an em dash, the rest as str."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return "—" if value != value else f"{value:.{digits}f}"
    if hasattr(value, "item"):  # numpy scalar
        return cell(value.item(), digits)
    return str(value)


def table(table_id: str, caption: str, headers: Sequence[str], rows: Iterable[Sequence[object]],
          text_columns: int = 1) -> str:
    """A <table id=...> with a caption, a header row and one <tr> per row; the first `text_columns`
    columns are left-aligned text, the rest numbers."""
    def tag(name: str, index: int, content: str) -> str:
        kind = ' class="text"' if index < text_columns else ""
        return f"<{name}{kind}>{escape(content)}</{name}>"

    head = "".join(tag("th", i, h) for i, h in enumerate(headers))
    body = "\n".join("<tr>" + "".join(tag("td", i, cell(v)) for i, v in enumerate(row)) + "</tr>" for row in rows)
    return (f'<table id="{escape(table_id)}">\n<caption>{escape(caption)}</caption>\n'
            f"<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>")


def figure(figure_id: str, png: bytes, relative_path: str, caption: str) -> str:
    """A <figure id=...> with the PNG embedded as a data URI (the page stands alone) and a link to its file."""
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure id="{escape(figure_id)}">\n<img src="data:image/png;base64,{data}" alt="{escape(caption)}">\n'
            f'<figcaption>{escape(caption)} (<a href="{escape(relative_path)}">PNG</a>)</figcaption>\n</figure>')


def paragraph(text: str, css_class: str | None = None) -> str:
    """Text in a <p>, escaped."""
    return f'<p class="{escape(css_class)}">{escape(text)}</p>' if css_class else f"<p>{escape(text)}</p>"


def preformatted(text: str) -> str:
    """Text in a <pre> block, escaped."""
    return f"<pre>{escape(text)}</pre>"


def details(summary: str, parts: Sequence[str]) -> str:
    """A collapsed <details> section: `summary` (escaped) as its title, `parts` (HTML) inside."""
    return f"<details>\n<summary>{escape(summary)}</summary>\n" + "\n".join(parts) + "\n</details>"


def meta_table(meta: Mapping[str, object], table_id: str = "table-meta", caption: str = "Run") -> str:
    """Run metadata as a two-column table; nested values (config, hashes) as indented JSON."""
    rows = []
    for key, value in meta.items():
        if isinstance(value, Mapping | list | tuple):
            shown = f"<pre>{escape(json.dumps(value, indent=2, ensure_ascii=False, default=str))}</pre>"
        else:
            shown = escape(cell(value))
        rows.append(f'<tr><th class="text">{escape(str(key))}</th><td class="text">{shown}</td></tr>')
    return (f'<table id="{escape(table_id)}">\n<caption>{escape(caption)}</caption>\n<tbody>\n' + "\n".join(rows)
            + "\n</tbody>\n</table>")


def report_page(title: str, lead: str, findings: Sequence[str], collapsed: Sequence[tuple[str, Sequence[str]]]) -> str:
    """A complete report that leads with its finding: the `title` as <h1>, the `lead` (plain text: what was
    found, in a sentence or two) as a lead paragraph, then `findings` (HTML parts shown open: the summary
    table first, then the key figures), then each (heading, HTML parts) of `collapsed` as a closed
    <details> section at the end (numbers behind the figures, config and inputs, definitions)."""
    body = [f"<h1>{escape(title)}</h1>", paragraph(lead, "lead"), '<main>', *findings, "</main>"]
    if collapsed:
        body += ['<section class="details">', *(details(heading, parts) for heading, parts in collapsed), "</section>"]
    return page(title, body)


def page(title: str, body: Sequence[str]) -> str:
    """A complete HTML document with the report's inline CSS."""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{escape(title)}</title>\n'
            f"<style>{CSS}</style>\n</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n")
