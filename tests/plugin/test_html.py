"""The HTML report, rendered by a real headless Chromium and read back from its DOM."""

from __future__ import annotations

import json
import re
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
