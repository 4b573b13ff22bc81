"""Command-line options and ini keys, and turning them into :class:`Settings`."""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.run.settings import DEFAULT_SERVER, Settings
from pytest_cardprobe.score.gate import GATE_MODES, GateSettings
from pytest_cardprobe.suite.builtin import UnknownSuite, builtin_suite_path
from pytest_cardprobe.suite.loader import ALL_CHANNELS, CONDITIONS, THINK_LEVELS
from pytest_cardprobe.wire.cassettes.modes import RECORD_MODES
from pytest_cardprobe.wire.client import APIS

# Defaults of the ini keys, read from the classes that own them (each written once).
_DEFAULT = Settings(models=[])
_GATE = GateSettings()


def _bounded(
    flag: str, convert: type[int] | type[float], wants: str, ok: Callable[[float], bool]
) -> Callable[[str], float]:
    """An argparse ``type=`` converting with ``convert`` and naming ``flag`` in its error."""

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} wants {wants}, got {text!r}") from None
        if not math.isfinite(value) or not ok(value):
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


def share(flag: str) -> type[float]:
    """An argparse ``type=`` for a share between 0 and 1."""
    return _bounded(flag, float, "a number from 0 to 1", lambda v: 0 <= v <= 1)  # type: ignore[return-value]


# Whitespace and control characters: a model name is one word, and it lands in file names,
# test ids and terminal lines.
_BAD_MODEL_CHARS = re.compile(r"[\s\x00-\x1f\x7f-\x9f\\]")


def model_problem(name: str) -> str | None:
    """Why ``name`` cannot be a model name, or None.

    Names like ``library/llama3`` or ``hf.co/org/repo:Q4`` are real Ollama names, so a
    ``/`` between parts is fine; what looks like a path (empty, ``.``/``..`` parts, a
    leading ``/``, a backslash) or holds control characters is refused.
    """
    if not name.strip():
        return "is empty"
    if _BAD_MODEL_CHARS.search(name):
        return "holds whitespace, a backslash or control characters"
    if name.startswith("/") or any(part in ("", ".", "..") for part in name.split("/")):
        return "looks like a file path, not a model name"
    return None


def checked_models(names: list[str], where: str, config: pytest.Config) -> list[str]:
    """Models in order, each checked; a repeated one is dropped with a warning."""
    seen: dict[str, None] = {}
    for name in names:
        problem = model_problem(name)
        if problem:
            raise pytest.UsageError(f"{where} {name!r} {problem}")
        if name in seen:
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(f"{where} {name!r} is given twice; its tests run once"),
                stacklevel=2,
            )
        seen[name] = None
    return list(seen)


def _headers(lines: list[str]) -> dict[str, str]:
    """``Name: value`` lines of ini ``cardprobe_headers``; ``$VAR`` in a value is expanded."""
    found: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+", name.strip()):
            raise pytest.UsageError(
                f"ini key cardprobe_headers: {name.strip()!r} is not 'Header-Name: value'"
            )
        found[name.strip()] = os.path.expandvars(value.strip())
    return found


# ---- gate mode (issue 21): --cardprobe-gate / --cardprobe-alpha and their ini keys, kept
# together in this one block (and one line each in add_options and resolve_settings).
def _add_gate_mode(group: Any, parser: pytest.Parser) -> None:
    group.addoption(
        "--cardprobe-gate",
        dest="cardprobe_gate",
        choices=GATE_MODES,
        default=None,
        help="how an arm regresses: floor (lost more than --noise-floor cases; the default) or "
        "significance (the paired test says the loss is significant at --cardprobe-alpha) "
        "(ini: cardprobe_gate)",
    )
    group.addoption(
        "--cardprobe-alpha",
        dest="cardprobe_alpha",
        type=_bounded("--cardprobe-alpha", float, "a number between 0 and 1", lambda v: 0 < v < 1),
        metavar="ALPHA",
        default=None,
        help=f"significance level of --cardprobe-gate significance (ini: cardprobe_alpha; "
        f"default {_GATE.alpha:g})",
    )
    parser.addini("cardprobe_gate", "gate mode: floor or significance", default=_GATE.mode)
    parser.addini(
        "cardprobe_alpha",
        "significance level of the gate mode significance",
        default=f"{_GATE.alpha:g}",
    )


def _gate_mode(config: pytest.Config) -> dict[str, Any]:
    """The gate mode and its alpha: options over ini keys, each error naming flag or key."""
    opt = config.option
    mode = opt.cardprobe_gate or _choice(config, "cardprobe_gate", GATE_MODES)
    alpha = opt.cardprobe_alpha
    if alpha is None:
        alpha = _ini(
            config,
            "cardprobe_alpha",
            _bounded("cardprobe_alpha", float, "a number between 0 and 1", lambda v: 0 < v < 1),
        )
    return {"mode": mode, "alpha": float(alpha)}


# ---- end of the gate-mode block


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
        "--cardprobe-suite",
        action="append",
        dest="cardprobe_suites",
        metavar="NAME",
        default=[],
        help="add a built-in suite to the run; repeat for several; `list` prints them "
        "(ini: cardprobe_suites)",
    )
    group.addoption(
        "--live",
        action="store_true",
        dest="cardprobe_live",
        help="ask the real server and re-record every selected test (--record-mode rewrite)",
    )
    group.addoption(
        "--record-mode",
        dest="cardprobe_record_mode",
        choices=RECORD_MODES,
        default=None,
        help="none: replay only (default); once: record tests without a cassette, replay the "
        "rest; stale: also re-record stale ones; rewrite: re-record every selected test",
    )
    group.addoption(
        "--think",
        dest="cardprobe_think",
        choices=THINK_LEVELS,
        default=None,
        help="reasoning level: off (default), on, low, medium, high; Ollama think / OpenAI "
        "reasoning_effort; beats a suite's think key (ini: cardprobe_think)",
    )
    group.addoption(
        "--no-warmup",
        action="store_false",
        dest="cardprobe_warmup",
        default=True,
        help="live runs: skip the unrecorded warm-up request before each model's first "
        "recorded one",
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
        help=f"timeout of one model call (ini: cardprobe_timeout; default {_DEFAULT.timeout:g})",
    )
    group.addoption(
        "--noise-floor",
        dest="cardprobe_noise_floor",
        type=non_negative_int("--noise-floor"),
        metavar="K",
        default=None,
        help="cases an arm may lose before it counts as a regression "
        f"(ini: cardprobe_noise_floor; default {_GATE.noise_floor})",
    )
    _add_gate_mode(group, parser)
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
        help="merge this run's verdicts into the baseline instead of gating (cases that did "
        "not run keep their entries)",
    )
    group.addoption(
        "--cardprobe-prune-baseline",
        action="store_true",
        dest="cardprobe_prune_baseline",
        help="like --update-baseline, and also remove the cases and arms the collected suites "
        "no longer have",
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
    group.addoption(
        "--cardprobe-html",
        dest="cardprobe_html",
        metavar="PATH",
        default=None,
        help="write a self-contained HTML report (charts, case x arm grid, whole replies) here",
    )
    parser.addini("cardprobe_models", "models to probe", type="linelist", default=[])
    parser.addini(
        "cardprobe_suites", "built-in suites added to every run", type="linelist", default=[]
    )
    parser.addini(
        "cardprobe_strict_tools",
        "tool-definition lint findings are usage errors",
        type="bool",
        default=_DEFAULT.strict_tools,
    )
    parser.addini("cardprobe_api", "wire API: ollama or openai", default=_DEFAULT.api)
    parser.addini("cardprobe_servers", "server base URLs", type="linelist", default=[])
    parser.addini("cardprobe_stream", "ask with stream:true", type="bool", default=_DEFAULT.stream)
    parser.addini("cardprobe_cassette_dir", "cassette folder", default=str(_DEFAULT.cassette_dir))
    parser.addini(
        "cardprobe_timeout", "timeout of one model call in seconds", default=f"{_DEFAULT.timeout:g}"
    )
    parser.addini("cardprobe_retries", "retries of an infra failure", default=str(_DEFAULT.retries))
    parser.addini(
        "cardprobe_num_ctx", "options.num_ctx of every request", default=str(_DEFAULT.num_ctx)
    )
    parser.addini(
        "cardprobe_keep_alive", "keep_alive of every Ollama request", default=_DEFAULT.keep_alive
    )
    parser.addini(
        "cardprobe_think",
        "reasoning level when neither --think nor the suite says: off, on, low, medium, high",
        default=_DEFAULT.think_default,
    )
    parser.addini(
        "cardprobe_breaker",
        "consecutive infra failures on one server before its remaining tests fail at once",
        default=str(_DEFAULT.breaker),
    )
    parser.addini(
        "cardprobe_parallel",
        "requests in flight per server across all xdist workers",
        default=str(_DEFAULT.parallel),
    )
    parser.addini("cardprobe_noise_floor", "cases an arm may lose", default=str(_GATE.noise_floor))
    parser.addini("cardprobe_baseline", "baseline file", default=str(_DEFAULT.baseline))
    parser.addini(
        "cardprobe_max_samples",
        "upper bound of samples (suite key, samples(n) marker, --samples)",
        default=str(_DEFAULT.max_samples),
    )
    parser.addini(
        "cardprobe_max_file_mb",
        "size cap in MB of every file the plugin reads (suites, prompts, cassettes, baseline)",
        default=f"{_DEFAULT.max_file_mb:g}",
    )
    parser.addini(
        "cardprobe_redact_fields",
        "request-body keys (at any depth) replaced by [redacted] before a request is recorded",
        type="linelist",
        default=[],
    )
    parser.addini(
        "cardprobe_headers",
        "extra request headers, one 'Name: value' a line ($VAR expanded); never recorded",
        type="linelist",
        default=[],
    )
    parser.addini(
        "cardprobe_max_unscored",
        "share of cases (0-1) that may be unscored before the gate is inconclusive",
        default=f"{_GATE.max_unscored:g}",
    )


def _ini(config: pytest.Config, name: str, parse: Callable[[str], float]) -> float:
    """An ini number checked by the same parser as its command-line option."""
    raw = str(config.getini(name))
    try:
        return parse(raw)
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini key {name}: {exc}") from None


def _path(root: Path, raw: str | None) -> Path | None:
    if not raw:
        return None
    path = Path(raw)
    return path if path.is_absolute() else root / path


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


def _choice(config: pytest.Config, name: str, allowed: tuple[str, ...]) -> str:
    """An ini value that must be one of ``allowed``."""
    raw = str(config.getini(name)).strip()
    if raw not in allowed:
        raise pytest.UsageError(f"ini key {name} must be one of {', '.join(allowed)}; got {raw!r}")
    return raw


def _record_mode(live: bool, mode: str | None) -> str:
    """``--live`` is short for ``--record-mode rewrite``; asking for both differently is wrong."""
    if live and mode not in (None, "rewrite"):
        raise pytest.UsageError(
            f"--live means --record-mode rewrite; it cannot be combined with --record-mode {mode}"
        )
    return "rewrite" if live else (mode or "none")


def resolve_settings(config: pytest.Config) -> Settings:
    """Options win over ini keys, ini keys over defaults; read once, in ``pytest_configure``."""
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
    stream = opt.cardprobe_stream
    if stream is None:
        stream = bool(config.getini("cardprobe_stream"))
    cassette_dir = _path(
        root, opt.cardprobe_cassette_dir or str(config.getini("cardprobe_cassette_dir"))
    )
    timeout = opt.cardprobe_timeout or _ini(
        config, "cardprobe_timeout", positive_float("cardprobe_timeout")
    )
    floor = opt.cardprobe_noise_floor
    if floor is None:
        floor = _ini(config, "cardprobe_noise_floor", non_negative_int("cardprobe_noise_floor"))
    baseline = _path(root, opt.cardprobe_baseline or str(config.getini("cardprobe_baseline")))
    suites = list(opt.cardprobe_suites) or list(config.getini("cardprobe_suites"))
    for name in suites:
        try:
            builtin_suite_path(name)
        except UnknownSuite as exc:
            flag = "--cardprobe-suite" if opt.cardprobe_suites else "ini key cardprobe_suites"
            raise pytest.UsageError(f"{flag}: {exc}") from None
    if opt.cardprobe_models:
        models = checked_models(list(opt.cardprobe_models), "--model", config)
    else:
        models = checked_models(
            list(config.getini("cardprobe_models")), "ini key cardprobe_models:", config
        )
    max_samples = int(_ini(config, "cardprobe_max_samples", positive_int("cardprobe_max_samples")))
    if opt.cardprobe_samples is not None and opt.cardprobe_samples > max_samples:
        raise pytest.UsageError(
            f"--samples {opt.cardprobe_samples} is more than the limit of {max_samples} "
            "(ini cardprobe_max_samples)"
        )
    return Settings(
        models=models,
        suites=list(dict.fromkeys(suites)),
        max_samples=max_samples,
        max_file_mb=_ini(config, "cardprobe_max_file_mb", positive_float("cardprobe_max_file_mb")),
        redact_fields=[*_DEFAULT.redact_fields, *config.getini("cardprobe_redact_fields")],
        headers=_headers(list(config.getini("cardprobe_headers"))),
        record_mode=_record_mode(opt.cardprobe_live, opt.cardprobe_record_mode),
        api=api,
        servers=[normalise_server(s) for s in servers],
        samples=opt.cardprobe_samples,
        channels=list(opt.cardprobe_channels),
        conditions=list(opt.cardprobe_conditions),
        num_ctx=int(_ini(config, "cardprobe_num_ctx", positive_int("cardprobe_num_ctx"))),
        timeout=float(timeout),
        retries=int(_ini(config, "cardprobe_retries", non_negative_int("cardprobe_retries"))),
        keep_alive=str(config.getini("cardprobe_keep_alive")),
        stream=stream,
        cassette_dir=cassette_dir or root / _DEFAULT.cassette_dir,
        api_key=os.environ.get("CARDPROBE_API_KEY") or None,
        strict_tools=bool(
            opt.cardprobe_strict_tools
            if opt.cardprobe_strict_tools is not None
            else config.getini("cardprobe_strict_tools")
        ),
        gate=GateSettings(
            noise_floor=int(floor),
            strict_baseline=bool(opt.cardprobe_strict_baseline),
            max_unscored=_ini(config, "cardprobe_max_unscored", share("cardprobe_max_unscored")),
            **_gate_mode(config),
        ),
        baseline=baseline or root / _DEFAULT.baseline,
        update_baseline=bool(opt.cardprobe_update_baseline or opt.cardprobe_prune_baseline),
        prune_baseline=bool(opt.cardprobe_prune_baseline),
        json_report=_path(root, opt.cardprobe_json),
        md_report=_path(root, opt.cardprobe_md),
        think=opt.cardprobe_think,
        warmup=bool(opt.cardprobe_warmup),
        think_default=_choice(config, "cardprobe_think", THINK_LEVELS),
        breaker=int(_ini(config, "cardprobe_breaker", positive_int("cardprobe_breaker"))),
        parallel=int(_ini(config, "cardprobe_parallel", positive_int("cardprobe_parallel"))),
        html_report=_path(root, opt.cardprobe_html),
    )
