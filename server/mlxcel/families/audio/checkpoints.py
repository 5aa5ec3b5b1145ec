"""Which audio model an ``--audio-model`` checkpoint is, what that kind serves, and loading it.

The kind comes from the checkpoint's ``config.json`` (``model_type``; mlx-whisper conversions
that predate it are known by Whisper's dimension keys). A hub id (``owner/name``) is fetched
with huggingface_hub first; anything else must be an existing directory.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .kokoro import KokoroModel, is_kokoro_checkpoint, kokoro_problem, load_kokoro
from .whisper import WhisperModel, is_whisper_checkpoint, load_whisper, whisper_missing

AudioModel = WhisperModel | KokoroModel
_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")


@dataclass(frozen=True)
class AudioKind:
    label: str  # as messages name it: "the Whisper checkpoint ..."
    routes: tuple[str, ...]  # the /v1/audio/<route> it serves
    detect: Callable[[Path], bool]
    load: Callable[[Path, str], AudioModel]  # the local checkpoint and the name it is served as

    @property
    def served(self) -> str:
        """The routes in words: 'POST /v1/audio/a and POST /v1/audio/b'."""
        return " and ".join(f"POST /v1/audio/{route}" for route in self.routes)


KINDS = {
    "whisper": AudioKind("Whisper", ("transcriptions", "translations"), is_whisper_checkpoint,
                         lambda path, name: load_whisper(str(path), name=name)),
    "kokoro": AudioKind("Kokoro", ("speech",), is_kokoro_checkpoint, load_kokoro),
}


def kind_serving(route: str) -> AudioKind:
    return next(kind for kind in KINDS.values() if route in kind.routes)


def kind_of(path: Path) -> str | None:
    """The name of ``path``'s kind in KINDS, or None when it is none of them."""
    try:
        return next((name for name, kind in KINDS.items() if kind.detect(path)), None)
    except (OSError, ValueError):  # an unreadable or malformed config.json
        return None


def checkpoint_problem(path_or_repo: str) -> str | None:
    """Why ``path_or_repo`` cannot start an audio-only server, checked before the server
    starts (hub ids are checked when they are fetched), or None."""
    path = Path(path_or_repo).expanduser()
    if not path.exists():
        if _HUB_ID.fullmatch(path_or_repo):
            return None
        return f"{path_or_repo} does not exist (give a checkpoint directory or a hub id)"
    if not path.is_dir():
        return f"{path_or_repo} is not a directory"
    kind = kind_of(path)
    if kind is None:
        return (f"{path_or_repo} is neither a Whisper checkpoint (mlx-whisper's config.json and "
                "weights) nor a Kokoro checkpoint (config.json with model_type 'kokoro', "
                "weights and voices/)")
    if kind == "kokoro":
        return kokoro_problem(path)
    install = whisper_missing()
    return f"Whisper needs mlx-whisper, which is not installed: {install}" if install else None


def resolve(path_or_repo: str) -> Path:
    path = Path(path_or_repo).expanduser()
    if path.exists() or not _HUB_ID.fullmatch(path_or_repo):
        return path
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(path_or_repo))


def load_audio_model(path_or_repo: str) -> AudioModel:
    """The checkpoint's model, loaded by its kind's loader; ValueError naming what is wrong."""
    problem = checkpoint_problem(path_or_repo)
    if problem:
        raise ValueError(f"--audio-model: {problem}")
    path = resolve(path_or_repo)
    kind = kind_of(path)
    if kind is None:
        raise ValueError(f"--audio-model: {path_or_repo} is neither a Whisper nor a Kokoro "
                         "checkpoint")
    name = Path(path_or_repo).name if Path(path_or_repo).exists() else path_or_repo
    return KINDS[kind].load(path, name)
