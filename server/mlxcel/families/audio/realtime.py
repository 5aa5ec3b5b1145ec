"""``GET /v1/realtime``: the Realtime VoiceChat WebSocket.

It is mounted for a Nemotron VoiceChat checkpoint only; a server that loaded a text model
answers a plain GET with 501 ``not_implemented`` naming what enables it and what it serves.
"""

from __future__ import annotations

from fastapi import APIRouter

from ...errors import NotImplementedRoute

router = APIRouter()


@router.get("/v1/realtime")
async def realtime() -> None:
    raise NotImplementedRoute(
        "GET /v1/realtime is not enabled: the Realtime VoiceChat WebSocket is served when the "
        "server loads a Nemotron VoiceChat checkpoint with --model. This server loaded a text "
        "model and serves the text generation routes."
    )
