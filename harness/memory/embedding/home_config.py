"""The home's own config file (``HARNESS_HOME/config.json``): what this home last used.

Today it remembers the embedding-model folder, so a store whose vectors were built by a model
does not silently drop to lexical-only in the next shell where ``HARNESS_EMBED_MODEL_PATH`` is
unset.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

__all__ = ["CONFIG_NAME", "read_home_config", "remember_model_folder", "remembered_model_folder"]

log = logging.getLogger(__name__)

CONFIG_NAME = "config.json"


def read_home_config(home: Path) -> dict[str, Any]:
    """The parsed config of ``home`` (empty when missing or unreadable). No side effects."""
    try:
        data = json.loads((home / CONFIG_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remembered_model_folder(home: Path, model_name: str) -> Path | None:
    """The model folder ``home`` last used for ``model_name``, or None. No side effects."""
    entry = read_home_config(home).get("embed_model")
    if not isinstance(entry, dict) or entry.get("name") != model_name:
        return None
    path = entry.get("path")
    return Path(path) if isinstance(path, str) and path else None


def remember_model_folder(home: Path, model_name: str, folder: Path) -> None:
    """Record ``folder`` as the model ``home`` uses (atomic replace; idempotent).

    Failures are logged, never raised: remembering is a convenience.
    """
    config = read_home_config(home)
    entry = {"name": model_name, "path": str(Path(folder).resolve())}
    if config.get("embed_model") == entry:
        return
    config["embed_model"] = entry
    try:
        home.mkdir(parents=True, exist_ok=True)
        tmp = home / f".{CONFIG_NAME}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        tmp.replace(home / CONFIG_NAME)
    except OSError as exc:
        log.warning("could not remember the model folder in %s: %s", home / CONFIG_NAME, exc)
