"""Which embedding model a store opens with: settings plus what its home remembers."""

from __future__ import annotations

from harness.errors import InvalidInput
from harness.memory.embedding.embedder import EmbedderChoice, choose_embedder
from harness.memory.embedding.home_config import remember_model_folder, remembered_model_folder
from harness.settings import Settings

__all__ = ["check_model_path", "choose_model"]

_UNSET_HINT = "point it at the model's ONNX folder, or unset it to run lexical-only"


def check_model_path(settings: Settings) -> None:
    """Refuse an explicit ``HARNESS_EMBED_MODEL_PATH`` that is not a folder (pure but for a
    ``stat``; the absent setting is fine: the store looks elsewhere, else runs lexical-only).

    Raises:
        InvalidInput: naming ``HARNESS_EMBED_MODEL_PATH`` and the path.
    """
    path = settings.embed_model_path
    if path is not None and not path.is_dir():
        what = "is not a folder" if path.exists() else "does not exist"
        raise InvalidInput(
            f"HARNESS_EMBED_MODEL_PATH: {path} {what}; {_UNSET_HINT}",
            fields=("HARNESS_EMBED_MODEL_PATH",),
        )


def choose_model(settings: Settings, *, embedded: bool) -> EmbedderChoice:
    """Load the configured model (see :func:`choose_embedder`).

    For the embedded server (``embedded``), the home remembers the folder a model was loaded
    from via ``HARNESS_EMBED_MODEL_PATH`` and uses it when the variable is unset later.
    Side effect: may write ``HARNESS_HOME/config.json``.

    Raises:
        InvalidInput: ``HARNESS_EMBED_MODEL_PATH`` is set but names no folder, or a folder the
            model cannot be loaded from (an explicit setting that is wrong is an error; without
            the setting a store that finds no model runs lexical-only and warns).
    """
    check_model_path(settings)
    remembered = remembered_model_folder(settings.home, settings.embed_model) if embedded else None
    choice = choose_embedder(
        settings.embed_model,
        settings.embed_model_path,
        remembered=remembered,
        threads=settings.embed_threads,
        int8_cache=settings.model_cache if settings.embed_int8 else None,
    )
    if settings.embed_model_path is not None and choice.embedder is None:
        raise InvalidInput(f"{choice.reason}; {_UNSET_HINT}", fields=("HARNESS_EMBED_MODEL_PATH",))
    if embedded and choice.source == "HARNESS_EMBED_MODEL_PATH" and choice.model_path:
        remember_model_folder(settings.home, settings.embed_model, choice.model_path)
    return choice
