"""A small html.parser reader of the report: tables by id, figures by id, links, scripts and <pre> texts."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Table:
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    def column(self, name: str) -> list[str]:
        index = self.headers.index(name)
        return [row[index] for row in self.rows]


class ReportParser(HTMLParser):
    """Reads report.html into `tables`, `figures` (id -> img src), `links`, `scripts`, `pres`."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, Table] = {}
        self.figures: dict[str, str] = {}
        self.links: list[str] = []
        self.sources: list[str] = []
        self.scripts = 0
        self.pres: list[str] = []
        self._table: Table | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_head = False
        self._figure: str | None = None
        self._pre: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(attributes.get("id", f"anonymous-{len(self.tables)}"), Table())
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "figure":
            self._figure = attributes.get("id")
        elif tag == "img":
            self.sources.append(attributes.get("src", ""))
            if self._figure:
                self.figures[self._figure] = attributes.get("src", "")
        elif tag in ("a", "link"):
            self.links.append(attributes.get("href", ""))
        elif tag == "script":
            self.scripts += 1
        elif tag == "pre":
            self._pre = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            if self._in_head:
                self._table.headers = self._row
            else:
                self._table.rows.append(self._row)
            self._row = None
        elif tag == "thead":
            self._in_head = False
        elif tag == "table":
            self._table = None
        elif tag == "figure":
            self._figure = None
        elif tag == "pre" and self._pre is not None:
            self.pres.append("".join(self._pre))
            self._pre = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._pre is not None:
            self._pre.append(data)


def parse_report(text: str) -> ReportParser:
    """The parsed report."""
    parser = ReportParser()
    parser.feed(text)
    parser.close()
    return parser
