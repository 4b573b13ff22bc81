"""Model and suite text in the Markdown report (the pull-request comment) never becomes a
live link, a mention or an issue reference: such runs are shown as code spans."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cardprobe.score.markdown import md_text

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
     "a@b.example", " ", "_", "*", "`", "|", "<", "&", "\\", "x", "é", ":", "/", ".", "\u202e"]
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
