"""Where preprocessing runs (issue 14): ``local`` (this process, streaming) or ``ray`` (a cluster)."""

from __future__ import annotations

ENGINES: tuple[str, ...] = ("local", "ray")
