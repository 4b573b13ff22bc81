"""The circuit breaker of a live run: a server that keeps failing on infra is not asked again."""

from __future__ import annotations

from pytest_cardprobe.wire.redact import redact_url


class Breaker:
    """Consecutive infra failures per server; at ``limit`` the server's breaker opens."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._streak: dict[str, int] = {}
        #: Why each open server's breaker opened (the message its remaining tests fail with).
        self.open: dict[str, str] = {}

    def note(self, server: str, infra: str | None) -> None:
        """Count an infra failure on ``server`` (``infra`` is its message) or a success."""
        if infra is None:
            self._streak[server] = 0
            return
        streak = self._streak.get(server, 0) + 1
        self._streak[server] = streak
        if streak >= self.limit and server not in self.open:
            self.open[server] = (
                f"circuit breaker open: {streak} consecutive infra failures on "
                f"{redact_url(server)} (ini cardprobe_breaker = {self.limit}); its remaining "
                f"tests were not asked. Last failure: {infra}"
            )
