"""The HTML report, rendered by a real headless Chromium and read back from its DOM."""

from __future__ import annotations

import json
import re
from html import unescape as html_unescape
from pathlib import Path

import pytest
import yaml
from cardprobe_testing import cassette, chromium, render, set_replies

# Each would change the page title if the browser ran it.
HOSTILE = (
    "<script>document.title='pwned-script'</script>"
    "<img src=x onerror=\"document.title='pwned-img'\">"
    '</textarea></pre></details></td><b id="injected">bold?</b>'
    "<a href=\"javascript:document.title='pwned-link'\">click me</a>"
    "' onmouseover='document.title=1' \" autofocus onfocus=\"document.title='pwned-attr'\""
)
# A card each case accepts, for (case, channel, condition).
SECOND_SAMPLE_PASSES = {
    ("codeblock", "prose", "schema"): [
        {"type": "CodeBlock", "codeSnippet": "print('hi')", "language": "python"}
    ],
    ("facts", "prose", "schema"): [
        {"type": "FactSet", "facts": [{"title": "Weight", "value": "2 kg"}]}
    ],
    ("rating_shown", "prose", "seeded"): [{"type": "Rating", "value": 4.3, "max": 5}],
}


def set_second_reply(path: Path, content: str) -> None:
    """Rewrite the reply of the second sample (recorded interaction) of a prose cassette."""
    data = yaml.safe_load(path.read_text())
    body = data["interactions"][1]["response"]["body"]
    reply = json.loads(body["string"])
    reply["message"]["content"] = content
    body["string"] = json.dumps(reply)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_shipped_suite_report_renders_charts_and_grid_and_runs_no_model_text(
    recorded: pytest.Pytester, tmp_path: Path
) -> None:
    browser = chromium()
    set_replies(cassette(recorded, "date", "prose", "cold"), content=HOSTILE)
    # In the recordings every case's two samples agree (now and in the baseline), so three
    # cases are made unstable here: their second sample answers with a card they accept.
    # Both samples failed in the baseline, and one of two is still a failed case: no flip.
    for (case, channel, condition), card in SECOND_SAMPLE_PASSES.items():
        set_second_reply(cassette(recorded, case, channel, condition), json.dumps(card))
    page = recorded.path / "report.html"
    result = recorded.runpytest("-p", "no:cacheprovider", "cases", f"--cardprobe-html={page}")
    assert result.ret == 0, result.stdout.str()
    source = page.read_text()
    # Self-contained: no element of the page loads anything (URLs in replies are text).
    assert not re.search(r"<[a-zA-Z][^>]*\s(src|href|action)\s*=", source)
    assert "<script" not in source and "<link" not in source and "@import" not in source

    dom = render(browser, page, "--dump-dom")
    # No script ran: the title is still ours.
    assert re.search(r"<title>cardprobe report</title>", dom), dom[:500]
    assert "pwned" not in re.sub(r"<pre>.*?</pre>", "", dom, flags=re.S)
    # The hostile reply shows as text, inside the cell's <pre>, not as elements.
    assert "&lt;script&gt;document.title='pwned-script'&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=" in dom and "&lt;/textarea&gt;" in dom
    assert "javascript:document.title" in dom
    assert not re.search(r"<(script|img|a|textarea)\b", dom)
    assert '<b id="injected"' not in dom and '&lt;b id="injected"&gt;' in dom
    # The charts and the grid are there: one bar and one baseline mark per arm.
    assert len(re.findall(r'<rect class="bar"', dom)) == 8 + 2  # pass rate + tool adoption
    assert len(re.findall(r'class="baseline-mark"', dom)) == 8 + 2
    assert 'id="pass-chart"' in dom and 'id="adoption-chart"' in dom
    # Each share's 95 % interval is a whisker on its bar; the cases whose samples disagreed
    # (codeblock and facts on prose/schema, rating_shown on prose/seeded) are marked.
    assert len(re.findall(r'<g class="whisker"', dom)) == 8 + 2
    assert len(re.findall(r'<td class="cell" data-kind="[a-z_]+" data-unstable="yes"', dom)) == 3
    assert 'id="unstable"' in dom and "rating_shown (now 1/2, baseline 0/2)" in dom
    assert len(re.findall(r'<td class="cell"', dom)) == 200
    assert len(re.findall(r"<details>", dom)) == 200
    assert 'id="gate"' in dom and "Gate: pass" in dom
    assert "<h2>Retry</h2>" in dom and "cards/smollm2:135m/retry/cold" in dom

    shot = tmp_path / "report.png"
    render(browser, page, f"--screenshot={shot}", "--window-size=1280,2000")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# Test-only: the page itself forbids scripts, so a copy of it without that rule measures its
# own layout in the browser and reports it through the title.
MEASURE = """<script>
addEventListener('load', () => {
  const box = (e) => e.getBoundingClientRect();
  const rows = [...document.querySelectorAll('#verdicts tr')].map(box);
  const gates = [...document.querySelectorAll('.board td[data-h=gate]')].map(box);
  document.title = JSON.stringify({
    width: innerWidth, height: innerHeight, page: document.documentElement.scrollWidth,
    words: [...document.querySelectorAll('#verdicts tr td:first-child')].map(c => c.textContent),
    rows: rows.map(b => [b.right, b.bottom]), gates: gates.map(b => b.right),
    boards: [...document.querySelectorAll('#scoreboard, #scoreboard-calls')].map(
      t => [box(t).right, box(t.parentElement).right]),
  });
});
</script>"""


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_every_arm_verdict_is_in_view_at_a_desktop_and_a_phone_width(
    recorded: pytest.Pytester, tmp_path: Path, width: int, height: int
) -> None:
    browser = chromium()
    page = recorded.path / "report.html"
    result = recorded.runpytest("-p", "no:cacheprovider", "cases", f"--cardprobe-html={page}")
    assert result.ret == 0, result.stdout.str()
    source = page.read_text()
    assert "Content-Security-Policy" in source and "<script" not in source
    measured = tmp_path / "measured.html"
    measured.write_text(
        re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", source).replace(
            "</body>", MEASURE + "</body>"
        )
    )
    size = f"--window-size={width},{height}"
    dom = render(browser, measured, "--dump-dom", size)
    found = json.loads(html_unescape(re.search(r"<title>(\{.*?\})</title>", dom).group(1)))  # type: ignore[union-attr]
    # Headless Chromium keeps a window at least 500 px wide; below 700 px the phone layout
    # applies either way (the screenshot below is taken at the asked width).
    assert found["width"] == max(width, 500) and found["width"] <= 1280
    assert found["page"] <= found["width"]  # the page never scrolls sideways
    assert found["words"] == ["ok"] * 8  # every arm's verdict, one row each, first on the page
    assert all(
        right <= found["width"] and bottom <= found["height"] for right, bottom in found["rows"]
    )
    # The scoreboard's gate column (first) is in view on every row too.
    assert len(found["gates"]) == 8 and all(right <= found["width"] for right in found["gates"])
    # The whole scoreboard fits its section: no column scrolled out of view.
    assert found["boards"] and all(right <= room + 0.5 for right, room in found["boards"])
    assert "text-overflow:ellipsis" not in source  # long labels wrap, never cut
    shot = tmp_path / f"report-{width}x{height}.png"
    render(browser, page, f"--screenshot={shot}", size)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
