"""Failures the fuzz tests (tests/fuzz) found, each pinned as the example that found it.

Every test here failed before the fix named in its docstring; the fuzz tests keep looking
for more of the same kinds.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from pytest_cardprobe.judge.registry import card_judge
from pytest_cardprobe.run.runtime import Runtime
from pytest_cardprobe.run.settings import Settings
from pytest_cardprobe.suite.loader import load_suite
from pytest_cardprobe.suite.matrix import Probe, expand
from pytest_cardprobe.types import ProbeResult
from pytest_cardprobe.wire.cassettes.record import Record
from pytest_cardprobe.wire.cassettes.replay import Replay

ROOT = Path(__file__).resolve().parents[2]
CARDS = load_suite(ROOT / "cases" / "cards.yaml")
# A real recorded Ollama reply: the first one of the shipped date-prose-cold cassette.
RECORDED = yaml.safe_load(
    (ROOT / "cassettes" / "cards" / "smollm2%3A135m" / "date-prose-cold.yaml").read_text()
)["interactions"][0]["response"]["body"]["string"]


def _probe(case: str = "date", channel: str = "prose") -> Probe:
    return next(
        p
        for p in expand(CARDS, ["smollm2:135m"])
        if (p.case.id, p.channel, p.condition) == (case, channel, "cold")
    )


def _run(runtime: Runtime, probe: Probe) -> ProbeResult:
    try:
        return runtime.run(probe, 1, "n", lambda text: card_judge(text, probe.case, probe.suite))
    finally:
        runtime.close()


def _serving(monkeypatch: pytest.MonkeyPatch, body: bytes, api: str = "ollama") -> None:
    """A stand-in transport under the client (error paths only): ``body`` for every chat."""

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(("/api/chat", "/chat/completions")):
            return httpx.Response(200, content=body)
        return httpx.Response(404, json={"error": "404 page not found"})

    monkeypatch.setattr(
        "pytest_cardprobe.wire.transport.deadline_transport",
        lambda deadline, shown: httpx.MockTransport(handle),
    )


def _settings(tmp_path: Path, server: str, live: bool, **more: Any) -> Settings:
    return Settings(
        models=["smollm2:135m"],
        record_mode="rewrite" if live else "none",
        servers=[server],
        cassette_dir=tmp_path / "cassettes",
        retries=0,
        warmup=False,
        **more,
    )


def test_a_recording_through_a_server_url_with_a_path_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by test_fuzz_replies (the server URL had a path, ``/v``): the cassette holds
    ``/v/api/chat`` and replay asks ``/api/chat``, so a recording made through a gateway's
    prefix (``https://gw/ollama``) was stale at once. Fixed in wire/cassettes/matching.py
    (``same_path``) and reading.py (``shapes.chat_api``): the server's own base path is
    where the server is, not part of the request."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    _serving(monkeypatch, RECORDED.encode())
    server = "http://127.0.0.1:9/ollama"
    recorded = _run(Runtime(_settings(tmp_path, server, live=True), Record()), _probe())
    cassette = tmp_path / "cassettes" / "cards" / "smollm2%3A135m" / "date-prose-cold.yaml"
    assert "/ollama/api/chat" in cassette.read_text()
    replayed = _run(Runtime(_settings(tmp_path, server, live=False), Replay()), _probe())
    assert replayed.status == recorded.status == "failed"
    assert [s.label for s in replayed.samples] == [s.label for s in recorded.samples]


def test_a_stale_request_through_a_prefixed_server_names_the_body_not_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same fix, for the message of a request that really changed."""
    from pytest_cardprobe.wire.cassettes.matching import CassettePlayer

    data = {
        "interactions": [
            {"request": {"method": "POST", "uri": "http://h/ollama/api/chat", "body": '{"a":1}'}}
        ]
    }
    error = CassettePlayer(tmp_path / "c.yaml", data, "hint").mismatch("POST", "/api/chat", "{}")
    assert "(body.a only in recording)" in str(error), str(error)


# --------------------------------------------------------------------------- lone surrogates

LONE = '"caf\\udfff"'  # JSON text: a valid escape that decodes to no Unicode text


def test_a_reply_whose_text_holds_a_lone_surrogate_is_malformed_not_a_crash_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by test_fuzz_replies (an OpenAI stream whose content held ``\\udfff``): the
    reply was judged, and the session end crashed writing the reports (UnicodeEncodeError).
    Fixed in jsonread.load_json, which every reply goes through: a lone surrogate is not
    text, so the reply is malformed (infra, live; a corrupt cassette, replayed)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    body = '{"message":{"role":"assistant","content":' + LONE + '},"done":true}'
    _serving(monkeypatch, body.encode())
    live = _run(Runtime(_settings(tmp_path, "http://127.0.0.1:9", live=True), Record()), _probe())
    assert live.status == "infra"
    assert "reply is not JSON: a string holds a lone surrogate" in live.samples[0].label
    json.dumps(live.to_dict(), ensure_ascii=False).encode("utf-8")


def test_a_recorded_reply_with_a_lone_surrogate_is_a_corrupt_cassette(tmp_path: Path) -> None:
    """The same fix, replayed: the cassette reader names the interaction."""
    from pytest_cardprobe.wire.cassettes.reading import read_cassette
    from pytest_cardprobe.wire.errors import CorruptCassette

    reply = '{"message":{"role":"assistant","content":' + LONE + '},"done":true}'
    data = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "POST", "uri": "http://h/api/chat", "body": "{}"},
                "response": {"status": {"code": 200}, "body": {"string": reply}},
            }
        ],
    }
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptCassette, match=r"interaction 1: reply is not JSON: a string "):
        read_cassette(path)


def test_a_card_whose_type_is_a_lone_surrogate_is_broken_json(tmp_path: Path) -> None:
    """Found by test_fuzz_judges: a model may type the six characters ``\\ud800`` inside
    its card; the judge's label and types then held a lone surrogate, which no report can
    be written with. Fixed in judge/carddetect.py: such a card is ``broken: invalid JSON``."""
    from pytest_cardprobe.judge.card import judge_card

    text = '```json\n{"type":"AdaptiveCard","body":[{"type":"\\ud800"}]}\n```'
    verdict = judge_card(text, accept=["Table"], requires_input=False)
    assert verdict.label == "broken: invalid JSON lone surrogate \\ud800 in a string"
    json.dumps(verdict.to_dict(), ensure_ascii=False).encode("utf-8")


def test_a_tools_file_with_a_lone_surrogate_is_a_suite_error(tmp_path: Path) -> None:
    """Found by test_fuzz_suites (a JSON tools file, ``\\udfff`` in a string): the suite
    loaded and every request it built failed to encode. Fixed in suite/documents.py: the
    JSON walk (and the YAML reading) refuses it, naming line and key."""
    from pytest_cardprobe.suite.loader import SuiteError

    (tmp_path / "tools.json").write_text(
        '[{"type": "function", "function": {"name": "f",\n "description": ' + LONE + "}}]"
    )
    (tmp_path / "s.yaml").write_text(
        "cardprobe: 1\nname: s\njudge: call\nconditions: [cold]\ntools: tools.json\n"
        "cases:\n  - id: c\n    prompt: q\n    expect: {call: f}\n"
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(tmp_path / "s.yaml")
    assert str(caught.value).startswith(f"{tmp_path / 'tools.json'}:2: $[0].function.description")
    assert "lone surrogate" in str(caught.value)


# --------------------------------------------------------------------------- tool arguments


def test_arguments_nested_thousands_deep_are_refused_not_a_recursion_error() -> None:
    """Found by test_fuzz_judges (arguments as JSON text, the OpenAI way, nested 3000 deep):
    ``decode_arguments`` raised RecursionError, which escaped the client. Fixed in
    wire/calls.py: arguments are read with jsonread.load_json (bounded nesting, finite
    numbers, text), so they are refused as not valid JSON (a malformed sample)."""
    from pytest_cardprobe.wire.calls import decode_arguments

    args, error, _ = decode_arguments('{"a": ' + "[" * 3000 + "]" * 3000 + "}", False)
    assert args == {} and error == (
        "arguments are not valid JSON: JSON nested more than 64 levels deep"
    )


@pytest.mark.parametrize("number", ["NaN", "1e999", "-Infinity"])
def test_a_tool_loop_refuses_arguments_no_request_can_carry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, number: str
) -> None:
    """The same fix: an Ollama call whose arguments came as text holding NaN was decoded,
    and the loop's next request (``allow_nan=False``) raised ValueError: an internal error.
    Now the call is malformed (the loop hands back what it could read: no arguments)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    calls = load_suite(ROOT / "cases" / "tools.yaml")
    probe = next(
        p
        for p in expand(calls, ["smollm2:135m"])
        if (p.case.id, p.condition) == ("find_then_read", "cold")
    )
    arguments = json.dumps('{"path": "README.md", "start_line": ' + number + "}")
    body = (
        '{"message":{"role":"assistant","content":"","tool_calls":[{"function":'
        '{"name":"read_file","arguments":' + arguments + '}}]},"done":true}'
    )
    _serving(monkeypatch, body.encode())
    result = _run(Runtime(_settings(tmp_path, "http://127.0.0.1:9", live=True), Record()), probe)
    assert result.status == "failed"
    assert result.samples[0].label.startswith("malformed read_file: arguments are not valid JSON")


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        ('{"path": "a", "start_line": 1e999}', "1e999 overflows a float"),
        ('{"path": "\\udfff"}', "arguments hold a lone surrogate (\\udfff)"),
    ],
)
def test_a_call_written_as_text_with_arguments_no_request_can_carry_is_refused(
    arguments: str, why: str
) -> None:
    """The same kind, in a call written as text: recovery (judge/callread.py) reads spans
    with finite floats and refuses arguments that hold a lone surrogate."""
    from pytest_cardprobe.judge.recovery import recover_tool_calls

    text = '<tool_call>{"name": "read_file", "arguments": ' + arguments + "}</tool_call>"
    recovery = recover_tool_calls(text, ["read_file"])
    assert recovery.calls == [] and recovery.error is not None and why in recovery.error


# --------------------------------------------------------------------------- options


def test_the_settings_show_no_secret_in_a_traceback(tmp_path: Path) -> None:
    """Found by test_fuzz_options (a ``cardprobe_headers`` line with a token): the
    resolved ``Settings`` showed the header value, the server URL's password and key and the
    API key in its ``repr``, which is what a traceback prints of a frame argument. Fixed in
    run/settings.py: its ``repr`` redacts them as ``ClientSettings`` does."""
    from _pytest._code import ExceptionInfo
    from _pytest.config import _prepareconfig

    from pytest_cardprobe.glue.options import resolve_settings

    # Built here, so that the source lines a long traceback shows do not hold them.
    token, password, key = "T0KEN" + "VALUE", "S3CRET" + "PW", "K3Y" + "VALUE"
    ini = tmp_path / "pytest.ini"
    ini.write_text(f"[pytest]\ncardprobe_headers =\n    X-Auth: {token}\n")
    server = f"--cardprobe-server=http://alice:{password}@127.0.0.1:9/?key={key}"
    config = _prepareconfig(["-p", "no:cacheprovider", "-c", str(ini), server])
    try:
        settings = resolve_settings(config)
    finally:
        config._ensure_unconfigure()

    def failing(settings: Settings) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError) as caught:
        failing(settings)
    info: ExceptionInfo[BaseException] = caught
    shown = repr(settings) + str(info.getrepr(style="long", funcargs=True))
    for secret in (token, password, key):
        assert secret not in shown
    assert "servers=['http://127.0.0.1:9/']" in repr(settings)
    assert "headers={'X-Auth': '[redacted]'}" in repr(settings)


def _configured(tmp_path: Path, ini: str, *args: str) -> str:
    """The usage error (or "ok") of configuring a run with these ini lines and arguments."""
    from _pytest.config import _prepareconfig

    path = tmp_path / "pytest.ini"
    path.write_text("[pytest]\n" + ini)
    try:
        config = _prepareconfig(["-p", "no:cacheprovider", "-c", str(path), *args])
        try:
            config._do_configure()
        finally:
            config._ensure_unconfigure()
    except pytest.UsageError as exc:
        return str(exc)
    return "ok"


@pytest.mark.parametrize(
    ("ini", "args", "said"),
    [
        ("", ["--cardprobe-samples=1" + "0" * 400], "--cardprobe-samples wants an integer >= 1, "
         "got a number of 401 digits"),
        ("cardprobe_breaker = " + "9" * 400, [], "ini key cardprobe_breaker wants an integer >= "
         "1, got a number of 400 digits"),
    ],
)  # fmt: skip
def test_an_integer_too_large_for_a_float_is_a_usage_error(
    tmp_path: Path, ini: str, args: list[str], said: str
) -> None:
    """Found by test_fuzz_options (``--cardprobe-samples`` with 400 digits): the number
    reader's ``math.isfinite`` raised OverflowError, which neither argparse nor the ini
    reader catches: an INTERNALERROR. Fixed in glue/values.py."""
    assert said in _configured(tmp_path, ini, *args)


def test_a_header_line_without_a_colon_is_refused_without_showing_it(tmp_path: Path) -> None:
    """Found by test_fuzz_options (a ``cardprobe_headers`` line that is only a token): the
    usage error quoted the whole line as the header's name, value and all. Fixed in
    glue/values.header_line."""
    token = "T0KEN" + "VALUE"
    said = _configured(tmp_path, f"cardprobe_headers =\n    X-Auth {token}\n")
    assert said == (
        "ini key cardprobe_headers has a line with no ':' in it; each line is 'Header-Name: value'"
    )


@pytest.mark.parametrize(
    ("server", "said"),
    [
        # Found by test_fuzz_options: one slash after the scheme.
        ("http:/:S3CRET@[::1]:-1/", "'http:/[::1]:-1/' has one slash after http:; write http://"),
        ("http:/localhost:11434", "'http:/localhost:11434' has one slash after http:"),
        # A password holding a "/": its end read as the port, quoted in the message.
        ("http://alice:S3/CRET@h:1", "'http://h:1' is not a valid http(s) URL (Port could not "
         "be cast to integer value)"),
        ("http://h:/", "'http://h:/' has an empty port"),
    ],
)  # fmt: skip
def test_a_mistyped_server_url_is_refused_without_its_password(
    tmp_path: Path, server: str, said: str
) -> None:
    """Found by test_fuzz_options (``http:/:PASSWORD@[::1]:-1/``): the URL was accepted as
    the host ``http`` with the password in its path, and shown (settings, reports). Fixed in
    glue/values.server_url: one slash after the scheme and an empty port are refused, and the
    message leaves out everything before the last ``@`` and the text a port error quotes."""
    message = _configured(tmp_path, f"cardprobe_servers =\n    {server}\n")
    assert message == f"ini key cardprobe_servers {said}" or said in message, message
    assert "S3" not in message and "CRET" not in message


@pytest.mark.parametrize("flag", ["--cardprobe-cassette-dir", "--model", "--cardprobe-samples"])
def test_a_flag_given_two_dashes_as_its_value_is_a_usage_error(tmp_path: Path, flag: str) -> None:
    """Found by test_fuzz_options (``--cardprobe-cassette-dir=--``): argparse before Python
    3.12 drops a value of ``--`` and hands over an empty list without calling the reader, so
    ``Path([])`` raised TypeError (an INTERNALERROR). Fixed in glue/options._find."""
    said = _configured(tmp_path, "", f"{flag}=--")
    assert said in ("ok", f"{flag} needs a value; '--' is not one"), said
    if sys.version_info < (3, 12):
        assert said != "ok"


def test_command_line_bytes_that_are_not_utf8_are_a_usage_error(tmp_path: Path) -> None:
    """Found by test_fuzz_options (``--model`` with a byte 0xff, which ``sys.argv`` carries
    as the surrogate escape ``\\udcff``): the model name was accepted and its cassette path
    failed to encode. Fixed in types.model_problem and glue/values.server_url (whose httpx
    base URL could not be built either)."""
    said = _configured(tmp_path, "", "--model=caf\udce9")
    assert "--model 'caf\\udce9' holds bytes that are not UTF-8 text" in said, said
    said = _configured(tmp_path, "", "--cardprobe-server=http://h:1/\udcff")
    assert "--cardprobe-server 'http://h:1/\\udcff' holds bytes that are not UTF-8 text" in said


@pytest.mark.parametrize(
    ("ini", "said"),
    [
        ("cardprobe_max_file_mb = 1e308", "ini key cardprobe_max_file_mb wants a number of MB "
         "from 0.000001 (one byte) to 1000000, got 1e+308"),
        ("cardprobe_max_file_mb = 1e-320", "ini key cardprobe_max_file_mb wants a number of MB "
         "from 0.000001 (one byte) to 1000000, got 9.99989e-321"),  # a subnormal, shown as read
        ("cardprobe_timeout = 1e10", "ini key cardprobe_timeout wants a number of seconds > 0 and "
         "at most 86400, got 1e+10"),
    ],
)  # fmt: skip
def test_a_finite_number_too_large_to_use_is_a_usage_error(
    tmp_path: Path, ini: str, said: str
) -> None:
    """Found by test_fuzz_options (``cardprobe_max_file_mb = 1e308``): finite, so accepted,
    and ``int(1e308 * MB)`` raised OverflowError at configure time (an INTERNALERROR). The
    request timeout had the same gap: above about 9e9 s no socket takes it, and every live
    request raised OverflowError out of the client. Fixed in glue/values.py (``megabytes``,
    ``seconds``) and the option table: both have an upper bound, in their help. At the other
    end ``1e-320`` MB (found by the same test after the merge) was a cap of 0 bytes, so every
    file was "too large": the cap is one byte at least."""
    assert _configured(tmp_path, ini + "\n") == said


def test_a_day_is_a_request_deadline_a_socket_takes() -> None:
    """The bound of the timeout is one every socket operation can be given."""
    import socket

    from pytest_cardprobe.glue import values

    with socket.socket() as sock:
        sock.settimeout(values.seconds("86400"))


# --------------------------------------------------------------------------- bytes and text


def test_a_live_reply_that_is_not_utf8_is_infra_not_a_recording_that_cannot_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by test_fuzz_replies (an OpenAI stream with a byte 0xff spliced in): the client
    decoded the reply with replacement characters and judged it, and the cassette kept the
    raw bytes, which replay refuses as not UTF-8: a recording that could never replay.
    Fixed in wire/client.py: a reply that is not UTF-8 is malformed (infra, not recorded)."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    _serving(monkeypatch, b"\xff" + RECORDED.encode())
    result = _run(Runtime(_settings(tmp_path, "http://127.0.0.1:9", live=True), Record()), _probe())
    assert result.status == "infra"
    assert "malformed reply: not UTF-8 (invalid start byte at byte 0)" in result.samples[0].label
    assert not (tmp_path / "cassettes").exists()  # nothing recorded


def test_a_json_cassette_whose_reply_holds_a_lone_surrogate_is_corrupt(tmp_path: Path) -> None:
    """Found by test_fuzz_cassettes (a cassette written as JSON, its body string holding
    ``\\ud800``): replay raised UnicodeEncodeError encoding the body. Fixed in
    wire/cassettes/reading.py: a body string that is no text is a corrupt cassette."""
    from pytest_cardprobe.wire.cassettes.reading import read_cassette
    from pytest_cardprobe.wire.errors import CorruptCassette

    reply = '{"message": {"role": "assistant", "content": "hi"}, "done": true}\ud800'
    data = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "POST", "uri": "http://h/api/chat", "body": "{}"},
                "response": {"status": {"code": 200}, "body": {"string": reply}},
            }
        ],
    }
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))  # ASCII JSON: the surrogate travels as an escape
    with pytest.raises(CorruptCassette, match="interaction 1: response body is not text"):
        read_cassette(path)


# --------------------------------------------------------------------------- score/


def _tool_results() -> list[ProbeResult]:
    replay = Runtime(Settings(models=["smollm2:135m"], cassette_dir=ROOT / "cassettes"), Replay())
    return [_run(replay, _probe(channel="tool"))]


def _report_with(tmp_path: Path, edit: Any) -> tuple[int, str]:
    """``diff`` of the shipped replay's JSON report against itself edited by ``edit``."""
    import contextlib
    import io

    from pytest_cardprobe.cli import diff
    from pytest_cardprobe.score.aggregate import aggregate
    from pytest_cardprobe.score.gate import GateSettings, decide
    from pytest_cardprobe.score.jsonreport import json_report

    results = _tool_results()
    arms = aggregate(results)
    data = json.loads(
        json_report(
            arms, [r.to_dict() for r in results], decide(arms, results, None, GateSettings())
        )
    )
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(data))
    edit(data["tests"][0])
    new.write_text(json.dumps(data))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = diff.main([str(old), str(new)])
    return status, err.getvalue()


def _sample(**fields: Any) -> Any:
    return lambda test: test["samples"][0].update(fields)


def test_diff_refuses_a_report_with_a_figure_of_400_digits(tmp_path: Path) -> None:
    """Found by test_fuzz_scores (a sample's ``figures.generate_s`` of 400 digits, valid
    JSON): ``score/aggregate`` added it to a float, OverflowError. Fixed in
    ``score/resultread``: exit 2, the ``error:`` line naming the file and the key."""
    status, err = _report_with(
        tmp_path, lambda test: test["samples"][0]["figures"].update(generate_s=10**400)
    )
    assert status == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "new.json: tests[0].samples[0].figures: expected an object of numbers a float" in err
    assert "an object of 1" not in err and "0" * 40 not in err  # the number is not printed


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda test: test.update(condition=[]),
         "tests[0].condition: expected a string, got a list"),
        (_sample(label=7), "tests[0].samples[0].label: expected a string, got 7"),
        (_sample(index={}), "tests[0].samples[0].index: expected an integer from 0 to "),
        (_sample(stream={"naive_leak": {}}), "tests[0].samples[0].stream: expected an object of "),
        (_sample(passed=1), "tests[0].samples[0].passed: expected true or false, got 1"),
        (_sample(route="teleport"), "tests[0].samples[0].route: expected one of tool_calls, "),
        (_sample(args_as_string=10**400), "tests[0].samples[0].args_as_string: expected an "
         "integer from 0 to 1,000,000,000 or null, got an integer of 401 digits"),
        (lambda test: test.update(at_least=0), "tests[0].at_least: expected an integer from 1"),
        (lambda test: test.update(status="great"), "tests[0].status: expected one of passed, "),
        (lambda test: test.pop("case"), "tests[0].case: missing"),
        (lambda test: test.update({"\x1b[2Jx": 1}), "tests[0].\\x1b[2Jx: not a key of a test"),
        (lambda test: test.update(samples=["s"]), "tests[0].samples[0]: expected an object"),
    ],
)  # fmt: skip
def test_diff_refuses_a_report_whose_test_has_a_field_of_the_wrong_type(
    tmp_path: Path, edit: Any, said: str
) -> None:
    """Found by test_fuzz_scores (``condition`` a list; also a label that is a number,
    counts that are objects): ``results_of`` built a ProbeResult from it unchecked, and
    aggregate raised TypeError (unhashable list). Fixed in ``score/resultread``: exit 2,
    one ``error:`` line naming the file and the key (control characters escaped)."""
    status, err = _report_with(tmp_path, edit)
    assert status == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1 and "\x1b" not in err, err
    assert f"new.json: {said}" in err


def test_a_baseline_count_of_400_digits_is_a_baseline_error() -> None:
    """Found while pinning the two above (the baseline fuzz test reads the same counts): a
    baseline's ``tool_calls`` of 400 digits was an ``integer >= 0``, so ``parse_baseline``
    took it, and the gate's adoption (``tool_calls / calls``) raised OverflowError at the
    session end, after every test ran. Fixed: counts are integers from 0 to a billion
    (``score/bounds.py``), and ``tool_calls`` at most ``calls``."""
    from pytest_cardprobe.score.aggregate import aggregate
    from pytest_cardprobe.score.baseline import BaselineError, parse_baseline
    from pytest_cardprobe.score.gate import GateSettings, decide

    results = _tool_results()
    arm = results[0].arm_id
    document = {
        "format": 1,
        "arms": {arm: {"verdicts": {"date": {"passed": False, "calls": 1, "tool_calls": 10**400}}}},
    }
    try:
        baseline = parse_baseline(document, "baseline b.json")
    except BaselineError as exc:
        assert f"baseline b.json: key arms.{arm}.verdicts.date.tool_calls must be" in str(exc)
        return
    decide(aggregate(results), results, baseline, GateSettings())
    raise AssertionError("a count no float can hold was taken, and the gate did not mind")


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"calls": 10**9 + 1},
         "verdicts.date.calls must be an integer >= 0 (at most 1,000,000,000)"),
        ({"calls": 1, "tool_calls": 2},
         "verdicts.date.tool_calls must be an integer from 0 to calls (1)"),
        ({"samples_passed": 1, "samples": 10**400},
         "verdicts.date.samples must be an integer >= 1 (at most 1,000,000,000)"),
        ({"at_least": 10**400},
         "verdicts.date.at_least must be an integer from 1 to the sample count (1,000,000,000)"),
    ],
)  # fmt: skip
def test_a_baseline_count_out_of_bounds_is_a_baseline_error(entry: Any, said: str) -> None:
    """The bound is a billion (``score/bounds.py``); ``tool_calls`` above ``calls`` made an
    adoption above 100 % and a paired test whose p-value was 0."""
    from pytest_cardprobe.score.baseline import BaselineError, parse_baseline

    document = {"format": 1, "arms": {"a": {"verdicts": {"date": {"passed": True, **entry}}}}}
    with pytest.raises(BaselineError) as caught:
        parse_baseline(document, "baseline b.json")
    assert said in str(caught.value)


def test_a_baseline_at_the_bound_is_gated_in_time() -> None:
    """A case of a billion samples in the baseline (the bound) against two samples now: the
    paired test's binomials have the run's two samples as their small side, so the gate
    decides without enumerating a billion terms (the test would not end otherwise)."""
    from pytest_cardprobe.score.aggregate import aggregate
    from pytest_cardprobe.score.baseline import parse_baseline
    from pytest_cardprobe.score.gate import GateSettings, decide

    results = _tool_results()
    first = results[0].samples[0]
    results[0].samples.append(dataclasses.replace(first, index=1, passed=not first.passed))
    big = 10**9
    entry = {"passed": True, "calls": big, "tool_calls": big // 2, "samples_passed": big // 2}
    document = {
        "format": 1,
        "arms": {results[0].arm_id: {"verdicts": {"date": {**entry, "samples": big}}}},
    }
    gate = decide(aggregate(results), results, parse_baseline(document, "b"), GateSettings())
    compared = gate.arms[results[0].arm_id]
    assert compared.compared == 1 and compared.test is not None
    assert 0 <= compared.test.p_loss <= 1


def test_server_figures_a_float_holds_but_no_reply_has_do_not_crash_the_session_end() -> None:
    """Found while fixing the above: two samples whose ``eval_count`` is 1.7e308 (finite, so
    the wire keeps it) summed to infinity, and ``int(inf)`` in the arm's timing raised
    OverflowError after every test ran; a subnormal ``eval_duration`` made the token rate
    infinite, which no JSON report can hold. Figures outside 0..1e12 are left out of the
    arm's timing (``score/bounds.figure``)."""
    from pytest_cardprobe.score.aggregate import aggregate
    from pytest_cardprobe.score.gate import GateSettings, decide
    from pytest_cardprobe.score.jsonreport import json_report

    results = _tool_results()
    sample = results[0].samples[0]
    results[0].samples = [sample, sample]
    sample.figures = {
        "prompt_tokens": 1.7e308,
        "total_s": 1.7e308,
        "generated_tokens": 10,
        "generate_s": 5e-324,
    }
    arms = aggregate(results)
    report = json.loads(
        json_report(
            arms, [r.to_dict() for r in results], decide(arms, results, None, GateSettings())
        )
    )
    timing = report["arms"][0]["timing"]
    assert timing["prompt_tokens"] == 0 and timing["latency_median_s"] is None, timing
    assert timing["generated_tokens"] == 20, timing
    assert timing["tokens_per_s"] is None, timing
