"""The run lifecycle: recall before the first model call, writes only after the final verdict.

``engine`` (``Engine.run`` / ``Engine.arun``), ``flow`` (the lifecycle as a generator of
effects, shared by the engine and every integration), ``types`` (a run's values and
protocols), ``extract`` (candidates from a completed run), ``lessons`` (a verdict's feedback
as a lesson). Importing this package loads none of them.
"""

from __future__ import annotations

__all__: list[str] = []
