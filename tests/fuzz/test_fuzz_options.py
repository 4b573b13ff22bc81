"""Fuzz: hostile option values, on the command line, in ini keys and in the environment.

Each example configures pytest in process (``_pytest.config._prepareconfig``, the plugin
loaded through its entry point) with a few of the plugin's settings given hostile values:
NaN, ``inf``, ``1e308``, ``1e-320``, a 400-digit integer, negative numbers, Unicode digits,
control characters, a byte that is not UTF-8 (as ``sys.argv`` carries it, a lone
surrogate), very long text, server URLs and header lines carrying a password, a secret query
parameter or a token, and the same through ``$OLLAMA_HOST`` and ``$CARDPROBE_API_KEY``. Then
``glue/options.resolve_settings`` (what ``pytest_configure`` runs) either raises
``pytest.UsageError`` naming the flag, ini key or variable and never the secret, or gives
``Settings`` whose numbers are finite, whose servers are usable URLs, whose model names make
cassette paths and request bodies, and whose ``repr`` carries no secret.

Budget: see ``test_fuzz_replies.py``.
"""

from __future__ import annotations

import math
import socket
import urllib.parse
from pathlib import Path

import pytest
from _pytest.config import _prepareconfig
from fuzzing import API_KEY, KEY, PASSWORD, TOKEN, fuzz_settings, leaked
from hypothesis import given
from hypothesis import strategies as st

from pytest_cardprobe.glue.option_table import SPECS, Spec
from pytest_cardprobe.glue.options import resolve_settings
from pytest_cardprobe.glue.state import get_state
from pytest_cardprobe.types import ChatRequest
from pytest_cardprobe.wire import values
from pytest_cardprobe.wire.cassettes.paths import cassette_path
from pytest_cardprobe.wire.client import ChatClient

NUMBER_TEXT = (
    "nan", "NaN", "inf", "-inf", "Infinity", "1e308", "1e309", "1e-320", "-1", "0", "-0", "1e10",
    " 3 ", "1_000", "0x10", "1.5", "3.", ".5", "٣", "\uff11\uff12", "1" + "0" * 400, "9" * 5000, "",
    " ", "true", "None",
)  # fmt: skip
ODD = (
    "\x00", "\x1b[2J", "a\nb", "a\rb", "\t", "\udcff", "caf\udce9", "é", "\u202e", "..",
    "/etc/passwd", "../x", "a" * 5000, "-x", "--", "=", "a b", "smollm2:135m",
)  # fmt: skip
HOSTS = ("127.0.0.1", "localhost", "[::1]", "[::1", "h\udcff", "xn--", "a b", "", "0.0.0.0")
PORTS = ("", ":1", ":0", ":65536", ":1143a", ":-1", ":99999999999999999999", ":٣")


@st.composite
def server(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http://", "https://", "ftp://", "", "http:/", "HTTP://"]))
    user = draw(
        st.sampled_from(
            [f"alice:{PASSWORD}@", "", f":{PASSWORD}@", f"{PASSWORD}@", f"alice:{PASSWORD}/x@"]
        )
    )
    host, port = draw(st.sampled_from(HOSTS)), draw(st.sampled_from(PORTS))
    path = draw(st.sampled_from(["", "/", "/v1", f"/?key={KEY}", f"?token={KEY}", "/\udcff", "#x"]))
    return scheme + user + host + port + path


@st.composite
def header(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(["X-Auth", "Authorization", "X Auth", "", "X-\udcff", "é"]))
    # A line break can only come from a variable ($FUZZ_INJECT: the token, CR LF, a header).
    value = draw(
        st.sampled_from(
            [
                TOKEN,
                f"Bearer {TOKEN}",
                "${FUZZ_INJECT}",
                f"{TOKEN}:x",
                f"{TOKEN}é",
                f"{TOKEN}\x00",
                "$NOT_SET",
                "${HOME}",
                "",
            ]
        )
    )
    return f"{name}{draw(st.sampled_from([': ', ':', ' ', '']))}{value}"


NUMERIC = (values.positive_int, values.non_negative_int, values.positive_float, values.share)


def value_for(spec: Spec) -> st.SearchStrategy[str]:
    if spec.name == "servers":
        return server()
    if spec.name == "headers":
        return header()
    if spec.read in NUMERIC:
        return st.sampled_from(NUMBER_TEXT)
    return st.one_of(
        st.sampled_from(NUMBER_TEXT),
        st.sampled_from(ODD),
        st.sampled_from(spec.choices or ("x",)),
        st.text(max_size=12),
    )


VALUED = [s for s in SPECS if s.kind in ("value", "list")]
INI_SAFE = str.maketrans("", "", "\x00\r\n\udcff\udce9")


@st.composite
def configuration(draw: st.DrawFn) -> tuple[list[str], list[str], dict[str, str]]:
    """Command-line arguments, ini lines and environment variables."""
    args, ini, env = [], ["[pytest]"], {}
    for spec in draw(st.lists(st.sampled_from(VALUED), min_size=1, max_size=4, unique=True)):
        value = draw(value_for(spec))
        on_line = spec.flag is not None and (spec.ini is None or draw(st.booleans()))
        if on_line:
            flag = spec.old if spec.old and draw(st.integers(0, 4)) == 4 else spec.flag
            args.append(f"{flag}={value}")
        elif spec.ini:
            # An ini file is UTF-8 text of lines: what cannot be in one is not tried there.
            text = value.translate(INI_SAFE)
            ini.append(
                f"{spec.ini} = {text}" if spec.kind == "value" else f"{spec.ini} =\n    {text}"
            )
    if draw(st.integers(0, 3)) == 3:
        env["OLLAMA_HOST"] = draw(server()).replace("\x00", "")
    if draw(st.integers(0, 3)) == 3:
        env["CARDPROBE_API_KEY"] = API_KEY + draw(st.sampled_from(["", "é", "\t", " x", "\x7f"]))
    return args, ini, env


NAMED = ("--", "cardprobe_", "OLLAMA_HOST", "CARDPROBE_API_KEY", "argument ", "pytest.ini")
SECRETS = (PASSWORD, KEY, TOKEN, API_KEY)


@fuzz_settings(150)
@given(config=configuration(), live=st.booleans())
def test_hostile_option_values_are_a_usage_error_naming_them_or_usable_settings(
    sandbox: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: tuple[list[str], list[str], dict[str, str]],
    live: bool,
) -> None:
    args, ini, env = config
    monkeypatch.setenv("FUZZ_INJECT", f"{TOKEN}\r\nX-Evil: 1")
    for name in ("OLLAMA_HOST", "CARDPROBE_API_KEY"):
        if name in env:
            monkeypatch.setenv(name, env[name])
        else:
            monkeypatch.delenv(name, raising=False)
    inifile = sandbox / "pytest.ini"
    inifile.write_text("\n".join(ini) + "\n", encoding="utf-8")
    argv = ["-p", "no:cacheprovider", "-c", str(inifile), "--rootdir", str(sandbox), *args]
    if live:
        argv.append("--live")
    try:
        pytest_config = _prepareconfig(argv)
    except pytest.UsageError as exc:  # argparse: a choice or a number it refused
        message = str(exc)
        assert any(word in message for word in NAMED), message
        assert not leaked(message, SECRETS), message
        return
    try:
        try:
            # The plugin's pytest_configure: settings, baseline, output paths (no request:
            # the preflight runs at collection).
            pytest_config._do_configure()
        except pytest.UsageError as exc:
            message = str(exc)
            assert any(word in message for word in NAMED), message
            assert not leaked(message, SECRETS), message
            return
        state = get_state(pytest_config)
        settings = state.settings
        assert settings == resolve_settings(pytest_config)
        assert state.runtime.backend is not None and state.limits.max_bytes > 0
    finally:
        pytest_config._ensure_unconfigure()
    # What a live run does with the request timeout: every socket operation is bounded by it.
    with socket.socket() as sock:
        sock.settimeout(settings.timeout)
    assert not leaked(repr(settings), SECRETS), repr(settings)
    for number in (settings.timeout, settings.max_file_mb, settings.gate.max_unscored):
        assert math.isfinite(number) and number >= 0
    for url in settings.servers:
        parts = urllib.parse.urlsplit(url)
        assert parts.scheme in ("http", "https") and parts.hostname and parts.port != 0
        client = ChatClient(settings.client_settings(url))
        assert client._http is not None  # its pool, base URL, headers, transport: no request
        client.close()
    for model in settings.models:
        cassette_path(sandbox / "c", "s", model, "case", "prose", "cold")
        request = ChatRequest(model, [{"role": "user", "content": "q"}], options={"k": 1})
        client = ChatClient(settings.client_settings(settings.servers[0]))
        client.wire_request(request)[2].encode("utf-8")
    for value in settings.headers.values():
        value.encode("ascii")
