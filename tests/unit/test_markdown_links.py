"""Model and suite text in the Markdown report (the pull-request comment) never becomes a
live link, a mention or an issue reference: such runs are shown as code spans. Where it
begins a line or a list item, it starts no block either: no link reference definition (which
would turn each ``[x]`` of the comment into its link), list, quote, heading or rule."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pytest_cardprobe.score.markdown import md_inline, md_text

FIXED = settings(max_examples=300, derandomize=True, database=None, deadline=None)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://evil.example/login", "`https://evil.example/login`"),
        ("http://x.example/a?b=c", "`http://x.example/a?b=c`"),
        ("see www.evil.example now", "see `www.evil.example` now"),
        ("ask @octocat", "ask `@octocat`"),
        ("ping @github/security", "ping `@github/security`"),
        ("closes #123", "closes `#123`"),
        ("see octo/repo#7 and GH-12", "see `octo/repo#7` and `GH-12`"),
        ("write to a.b@example.org", "write to `a.b@example.org`"),
        ("mailto:a@example.org", "`mailto:a@example.org`"),
        ("ftp://x.example", "`ftp://x.example`"),
        ("a|b in https://x.example/a|b", "a\\|b in `https://x.example/a\\|b`"),
        ("@octocat@octocat", "`@octocat@octocat`"),
        ("x`@octocat", "x\\``@octocat`"),
        ("(see https://a.example).", "(see `https://a.example).`"),
    ],
)
def test_links_mentions_and_references_become_code(text: str, shown: str) -> None:
    assert md_text(text) == shown


@pytest.mark.parametrize(
    "text",
    ["ok Input.Date", "tool_calls -> [0-8 %]", "smollm2:135m", "hf.co/org/repo:Q4",
     "ollama 0.11.4 → 0.33.0", "user@host-less", "a#1", "sha256:abc"],
)  # fmt: skip
def test_ordinary_text_is_left_as_it_is(text: str) -> None:
    assert "`" not in md_text(text)


# What GitHub links or notifies about, written as it would be spotted in rendered text: a
# scheme's "//", "www.", an "@" starting a word, a "#" and digits not inside a word.
_LIVE = re.compile(
    r"[A-Za-z]://|(?<![A-Za-z0-9.+-])www\.|(?<![A-Za-z0-9])(?:[@#][A-Za-z0-9]|GH-\d)"
)


def _outside_code(rendered: str) -> str:
    """The rendered text outside code spans, each span (and each escaped character) standing
    as one character that is no word: text on either side of a span is a word of its own."""
    out, index, in_code = [], 0, False
    while index < len(rendered):
        char = rendered[index]
        following = rendered[index + 1 : index + 2]
        if char == "\\" and not in_code and following and following in string.punctuation:
            out.append("~")
            index += 2
            continue
        if char == "`":
            in_code = not in_code
            out.append(" ")
        elif not in_code:
            out.append(char)
        index += 1
    return "".join(out)


pieces = st.sampled_from(
    ["https://evil.example/x", "www.evil.example", "@octocat", "#12", "o/r#3", "GH-4",
     "a@b.example", " ", "_", "*", "`", "|", "<", "&", "\\", "x", "é", ":", "/", ".", "\u202e",
     "[x]: ", "[x]", "- ", "+ ", "1. ", "2)", "> ", "# ", "-", "[", "]", "]:", "^", "9"]
)  # fmt: skip


@FIXED
@given(st.lists(pieces, max_size=12).map("".join))
def test_no_generated_text_leaves_a_live_link_or_mention_outside_code(text: str) -> None:
    rendered = md_text(text)
    assert _LIVE.search(_outside_code(rendered)) is None, (text, rendered)
    assert "\u202e" not in rendered


@pytest.mark.parametrize("unit", ["a", "a.", "a-", "a:", "a/", "a@", "@"])
def test_a_long_word_costs_linear_time(unit: str) -> None:
    import time

    def took(size: int) -> float:
        text = unit * (size // len(unit))
        started = time.perf_counter()
        md_text(text)
        return time.perf_counter() - started

    small, large = took(10_000), took(80_000)
    # Eight times the text: about eight times the time (unbounded runs made it 64 times).
    assert large < 20 and large < 25 * max(small, 0.002), (small, large)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("[x]: http://evil.example", "\\[x]: `http://evil.example`"),
        ("  [x]: /relative 'title'", "  \\[x]: /relative 'title'"),
        ("[^1]: a footnote", "\\[^1]: a footnote"),
        ("[ ] todo", "\\[ ] todo"),
        ("[x] done", "\\[x] done"),
        ("- item", "\\- item"),
        ("+ item", "\\+ item"),
        ("* item", "\\* item"),
        ("-", "\\-"),
        ("1. first", "1\\. first"),
        ("123456789) x", "123456789\\) x"),
        ("> quote", "&gt; quote"),
        ("   > quote", "   &gt; quote"),
        (" # Gate: passed", " \\# Gate: passed"),
        ("---", "\\---"),
        ("- - -", "\\- - -"),
        # Two dashes: the report writes the text after a list item's "- ", which makes three.
        ("--", "\\--"),
        ("-- ", "\\-- "),
        (" - -", " \\- -"),
    ],
)  # fmt: skip
def test_what_would_start_a_block_is_made_inert_where_a_line_begins(text: str, shown: str) -> None:
    assert md_text(text) == shown


@pytest.mark.parametrize(
    "text",
    ["-5 °C", "->", "-->", "+1", "1.5 s", "1234567890. x", "[0-8 %] of", "[a] b", "[x]y",
     "x: [a]: b", "    - deep", "ok Input.Date", "- / n/a (forced)"],
)  # fmt: skip
def test_text_that_starts_no_block_is_escaped_as_inline_text(text: str) -> None:
    if text == "- / n/a (forced)":  # a bullet: inert where a line begins, as it is in a cell
        assert md_inline(text) == text and md_text(text) == "\\" + text
    else:
        assert md_text(text) == md_inline(text)


#: The characters with which a line can start a block (after up to three spaces): every
#: other start leaves the text exactly as a table cell shows it.
_BLOCK_CHARS = "[-+>#0123456789"

_ALLOWED = {"bullet_list_open", "bullet_list_close", "list_item_open", "list_item_close",
            "paragraph_open", "paragraph_close", "inline"}  # fmt: skip


@FIXED
@given(st.lists(pieces, max_size=8).map("".join))
def test_no_generated_text_starts_a_block_where_a_line_or_a_list_item_begins(text: str) -> None:
    # An indented code block (four spaces or more) shows the text as it is; it is no markup.
    assume(not text.startswith("    "))
    shown = md_text(text)
    if text.lstrip(" ")[:1] not in _BLOCK_CHARS:
        assert shown == md_inline(text), text
    # markdown-it comes with the dev extra (twine -> rich); the checks above stand alone.
    markdown_it = pytest.importorskip("markdown_it")
    parser = markdown_it.MarkdownIt("commonmark")
    for document in (f"- {shown}\n", f"{shown}\n"):
        env: dict = {}
        tokens = parser.parse(document, env)
        kinds = {t.type for t in tokens}
        assert kinds <= _ALLOWED, (text, document, kinds)
        assert sum(t.type == "list_item_open" for t in tokens) <= 1, (text, document)
        assert not env.get("references"), (text, document)
