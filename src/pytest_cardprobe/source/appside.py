"""Source stage: the script run in a subprocess, in the application's environment.

It is started as a file (``python appside.py``), not imported by the plugin: it imports the
application's module, which may print, loop, exit or raise, and converts what it finds with
the client library the suite names, calling that library's own code (never a copy of it).
It reads one JSON request on standard input and writes one JSON answer on the standard output
it had at start; everything else written to standard output by the application goes to
standard error, so nothing the module prints can pose as the answer.

Request: ``{"sys_path": [...], "task": "tools" | "prompt" | "convert", "target":
"package.module:NAME", "convert": null | "ollama" | "openai", "items": [...]}``.
Answer: ``{"ok": true, "value": ..., "identity": {...}}`` or ``{"ok": false, "error": "...",
"invalid": bool}`` (``invalid``: the module was read and holds something unusable).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
import os
import sys
import traceback
from typing import Any


class Refused(Exception):
    """What the suite points at cannot be used; the message says why."""


class Invalid(Refused):
    """The module imported, and what it holds cannot be used (no such name, not a tool list,
    refused by the client library): a change at the source, not a source missing here."""


def main() -> int:
    answer_fd = os.dup(1)
    os.dup2(2, 1)  # the application's prints, from Python or C, go to standard error
    sys.stdout = sys.stderr
    try:
        request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
        sys.path[:] = [p for p in request["sys_path"] if isinstance(p, str)]
        answer = {"ok": True, **handle(request)}
    except Refused as exc:
        answer = {"ok": False, "error": str(exc), "invalid": isinstance(exc, Invalid)}
    except BaseException as exc:  # the module raised, exited or was interrupted
        traceback.print_exc()
        answer = {"ok": False, "error": _raised(exc)}
    try:
        # ASCII: a lone surrogate in what the module holds is written as its escape (for the
        # plugin to refuse by name), where UTF-8 could not encode it and no answer came.
        text = json.dumps(answer, allow_nan=False)
    except (TypeError, ValueError) as exc:
        text = json.dumps({"ok": False, "error": f"the result is no JSON: {exc}"})
    with os.fdopen(answer_fd, "w", encoding="utf-8") as out:
        out.write(text)
    return 0


def _raised(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1][:300]}" if text else type(exc).__name__


def handle(request: dict[str, Any]) -> dict[str, Any]:
    task = request["task"]
    convert = request.get("convert")
    if task == "convert":
        items = request["items"]
    else:
        target = _find(request["target"])
        if task == "prompt":
            if not isinstance(target, str):
                raise Invalid(f"holds {_kind(target)}, not a string")
            return {"value": target, "identity": {}}
        if not isinstance(target, list | tuple):
            raise Invalid(f"holds {_kind(target)}, not a list of tools")
        items = list(target)
    if convert == "ollama":
        return {"value": _ollama(items), "identity": _version("ollama")}
    if convert == "openai":
        return {"value": _openai(items), "identity": _version("openai")}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            hint = ""
            if inspect.isclass(item):
                hint = "; a Pydantic model is converted by the openai client: `convert: openai`"
            elif callable(item):
                hint = "; a function is converted by the ollama client: `convert: ollama`"
            raise Invalid(f"item {index} is {_kind(item)}, not a tool declaration{hint}")
    return {"value": _plain(items), "identity": {}}


def _find(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name + ".").startswith(exc.name + "."):
            package = exc.name.rpartition(".")[0]
            if package and package in sys.modules:
                # The application is there; the module the suite names is not (any more).
                raise Invalid(f"module {exc.name!r} is not in the package {package!r}") from None
            raise Refused(
                f"module {exc.name!r} is not importable from the project "
                "(is the application installed in this environment, or on pytest's "
                "pythonpath?)"
            ) from None
        raise
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise Invalid(f"{module_name} has no {attribute!r}")
        found = getattr(found, part)
    return found


def _kind(value: Any) -> str:
    if inspect.isclass(value):
        return f"the class {value.__qualname__}"
    if callable(value):
        return f"the function {getattr(value, '__qualname__', type(value).__name__)}"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiouAEIOU' else 'a'} {name}"


def _version(library: str) -> dict[str, str]:
    return {"converter": library, "version": importlib.metadata.version(library)}


def _plain(value: Any) -> Any:
    """``value`` as the JSON it is sent as (a dict subclass or tuple loses nothing that counts)."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        problem = f"holds something that is no JSON ({exc}); a request carries JSON"
        raise Invalid(problem) from None


def _ollama(items: list[Any]) -> Any:
    """What the official ``ollama`` client puts in a request's ``tools``: its own conversion
    of each item (functions through ``convert_function_to_tool``, the rest validated as its
    ``Tool`` model) and its request model's serialisation."""
    try:
        # By module name: the package's ``_client`` attribute is a default Client instance.
        _client = importlib.import_module("ollama._client")
        _types = importlib.import_module("ollama._types")
    except ImportError as exc:
        raise Refused(
            f"convert: ollama needs the ollama client in this environment ({exc})"
        ) from None
    copy = getattr(_client, "_copy_tools", None)
    request = getattr(_types, "ChatRequest", None)
    if copy is None or request is None:
        raise Refused(
            f"this ollama client ({importlib.metadata.version('ollama')}) has no _copy_tools/"
            "ChatRequest, where cardprobe finds its conversion; please report it"
        )
    try:
        tools = list(copy(items))
    except Exception as exc:
        raise Invalid(f"the ollama client refused the tools: {_raised(exc)}") from None
    return _plain(request(model="m", tools=tools).model_dump(exclude_none=True)["tools"])


def _openai(items: list[Any]) -> Any:
    """What the official ``openai`` client sends: Pydantic models through its
    ``pydantic_function_tool``, declarations as they are."""
    try:
        import openai
        import pydantic
    except ImportError as exc:
        raise Refused(
            f"convert: openai needs the openai client in this environment ({exc})"
        ) from None
    converted: list[Any] = []
    for index, item in enumerate(items):
        if inspect.isclass(item) and issubclass(item, pydantic.BaseModel):
            try:
                converted.append(openai.pydantic_function_tool(item))
            except Exception as exc:
                raise Invalid(
                    f"item {index}: the openai client refused it: {_raised(exc)}"
                ) from None
        elif isinstance(item, dict):
            converted.append(item)
        else:
            raise Invalid(
                f"item {index} is {_kind(item)}; the openai client converts Pydantic models "
                "(pydantic_function_tool), not functions — use convert: ollama for functions"
            )
    return _plain(converted)


if __name__ == "__main__":
    sys.exit(main())
