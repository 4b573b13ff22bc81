"""The cassette reader (``wire/cassettes/reading.py``) refusing a cassette file that is no
server reply: each row is one hostile cassette, and the reader's message names the file and
says what is wrong, in the words the user then sees.

These are rows of the guide's "What happens when…" table (docs/guide/what-happens-when.md;
its ``ROWS`` are in tests/plugin/test_hostile.py) whose whole message is the reader's: the
shipped cassette ``date-prose-cold`` with one edit, read here by the reader itself. The rows
where more is at stake than the reader's words run whole there: a link out of the cassette
folder (with a secret beside it), a number no float can hold, a tool call's arguments no
request can carry, and one corrupt cassette (wrong metadata) as the whole run of its row.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hostile_inputs import (  # tests/ is on sys.path (rootdir-relative)
    BIG,
    ROOT,
    Refused,
    both,
    cassette,
    cassette_file,
    deep,
    drop,
    fifo,
    mkdir,
    reply,
    reply_text,
    response_field,
    set_in,
    write,
)

from pytest_cardprobe.wire.cassettes.reading import read_cassette
from pytest_cardprobe.wire.errors import CorruptCassette

REFUSED: list[Refused] = [
    Refused(
        "cassette-message-string",
        reply(set_in(("message",), "hello")),
        (f"corrupt cassette {cassette_file()}: interaction 1: reply.message is a string",),
    ),
    Refused(
        "cassette-content-number",
        reply(set_in(("message", "content"), 42)),
        (
            "corrupt cassette",
            "date-prose-cold.yaml: interaction 1",
            "reply.message.content is a number",
        ),
    ),
    Refused(
        "cassette-no-message",
        reply(drop("message")),
        ("date-prose-cold.yaml: interaction 1: reply has no message",),
    ),
    Refused(
        "cassette-reply-a-list", reply(lambda body: [body]), ("interaction 1: reply is a list",)
    ),
    Refused(
        "cassette-tool-calls-object",
        reply(set_in(("message", "tool_calls"), {"a": 1})),
        ("interaction 1: reply.message.tool_calls is an object, not a list",),
    ),
    Refused(
        "cassette-arguments-number",
        reply(
            set_in(
                ("message", "tool_calls"),
                [{"function": {"name": "render_adaptive_card", "arguments": 7}}],
            )
        ),
        ("tool_calls[0].function.arguments is a number",),
    ),
    Refused("cassette-done-string", reply(set_in(("done",), "yes")), ("reply.done is a string",)),
    Refused(
        "cassette-deep-json",
        cassette(lambda d: d["interactions"][0]["response"]["body"].update(string=deep(200_000))),
        ("interaction 1: response body is JSON nested more than 64 levels",),
    ),
    Refused(
        "cassette-body-not-json",
        cassette(lambda d: d["interactions"][0]["response"]["body"].update(string="<html>")),
        ("interaction 1: reply is not JSON",),
    ),
    Refused(
        "cassette-body-nan",
        cassette(
            lambda d: d["interactions"][0]["response"]["body"].update(string='{"message": NaN}')
        ),
        ("interaction 1: reply is not JSON", "NaN"),
    ),
    Refused(
        "cassette-body-bad-utf8",
        cassette(lambda d: d["interactions"][0]["response"]["body"].update(string=b"\xff\xfe{")),
        ("interaction 1: response body is not UTF-8",),
    ),
    Refused(
        "cassette-gzip-header",
        cassette(
            lambda d: d["interactions"][0]["response"]["headers"].update(
                {"Content-Encoding": ["gzip"]}
            )
        ),
        ("interaction 1: response header content-encoding: gzip",),
    ),
    Refused(
        "cassette-vcr-version",
        cassette(set_in(("version",), 99)),
        ("date-prose-cold.yaml: unknown vcrpy cassette version 99",),
    ),
    Refused(
        "cassette-no-version",
        cassette(drop("version")),
        ("date-prose-cold.yaml: unknown vcrpy cassette version None",),
    ),
    Refused(
        "cassette-status-string",
        response_field("status", {"code": "200"}),
        ("interaction 1: response has no status code",),
    ),
    Refused(
        "cassette-status-999",
        response_field("status", {"code": 999}),
        ("interaction 1: response status 999",),
    ),
    Refused(
        "cassette-headers-list",
        response_field("headers", ["x"]),
        ("interaction 1: response headers are not a mapping",),
    ),
    Refused(
        "cassette-interactions-mapping",
        cassette(set_in(("interactions",), {"a": 1})),
        ("date-prose-cold.yaml: no list of request/response interactions",),
    ),
    Refused(
        "cassette-top-level-list",
        write(cassette_file(), "- 1\n- 2\n"),
        ("date-prose-cold.yaml: not a vcrpy cassette",),
    ),
    Refused(
        "cassette-not-yaml",
        write(cassette_file(), "interactions: [\n"),
        ("date-prose-cold.yaml: line", "not valid YAML"),
    ),
    Refused(
        "cassette-binary",
        write(cassette_file(), bytes(range(256))),
        ("date-prose-cold.yaml: not UTF-8 text",),
    ),
    Refused(
        "cassette-python-tag",
        write(cassette_file(), "version: !!python/object:os.system 1\n"),
        ("date-prose-cold.yaml", "not valid YAML"),
    ),
    Refused(
        "cassette-dangling-symlink",
        both(
            lambda r: (r / cassette_file()).unlink(),
            lambda r: (r / cassette_file()).symlink_to("gone"),
        ),
        ("corrupt cassette", "date-prose-cold.yaml", "dangling symbolic link"),
    ),
    Refused(
        "cassette-directory",
        both(lambda r: (r / cassette_file()).unlink(), mkdir(cassette_file())),
        ("date-prose-cold.yaml", "is a directory"),
    ),
    Refused(
        "cassette-fifo",
        both(lambda r: (r / cassette_file()).unlink(), fifo(cassette_file())),
        ("date-prose-cold.yaml", "is a FIFO"),
    ),
    Refused(
        "cassette-too-large",
        write(cassette_file(), "#" * BIG),
        ("date-prose-cold.yaml", "larger than the 10 MB cap"),
    ),
    Refused(
        "cassette-reply-lone-surrogate",
        reply_text('"content":"', '"content":"\\udfff'),
        ("interaction 1: reply is not JSON: a string holds a lone surrogate (\\udfff)",),
    ),
    Refused(
        "cassette-alias-bomb",
        write(
            cassette_file(),
            "version: 1\ninteractions: []\nbomb:\n  a0: &a0 [lol]\n"
            + "".join(f"  a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]\n" for n in range(1, 9))
            + "metadata:\n  cardprobe: {unsupported: *a8}\n",
        ),
        ("corrupt cassette", "expand to more than 200,000 values (an alias bomb)"),
    ),
]


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_hostile_input(case: Refused, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = cassette_file()
    (tmp_path / name).parent.mkdir(parents=True)
    shutil.copy(ROOT / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)  # the reader names the file as the user would type it
    case.arrange(tmp_path)
    with pytest.raises(CorruptCassette) as refused:
        read_cassette(Path(name))
    message = str(refused.value)
    # The guide row's words ("corrupt cassette") and the file, then what is wrong.
    assert message.startswith(f"corrupt cassette {name}: "), message
    for said in case.said:
        assert said in message, f"{said!r} not in {message!r}"
