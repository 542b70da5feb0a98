"""Which embedding model a store opens with: settings plus what its home remembers."""

from __future__ import annotations

from harness.memory.embedding.embedder import EmbedderChoice, choose_embedder
from harness.memory.embedding.home_config import remember_model_folder, remembered_model_folder
from harness.settings import Settings

__all__ = ["choose_model"]


def choose_model(settings: Settings, *, embedded: bool) -> EmbedderChoice:
    """Load the configured model (see :func:`choose_embedder`); never raises.

    For the embedded server (``embedded``), the home remembers the folder a model was loaded
    from via ``HARNESS_EMBED_MODEL_PATH`` and uses it when the variable is unset later.
    Side effect: may write ``HARNESS_HOME/config.json``.
    """
    remembered = remembered_model_folder(settings.home, settings.embed_model) if embedded else None
    choice = choose_embedder(
        settings.embed_model,
        settings.embed_model_path,
        remembered=remembered,
        threads=settings.embed_threads,
        int8_cache=settings.model_cache if settings.embed_int8 else None,
    )
    if embedded and choice.source == "HARNESS_EMBED_MODEL_PATH" and choice.model_path:
        remember_model_folder(settings.home, settings.embed_model, choice.model_path)
    return choice
