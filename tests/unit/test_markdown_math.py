"""GitHub renders ``$…$`` and ``$$…$$`` as math (LaTeX, with ``\\color`` and ``\\Huge``) and a
line that starts with ``#`` as a heading, even inside a list item: text from a model or a
suite in the Markdown report must not draw large coloured text, such as a fake
"Gate: passed", into a pull-request comment."""

from __future__ import annotations

import pytest

from pytest_cardprobe.score.markdown import md_text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("$\\Huge\\color{green}\\textsf{ok}$", "\\$\\Huge\\color{green}\\textsf{ok}\\$"),
        ("costs $$x$$", "costs \\$\\$x\\$\\$"),
        ("$5 and $6", "\\$5 and \\$6"),
        ("# Gate: passed", "\\# Gate: passed"),
        ("## x", "\\## x"),
    ],
)  # fmt: skip
def test_math_and_headings_are_made_inert(text: str, shown: str) -> None:
    assert md_text(text) == shown


@pytest.mark.parametrize("text", ["a#b", "C# and F#", "#123", "x # y"])
def test_a_hash_that_starts_no_heading_is_left_as_it_was(text: str) -> None:
    assert "\\#" not in md_text(text)
