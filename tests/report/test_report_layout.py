"""Reports lead with the finding: html.report_page's order, and the trace report's summary table (numbers worked
out by hand) before its first figure, with the config, the per-step numbers and the definitions collapsed."""

from __future__ import annotations

from html import escape
from html.parser import HTMLParser

from crossknow.dynamics import SHAPE_DEFINITIONS
from crossknow.report import build_report, html
from tests.dynamics.traces import Item, build_trace
from tests.report.parse import parse_report


def position(text: str, fragment: str) -> int:
    """Where `fragment` first occurs in `text` (it must occur)."""
    index = text.find(fragment)
    assert index >= 0, fragment
    return index


class _Collapsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.ids: set[str] = set()
        self.open_details = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "details":
            self.depth += 1
            self.open_details += "open" in attributes
        elif self.depth and "id" in attributes:
            self.ids.add(attributes["id"])

    def handle_endtag(self, tag):
        if tag == "details":
            self.depth -= 1


def collapsed_ids(text: str) -> set[str]:
    """The ids of the elements inside a closed <details> (an open one fails the test)."""
    parser = _Collapsed()
    parser.feed(text)
    assert parser.open_details == 0
    return parser.ids


def test_report_page_orders_lead_findings_then_collapsed_sections():
    text = html.report_page("A <b> title", "What was found.", ['<table id="table-summary"></table>', "<img src=x>"],
                            [("Run", ['<table id="table-meta"></table>']), ("Definitions", ["<pre>d</pre>"])])
    assert "<h1>A &lt;b&gt; title</h1>" in text and "<title>A &lt;b&gt; title</title>" in text
    assert (position(text, '<p class="lead">What was found.</p>') < position(text, 'id="table-summary"')
            < position(text, "<img") < position(text, "<summary>Run</summary>") < position(text, 'id="table-meta"')
            < position(text, "<summary>Definitions</summary>"))
    assert collapsed_ids(text) == {"table-meta"}


def small_trace():
    """Steps 0, 10, 20, 30; answers have the lower loss where marked right.

    m1 (memorisation, answer 0): losses [2, 1, 1, 1] vs [1, 2, 2, 2]          -> wrong, right, right, right
    m2 (memorisation, answer 0): losses [2, 1.5, 2.5, 3] vs [1, 1, 1, 1]      -> wrong throughout
    q1 (intralingual, answer 1): losses [1, 1, 1, 1] vs [2, 0.5, 2, 2]        -> wrong, right, wrong, wrong
    """
    return build_trace([0, 10, 20, 30], [
        Item("m1", "memorisation", 0, [[2, 1, 1, 1], [1, 2, 2, 2]]),
        Item("m2", "memorisation", 0, [[2, 1.5, 2.5, 3], [1, 1, 1, 1]]),
        Item("q1", "intralingual", 1, [[1, 1, 1, 1], [2, 0.5, 2, 2]]),
    ])


def test_the_trace_report_leads_with_its_summary(tmp_path):
    text = build_report(small_trace(), tmp_path, meta={"model": "m", "config": {"seed": 1}}).read_text(
        encoding="utf-8")
    summary = parse_report(text).tables["table-summary"]
    assert summary.headers == ["condition", "items", "chance", "accuracy", "loss ratio", "retained", "acquired",
                               "forgotten", "unacquired", "overfitting onset"]
    # memorisation: right items 0 of 2 -> 1 of 2; loss ratio (2 + 2) / (3 + 3) -> (1 + 3) / (3 + 4); m1 acquired,
    # m2 unacquired; mean correct loss 2, 1.25, 1.75, 2: lowest at step 10, then two risen points -> onset 10.
    # intralingual: q1 wrong at 0 and 30 (unacquired), ratio 2 / 3 at both; correct loss 2, 0.5, 2, 2 -> onset 10.
    assert summary.rows == [
        ["memorisation", "2", "0.5000", "0.000 → 0.500", "0.667 → 0.571", "0", "1", "0", "1", "10"],
        ["intralingual", "1", "0.5000", "0.000 → 0.000", "0.667 → 0.667", "0", "0", "0", "1", "10"],
    ]
    assert escape("From step 0 to step 30, accuracy: memorisation 0.000 → 0.500 (chance 0.500); intralingual "
                  "0.000 → 0.000 (chance 0.500). The correct option's loss rose for good (overfitting onset): "
                  "memorisation after step 10; intralingual after step 10.") in text
    assert position(text, 'id="table-summary"') < position(text, "<img") < position(text, "<details>")
    hidden = collapsed_ids(text)
    assert {"table-meta", "table-parameters", "table-accuracy", "table-correct-loss", "table-onsets",
            "table-loss-ratio", "table-transitions", "table-conditions"} <= hidden
    assert {"table-summary", "table-shapes"}.isdisjoint(hidden)
    assert position(text, "<details>") < position(text, html.preformatted(SHAPE_DEFINITIONS))


def test_one_checkpoint_summary(tmp_path):
    text = build_report(build_trace([0], [Item("a", "memorisation", 0, [[1.0], [2.0]])]), tmp_path).read_text(
        encoding="utf-8")
    assert parse_report(text).tables["table-summary"].rows == [
        ["memorisation", "1", "0.5000", "1.000 → 1.000", "0.333 → 0.333", "—", "—", "—", "—", "—"]]
    assert "At step 0 (one checkpoint), accuracy: memorisation 1.000 → 1.000" in text
    assert position(text, "the trace has one checkpoint") < position(text, "<img")
