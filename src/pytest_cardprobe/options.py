"""Command-line options and ini keys, and turning them into :class:`Settings`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_cardprobe.runtime import Settings
from pytest_cardprobe.suite.loader import ALL_CHANNELS, CONDITIONS
from pytest_cardprobe.wire.client import APIS

DEFAULT_SERVER = "http://127.0.0.1:11434"


def _bounded(
    flag: str, convert: type[int] | type[float], wants: str, ok: Callable[[float], bool]
) -> Callable[[str], float]:
    """An argparse ``type=`` converting with ``convert`` and naming ``flag`` in its error."""

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} wants {wants}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"{flag} wants {wants}, got {value:g}")
        return value

    return parse


def positive_int(flag: str) -> type[int]:
    """An argparse ``type=`` that accepts integers >= 1."""
    return _bounded(flag, int, "an integer >= 1", lambda v: v >= 1)  # type: ignore[return-value]


def non_negative_int(flag: str) -> type[int]:
    """An argparse ``type=`` for integers >= 0."""
    return _bounded(flag, int, "an integer >= 0", lambda v: v >= 0)  # type: ignore[return-value]


def positive_float(flag: str) -> type[float]:
    """An argparse ``type=`` for numbers > 0."""
    return _bounded(flag, float, "a number > 0", lambda v: v > 0)  # type: ignore[return-value]


def add_options(parser: pytest.Parser) -> None:
    """Register every option and ini key in one group."""
    group = parser.getgroup("cardprobe", "local-model behaviour tests (pytest-cardprobe)")
    group.addoption(
        "--model",
        action="append",
        dest="cardprobe_models",
        metavar="NAME",
        default=[],
        help="model to probe; repeat for several (ini: cardprobe_models)",
    )
    group.addoption(
        "--live",
        action="store_true",
        dest="cardprobe_live",
        help="ask the real server and re-record cassettes (default: replay cassettes offline)",
    )
    group.addoption(
        "--api",
        dest="cardprobe_api",
        choices=APIS,
        default=None,
        help="wire API: ollama (/api/chat) or openai (/v1/chat/completions); default ollama",
    )
    group.addoption(
        "--server",
        action="append",
        dest="cardprobe_servers",
        metavar="URL",
        default=[],
        help="server base URL; repeat to spread xdist workers over servers "
        f"(default: $OLLAMA_HOST, else {DEFAULT_SERVER})",
    )
    group.addoption(
        "--samples",
        dest="cardprobe_samples",
        type=positive_int("--samples"),
        metavar="N",
        default=None,
        help="samples per test, overriding suites and samples(n) markers",
    )
    group.addoption(
        "--channel",
        action="append",
        dest="cardprobe_channels",
        choices=ALL_CHANNELS,
        default=[],
        help="only this channel (repeatable)",
    )
    group.addoption(
        "--condition",
        action="append",
        dest="cardprobe_conditions",
        choices=CONDITIONS,
        default=[],
        help="only this condition (repeatable)",
    )
    group.addoption(
        "--stream",
        action="store_true",
        dest="cardprobe_stream",
        default=None,
        help="ask with stream:true and assemble the streamed reply (ini: cardprobe_stream)",
    )
    group.addoption(
        "--cassette-dir",
        dest="cardprobe_cassette_dir",
        metavar="DIR",
        default=None,
        help="where cassettes live (ini: cardprobe_cassette_dir; default cassettes/)",
    )
    group.addoption(
        "--request-timeout",
        dest="cardprobe_timeout",
        type=positive_float("--request-timeout"),
        metavar="SECONDS",
        default=None,
        help="timeout of one model call (ini: cardprobe_timeout; default 120)",
    )
    group.addoption(
        "--noise-floor",
        dest="cardprobe_noise_floor",
        type=non_negative_int("--noise-floor"),
        metavar="K",
        default=None,
        help="cases an arm may lose before it counts as a regression "
        "(ini: cardprobe_noise_floor; default 1)",
    )
    group.addoption(
        "--baseline",
        dest="cardprobe_baseline",
        metavar="PATH",
        default=None,
        help="baseline file (ini: cardprobe_baseline; default cardprobe-baseline.json)",
    )
    group.addoption(
        "--update-baseline",
        action="store_true",
        dest="cardprobe_update_baseline",
        help="write this run's verdicts as the new baseline instead of gating",
    )
    group.addoption(
        "--strict-baseline",
        action="store_true",
        dest="cardprobe_strict_baseline",
        help="fail when an arm has no baseline",
    )
    group.addoption(
        "--strict-tools",
        action="store_true",
        dest="cardprobe_strict_tools",
        default=None,
        help="tool-definition lint findings of call suites are usage errors, not warnings "
        "(ini: cardprobe_strict_tools)",
    )
    group.addoption(
        "--cardprobe-json",
        dest="cardprobe_json",
        metavar="PATH",
        default=None,
        help="write the JSON report (every sample's verdict, route and label) here",
    )
    group.addoption(
        "--cardprobe-md",
        dest="cardprobe_md",
        metavar="PATH",
        default=None,
        help="write a Markdown report here (also appended to $GITHUB_STEP_SUMMARY)",
    )
    parser.addini("cardprobe_models", "models to probe", type="linelist", default=[])
    parser.addini(
        "cardprobe_strict_tools",
        "tool-definition lint findings are usage errors",
        type="bool",
        default=False,
    )
    parser.addini("cardprobe_api", "wire API: ollama or openai", default="ollama")
    parser.addini("cardprobe_servers", "server base URLs", type="linelist", default=[])
    parser.addini("cardprobe_stream", "ask with stream:true", type="bool", default=False)
    parser.addini("cardprobe_cassette_dir", "cassette folder", default="cassettes")
    parser.addini("cardprobe_timeout", "timeout of one model call in seconds", default="120")
    parser.addini("cardprobe_retries", "retries of an infra failure", default="2")
    parser.addini("cardprobe_num_ctx", "options.num_ctx of every request", default="16384")
    parser.addini("cardprobe_keep_alive", "keep_alive of every Ollama request", default="10m")
    parser.addini("cardprobe_noise_floor", "cases an arm may lose", default="1")
    parser.addini("cardprobe_baseline", "baseline file", default="cardprobe-baseline.json")
    parser.addini(
        "cardprobe_max_unscored",
        "share of cases (0-1) that may be unscored before the gate is inconclusive",
        default="0.2",
    )


def _ini_number(config: pytest.Config, name: str, kind: type[float] | type[int]) -> float:
    raw = config.getini(name)
    try:
        value = kind(str(raw))
    except ValueError:
        raise pytest.UsageError(f"ini key {name} wants a number, got {raw!r}") from None
    if value < 0:
        raise pytest.UsageError(f"ini key {name} must not be negative, got {raw!r}")
    return value


def normalise_server(url: str) -> str:
    """``OLLAMA_HOST`` style ``host:port`` or ``0.0.0.0`` to a usable base URL."""
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = f"http://{url}"
    scheme, rest = url.split("://", 1)
    host = rest.split("/", 1)[0]
    if host.startswith("0.0.0.0"):
        rest = "127.0.0.1" + rest[len("0.0.0.0") :]
    elif ":" not in host.rsplit("]", 1)[-1]:
        rest = rest.replace(host, f"{host}:11434", 1) if scheme == "http" else rest
    return f"{scheme}://{rest}"


def resolve_settings(config: pytest.Config) -> Settings:
    """Options win over ini keys, ini keys over defaults."""
    opt = config.option
    root = Path(str(config.rootpath))
    servers = list(opt.cardprobe_servers) or list(config.getini("cardprobe_servers"))
    if not servers:
        servers = [os.environ.get("OLLAMA_HOST") or DEFAULT_SERVER]
    api = opt.cardprobe_api or str(config.getini("cardprobe_api"))
    if api not in APIS:
        raise pytest.UsageError(
            f"ini key cardprobe_api must be one of {', '.join(APIS)}; got {api!r}"
        )
    stream = opt.cardprobe_stream if opt.cardprobe_stream is not None else None
    if stream is None:
        stream = bool(config.getini("cardprobe_stream"))
    cassette_dir = Path(opt.cardprobe_cassette_dir or str(config.getini("cardprobe_cassette_dir")))
    timeout = opt.cardprobe_timeout or _ini_number(config, "cardprobe_timeout", float)
    return Settings(
        models=list(opt.cardprobe_models) or list(config.getini("cardprobe_models")),
        live=bool(opt.cardprobe_live),
        api=api,
        servers=[normalise_server(s) for s in servers],
        samples=opt.cardprobe_samples,
        channels=list(opt.cardprobe_channels),
        conditions=list(opt.cardprobe_conditions),
        num_ctx=int(_ini_number(config, "cardprobe_num_ctx", int)),
        timeout=float(timeout),
        retries=int(_ini_number(config, "cardprobe_retries", int)),
        keep_alive=str(config.getini("cardprobe_keep_alive")),
        stream=stream,
        cassette_dir=cassette_dir if cassette_dir.is_absolute() else root / cassette_dir,
        api_key=os.environ.get("CARDPROBE_API_KEY") or None,
        strict_tools=bool(
            opt.cardprobe_strict_tools
            if opt.cardprobe_strict_tools is not None
            else config.getini("cardprobe_strict_tools")
        ),
    )
