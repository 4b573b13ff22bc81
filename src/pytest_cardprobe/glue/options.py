"""Registering the option table (option_table.py) with pytest and resolving it into Settings.

One loop registers every flag, deprecated spelling and ini key; one loop reads each setting
(the flag wins over its old spelling, either over the ini key, the ini key over the default)
and checks it with the reader its row names. What no single row can say (``--live`` against
``--cardprobe-record-mode``, models given twice, the sample limit) is checked afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_cardprobe.glue.option_table import GATE_FIELDS, SPECS, Spec
from pytest_cardprobe.glue.roles import is_worker
from pytest_cardprobe.run.settings import DEFAULT_SERVER, Settings
from pytest_cardprobe.score.gate import GateSettings
from pytest_cardprobe.suite.builtin import UnknownSuite, builtin_suite_path
from pytest_cardprobe.wire import values

#: pytest-recording's own ``--record-mode``: when that plugin is in the run, ours is only
#: read from ``--cardprobe-record-mode``.
RECORDING_DIST = "pytest-recording"
RECORDING_MODULE = "pytest_recording"


class CardprobeDeprecationWarning(DeprecationWarning):
    """An option spelling that still works but has a new name."""


def _argparse_type(spec: Spec, flag: str) -> Any:
    """The row's reader as an argparse ``type=``, naming ``flag`` in its error."""

    def read(text: str) -> Any:
        try:
            return spec.read(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{flag} {exc}") from None

    return read


def _argparse_kwargs(spec: Spec, flag: str) -> dict[str, Any]:
    if spec.kind == "on":
        return {"action": "store_true", "default": None}
    if spec.kind == "off":
        return {"action": "store_false", "default": None}
    kwargs: dict[str, Any] = {"default": None, "metavar": spec.metavar}
    if spec.kind == "list":
        kwargs["action"] = "append"
    if spec.choices:
        kwargs["choices"] = spec.choices
    elif spec.read is not values.text:
        kwargs["type"] = _argparse_type(spec, flag)
    return kwargs


def _help(spec: Spec) -> str:
    said = [f"ini: {spec.ini}"] if spec.ini else []
    if spec.shown_default != "—":
        said.append(f"default: {spec.shown_default.replace('`', '')}")
    return f"{spec.help} ({'; '.join(said)})" if said else spec.help


def _ini_default(spec: Spec) -> Any:
    """The default as pytest hands it back from ``getini`` when the key is not set."""
    value = spec.default
    if spec.kind == "list":  # the lines given, added to (or standing in for) the default
        return []
    if spec.kind != "value":
        return bool(value)
    if isinstance(value, float):
        return f"{value:g}"
    return "" if value is None else str(value)


def _plugin_args(pluginmanager: pytest.PytestPluginManager) -> tuple[list[str], bool]:
    """The ``-p`` names of this run and whether entry-point plugins load automatically."""
    config = pluginmanager.get_plugin("pytestconfig")
    known = getattr(config, "known_args_namespace", None)
    if known is not None:  # registered while pytest parses the command line (the usual case)
        autoload = not getattr(known, "disable_plugin_autoload", False)
        names = list(getattr(known, "plugins", None) or [])
    else:  # registered before parsing (pytest.main(plugins=...)): read the raw arguments
        params = getattr(config, "invocation_params", None)
        args = [
            *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
            *(params.args if params else ()),
        ]
        names = [
            b if a == "-p" else a[2:]
            for a, b in zip(args, [*args[1:], ""], strict=True)
            if a.startswith("-p")
        ]
        autoload = "--disable-plugin-autoload" not in args
    autoload = autoload and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    names += [n for n in os.environ.get("PYTEST_PLUGINS", "").split(",") if n]
    return [str(n).strip() for n in names], autoload


def recording_in_run(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether pytest-recording is, or will be, loaded into this run.

    Plugins register their options in the order they load, and entry-point plugins load in
    no fixed order, so its ``--record-mode`` may not be registered yet: it is found by its
    ``pytest11`` entry point (unless autoloading is off or ``-p no:NAME`` blocks it), by a
    ``-p`` argument, or as a plugin already registered.
    """
    for plugin in pluginmanager.get_plugins():
        if str(getattr(plugin, "__name__", "")).startswith(RECORDING_MODULE):
            return True
    names, autoload = _plugin_args(pluginmanager)
    try:
        points = importlib.metadata.distribution(RECORDING_DIST).entry_points
    except importlib.metadata.PackageNotFoundError:
        points = importlib.metadata.EntryPoints(())
    ours = [ep for ep in points if ep.group == "pytest11"]
    named = {ep.name for ep in ours} | {ep.value for ep in ours} | {RECORDING_MODULE}
    if any(name in named for name in names):
        return True
    return autoload and any(
        not pluginmanager.is_blocked(ep.name) and f"no:{ep.name}" not in names for ep in ours
    )


def add_options(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Register every flag, deprecated spelling and ini key of the table in one group."""
    group = parser.getgroup("cardprobe", "local-model behaviour tests (pytest-cardprobe)")
    taken = {"--record-mode"} if recording_in_run(pluginmanager) else set()
    for spec in SPECS:
        if spec.flag:
            group.addoption(
                spec.flag, dest=spec.dest, help=_help(spec), **_argparse_kwargs(spec, spec.flag)
            )
        if spec.old and spec.old not in taken:
            # A plugin loaded before us that owns the name keeps it (pytest 9 refuses it here).
            with contextlib.suppress(argparse.ArgumentError, ValueError):
                group.addoption(
                    spec.old,
                    dest=spec.old_dest,
                    help=argparse.SUPPRESS,
                    **_argparse_kwargs(spec, spec.old),
                )
        if spec.ini:
            parser.addini(spec.ini, _help(spec), type=spec.ini_type, default=_ini_default(spec))  # type: ignore[arg-type]


@dataclass
class _Found:
    """A setting's value and where it came from: a flag, an old spelling, ini, default."""

    value: Any
    source: str  # the flag or old spelling as typed, "ini", or "default"


def _ini_value(config: pytest.Config, spec: Spec) -> Any:
    raw = config.getini(spec.ini or "")
    if spec.kind == "value" and raw == "" and spec.default is None:
        # Not set (or set empty): a key whose default is another setting's
        # (cardprobe_max_reply_mb), or whose setting is off unless given (a base ref, a
        # report). A path with a default of its own (the baseline) must not be empty.
        return None
    if spec.kind == "value":
        items: Iterable[Any] = [raw]
    elif spec.kind == "list":
        items = raw
    else:
        return bool(raw)
    try:
        read = [spec.read(str(item)) for item in items]
    except ValueError as exc:
        raise pytest.UsageError(f"ini key {spec.ini} {exc}") from None
    return read if spec.kind == "list" else read[0]


def _find(config: pytest.Config, spec: Spec) -> _Found:
    given: list[tuple[Any, str]] = []
    for dest, flag in ((spec.dest, spec.flag), (spec.old_dest, spec.old)):
        value = getattr(config.option, dest, None)
        if flag and value is not None:
            # argparse (before Python 3.12) drops a value of "--" (``--flag=--``) and hands
            # over an empty list, its reader never called.
            items = value if spec.kind == "list" else [value]
            if spec.kind in ("value", "list") and any(isinstance(v, list) for v in items):
                raise pytest.UsageError(f"{flag} needs a value; '--' is not one")
            given.append((value, flag))
    if spec.kind == "list" and given:
        return _Found([v for value, _ in given for v in value], given[-1][1])
    if given:
        return _Found(given[0][0], given[0][1])
    if spec.ini_field:  # the ini value has a field of its own
        return _Found(None, "default")
    if spec.ini:
        return _Found(_ini_value(config, spec), "ini")
    return _Found(spec.default, "default")


def _warn_renamed(config: pytest.Config, renamed: list[tuple[str, str | None]]) -> None:
    """One warning for the old spellings used; a usage error where warnings are errors.

    Under ``-W error`` or ``filterwarnings = error`` pytest raises the warning itself, which
    would end the run in an INTERNALERROR; the user gets the same words as a usage error.
    """
    words = (
        "renamed option"
        + ("s" if len(renamed) > 1 else "")
        + ": "
        + "; ".join(f"{old} is now {new}" for old, new in renamed)
    )
    try:
        config.issue_config_time_warning(
            CardprobeDeprecationWarning(words + " (the old spelling still works for now)"),
            stacklevel=2,
        )
    except CardprobeDeprecationWarning:
        raise pytest.UsageError(
            words + " (a warning, made an error by this run's warning filters)"
        ) from None


def resolve_settings(config: pytest.Config) -> Settings:
    """Options win over ini keys, ini keys over defaults; read once, in ``pytest_configure``."""
    found = {spec.name: _find(config, spec) for spec in SPECS}
    invoked = Path(str(config.invocation_params.dir))
    root = Path(str(config.rootpath))
    fields: dict[str, Any] = {}
    for spec in SPECS:
        value, source = found[spec.name].value, found[spec.name].source
        if spec.path and value is not None:
            value = (invoked if source.startswith("--") else root) / Path(value)
        if spec.ini_field:
            fields[spec.ini_field] = _ini_value(config, spec)
        fields[spec.name] = value
    command_line = frozenset(n for n, f in found.items() if f.source.startswith("--"))
    renamed = [(f.source, BY_FLAG[f.source]) for f in found.values() if f.source in OLD_FLAGS]
    if renamed and not is_worker(config):
        _warn_renamed(config, renamed)
    live = bool(fields.pop("live"))
    typed_mode = fields["record_mode"] if "record_mode" in command_line else None
    fields["record_mode"] = _record_mode(live, typed_mode)
    fields["models"] = _unique_models(fields["models"], found["models"].source, config)
    fields["suites"] = _checked_suites(fields["suites"], found["suites"].source)
    fields["servers"] = fields["servers"] or [_default_server()]
    fields["headers"] = dict(fields["headers"])
    fields["redact_fields"] = [*Settings(models=[]).redact_fields, *fields["redact_fields"]]
    samples, most = fields["samples"], fields["max_samples"]
    if samples is not None and samples > most:
        raise pytest.UsageError(
            f"{found['samples'].source} {samples} is more than the limit of {most} "
            "(ini cardprobe_max_samples)"
        )
    reply, most_file = fields["max_reply_mb"], fields["max_file_mb"]
    if reply is not None and reply > most_file:
        raise pytest.UsageError(
            f"ini cardprobe_max_reply_mb = {reply:g} is above cardprobe_max_file_mb = "
            f"{most_file:g}: a recording of such a reply would be a cassette replay refuses; "
            "raise cardprobe_max_file_mb too, or lower cardprobe_max_reply_mb"
        )
    # Pruning is a way of writing the baseline: it implies the update.
    fields["update_baseline"] = bool(fields["update_baseline"] or fields["prune_baseline"])
    if fields["accept_reason"] is not None and not fields["update_baseline"]:
        raise pytest.UsageError(
            "--cardprobe-accept-reason says why --cardprobe-update-baseline accepts the "
            "regressions it finds; give it with --cardprobe-update-baseline (or leave it out)"
        )
    fields["gate"] = GateSettings(**{k: fields.pop(k) for k in GATE_FIELDS})
    return Settings(**fields, api_key=_api_key(), command_line=command_line)


BY_FLAG = {spec.old: spec.flag for spec in SPECS if spec.old}
OLD_FLAGS = frozenset(BY_FLAG)


def _record_mode(live: bool, mode: str | None) -> str:
    """``--live`` is short for ``--cardprobe-record-mode rewrite``; both differently is wrong."""
    if live and mode not in (None, "rewrite"):
        raise pytest.UsageError(
            "--live means --cardprobe-record-mode rewrite; it cannot be combined with "
            f"--cardprobe-record-mode {mode}"
        )
    return "rewrite" if live else (mode or "none")


def _unique_models(names: list[str], source: str, config: pytest.Config) -> list[str]:
    """Models in order; a repeated one is dropped with a warning."""
    where = source if source.startswith("--") else "ini key cardprobe_models:"
    seen: dict[str, None] = {}
    for name in names:
        if name in seen:
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(f"{where} {name!r} is given twice; its tests run once"),
                stacklevel=2,
            )
        seen[name] = None
    return list(seen)


def _checked_suites(names: list[str], source: str) -> list[str]:
    for name in names:
        try:
            builtin_suite_path(name)
        except UnknownSuite as exc:
            flag = source if source.startswith("--") else "ini key cardprobe_suites"
            raise pytest.UsageError(f"{flag}: {exc}") from None
    return list(dict.fromkeys(names))


def _default_server() -> str:
    """``$OLLAMA_HOST`` (checked like ``--cardprobe-server``), else the local Ollama."""
    host = os.environ.get("OLLAMA_HOST")
    if not host:
        return DEFAULT_SERVER
    try:
        return values.server_url(host)
    except ValueError as exc:
        raise pytest.UsageError(f"environment variable OLLAMA_HOST {exc}") from None


def _api_key() -> str | None:
    """``$CARDPROBE_API_KEY``, sent as a bearer token, so it must be a valid header value."""
    key = os.environ.get("CARDPROBE_API_KEY") or None
    if key is not None:
        try:
            values.header_value("Authorization", f"Bearer {key}")
        except ValueError as exc:
            raise pytest.UsageError(f"environment variable CARDPROBE_API_KEY: {exc}") from None
    return key
