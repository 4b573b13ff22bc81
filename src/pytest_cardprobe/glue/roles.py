"""Which part of a run this process plays: an xdist worker, the controller of workers, or
the one process of a run without xdist. Asked here instead of ``hasattr(config,
"workerinput")`` at each hook."""

from __future__ import annotations

import pytest


def is_worker(config: pytest.Config) -> bool:
    """This process is an xdist worker (it runs tests; the controller reports them)."""
    return hasattr(config, "workerinput")


def is_controller(config: pytest.Config) -> bool:
    """This process hands tests to xdist workers and runs none itself (``-n``/``--dist``)."""
    return not is_worker(config) and getattr(config.option, "dist", "no") != "no"
