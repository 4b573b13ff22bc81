"""Lines of a streamed reply read as the client reads them, for tests of the stream parsers.

The client hands a parser what ``wire/shapes.read_stream`` read (``check_reply`` of a live
reply or of a cassette's); these tests build the same from lines.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_cardprobe.wire.shapes import Stream, read_stream


def streamed(api: str, lines: Iterable[str]) -> Stream:
    """``lines`` joined and read by ``read_stream``, which must find nothing wrong."""
    problem, stream = read_stream(api, "\n".join(lines))
    assert stream is not None, problem
    return stream
