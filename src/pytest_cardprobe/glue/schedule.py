"""Which server each generated test talks to, and how xdist hands tests to workers.

Live runs split the ordered probe tests (model → suite → channel → condition → case) into
contiguous *lanes*, one per server request slot. A lane is one xdist work unit, so a worker
runs a whole lane and talks to that lane's server only, and a model stays on as few workers
(and servers) as the split allows. Replay runs keep xdist's own scheduling: they talk to no
server and spread best test by test.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_cardprobe.suite.loader import ALL_CHANNELS, ALL_CONDITIONS

if TYPE_CHECKING:
    from pytest_cardprobe.glue.state import CardprobeState

_CHANNEL = "|".join(map(re.escape, ALL_CHANNELS))
_CONDITION = "|".join(map(re.escape, ALL_CONDITIONS))
_PROBE_ID = re.compile(
    rf"\.ya?ml::[^\[]+\[(?P<model>.+)-(?P<channel>{_CHANNEL})-(?P<condition>{_CONDITION})\]$"
)


def lane_of(position: int, count: int, lanes: int) -> int:
    """The lane of the ``position``-th of ``count`` ordered tests split into contiguous lanes."""
    if count <= 0 or lanes <= 1:
        return 0
    return min(lanes - 1, position * lanes // count)


def is_probe_nodeid(nodeid: str) -> bool:
    """True for the id of a test generated from a suite file (``cards.yaml::date[m-tool-cold]``)."""
    return _PROBE_ID.search(nodeid) is not None


def lanes_by_nodeid(nodeids: Sequence[str], lanes: int) -> dict[str, int]:
    """Lane of every probe test id, in the order the ids were collected."""
    probes = [n for n in nodeids if is_probe_nodeid(n)]
    return {n: lane_of(i, len(probes), lanes) for i, n in enumerate(probes)}


def make_lane_scheduler(config: Any, log: Any, lanes: int) -> Any:
    """An xdist scheduler whose work units are lanes (probe tests) or single other tests."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class LaneScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """xdist's scope scheduling with a lane as the scope of a probe test."""

        _lanes: dict[str, int] | None = None

        def schedule(self) -> None:
            if self.collection is None and self.collection_is_completed:
                collected = list(next(iter(self.registered_collections.values()), []))
                self._lanes = lanes_by_nodeid(collected, lanes)
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            lane = (self._lanes or {}).get(nodeid)
            # Ordinary tests are their own unit, so they still spread over all workers.
            return nodeid if lane is None else f"cardprobe-lane-{lane}"

    return LaneScheduling(config, log)


def order_probes(state: CardprobeState, items: list[Any]) -> None:
    """Put probe tests in run order and give each the server of its lane.

    Probe tests fill the positions probe tests had, so ordinary tests keep their places.
    """
    from pytest_cardprobe.glue.items import ProbeItem
    from pytest_cardprobe.suite.matrix import run_order

    slots = [i for i, item in enumerate(items) if isinstance(item, ProbeItem)]
    probes: list[ProbeItem] = [items[i] for i in slots]
    order = run_order([p.probe for p in probes], state.settings.models)
    servers = state.settings.servers
    lanes = state.lanes
    for position, (slot, index) in enumerate(zip(slots, order, strict=True)):
        item = probes[index]
        items[slot] = item
        item.server = servers[lane_of(position, len(slots), lanes) % len(servers)]
