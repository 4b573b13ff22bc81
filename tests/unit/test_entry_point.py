"""The entry point stays thin: every hook of ``plugin.py`` is one statement that hands its
arguments on (to ``glue/hooks.py``, or the hookspecs' registration)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "src" / "pytest_cardprobe" / "plugin.py"
TREE = ast.parse(PLUGIN.read_text("utf-8"))
HOOKS = [n for n in TREE.body if isinstance(n, ast.FunctionDef) and n.name.startswith("pytest_")]


def test_the_plugin_defines_its_hooks() -> None:
    assert len(HOOKS) >= 15


@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h.name)
def test_each_hook_is_one_delegating_line(hook: ast.FunctionDef) -> None:
    body = hook.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # a docstring
    assert len(body) == 1, f"plugin.{hook.name} has {len(body)} statements; move them to glue"
    assert hook.end_lineno is not None and hook.end_lineno - body[0].lineno == 0
