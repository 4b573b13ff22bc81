"""The HTML report escapes every string from a model or a suite, in text and attributes."""

from __future__ import annotations

from html.parser import HTMLParser

from pytest_cardprobe.score.aggregate import aggregate
from pytest_cardprobe.score.baseline import Baseline, CaseVerdict
from pytest_cardprobe.score.gate import GateSettings, decide
from pytest_cardprobe.score.html import html_report
from pytest_cardprobe.types import ProbeResult, SampleRecord

EVIL = "\"'><script>alert(1)</script><img src=x onerror=alert(2)>javascript:alert(3)"
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "section",
    "div", "table", "thead", "tbody", "tr", "th", "td", "details", "summary", "pre", "code",
    "b", "wbr", "span", "i", "ul", "li", "svg", "text", "line", "rect", "g",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "lang", "charset", "http-equiv", "content", "class", "id", "style", "data-kind",
    "data-unstable", "data-h", "name", "role",
    "width", "height", "viewbox", "xmlns", "x", "y", "x1", "y1", "x2", "y2", "fill", "stroke",
    "stroke-width",
}  # fmt: skip


class Elements(HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def result(model: str, case: str, passed: bool) -> ProbeResult:
    sample = SampleRecord(0, EVIL, passed, EVIL, None if passed else EVIL, reply=EVIL)
    status = "passed" if passed else "failed"
    return ProbeResult(f"x::{EVIL}", EVIL, model, "tool", EVIL, case, status, [sample])


def test_hostile_strings_everywhere_stay_text() -> None:
    results = [result(EVIL, EVIL, False), result("m2", EVIL, True), result(EVIL, "c2", True)]
    results[0].message = EVIL
    arms = aggregate(results)
    base = Baseline({arms[0].id: {EVIL: CaseVerdict(True, EVIL, 1, 1)}})
    gate = decide(arms, results, base, GateSettings())
    page = html_report(arms, results, gate, {"models": [EVIL], EVIL: EVIL})
    parser = Elements()
    parser.feed(page)
    tags = {tag for tag, _ in parser.found}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    # Quotes in the hostile text never open a new attribute; values stay values.
    for tag, attrs in parser.found:
        for name, value in attrs:
            assert name in ALLOWED_ATTRIBUTES, (tag, name)
            if name == "style":
                assert "url(" not in (value or ""), value
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # The flip is listed at the top, escaped too.
    assert "Flips (passed in the baseline, fail now)" in page


def test_several_models_are_drawn_side_by_side() -> None:
    results = [result("model-a", "c1", True), result("model-b", "c1", False)]
    arms = aggregate(results)
    page = html_report(arms, results, decide(arms, results, None, GateSettings()), {})
    assert 'id="models-chart"' in page and "Models side by side" in page
    one = html_report(arms[:1], results[:1], None, {})
    assert 'id="models-chart"' not in one


def test_bidi_overrides_and_control_characters_in_model_text_show_as_escapes() -> None:
    # U+202E would make the reply (and what follows it on the page) read backwards; an escape
    # character would reach a terminal that prints the file. Line breaks stay (replies are
    # shown in <pre>).
    hidden = "abc\u202edef\x1b[31m\u2066x\nnext line"
    sample = SampleRecord(0, hidden, False, hidden, hidden, reply=hidden)
    results = [ProbeResult("x::c", "s", "m", "tool", "cold", "c", "failed", [sample])]
    arms = aggregate(results)
    gate = decide(arms, results, Baseline({}), GateSettings())
    page = html_report(arms, results, gate, {"models": ["m"]})
    assert not any(ch in page for ch in "\u202e\u2066\x1b")
    assert "abc\\u202edef\\x1b[31m\\u2066x\nnext line" in page
