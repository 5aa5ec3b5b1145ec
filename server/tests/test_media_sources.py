"""The media policy on its own: data URIs, local roots, remote fetches against a real local
HTTP server (private addresses refused unless allowed; size, time and redirect bounds), and
the decode bounds."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mlxcel.errors import InvalidRequestError, RequestTooLarge
from mlxcel.media.decode import decode_image
from mlxcel.media.policy import MediaPolicy, policy_from_settings
from mlxcel.media.sources import read_media

PNG = b"\x89PNG\r\n\x1a\n" + b"x" * 100


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/image.png":
            self._send(200, PNG)
        elif self.path == "/big.png":
            self._send(200, b"y" * 5000)
        elif self.path == "/slow.png":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"z" * 10)
            self.wfile.flush()
            time.sleep(2)
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/image.png")
            self.end_headers()
        else:
            self._send(404, b"")

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def http_base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


ALLOW = MediaPolicy(allow_private_urls=True, max_bytes=1000, fetch_timeout_s=0.5)


def test_loopback_is_refused_by_default(http_base: str) -> None:
    with pytest.raises(InvalidRequestError, match="non-public address"):
        read_media(f"{http_base}/image.png", MediaPolicy(), "p")


def test_allowed_private_fetch_follows_redirects(http_base: str) -> None:
    assert read_media(f"{http_base}/image.png", ALLOW, "p") == PNG
    assert read_media(f"{http_base}/redirect", ALLOW, "p") == PNG


def test_remote_bounds(http_base: str) -> None:
    with pytest.raises(RequestTooLarge):
        read_media(f"{http_base}/big.png", ALLOW, "p")
    with pytest.raises(InvalidRequestError) as timeout:
        read_media(f"{http_base}/slow.png", ALLOW, "p")
    assert timeout.value.code == "media_fetch_timeout"
    with pytest.raises(InvalidRequestError, match="HTTP 404"):
        read_media(f"{http_base}/missing.png", ALLOW, "p")


def test_data_uris() -> None:
    assert read_media("data:image/png;base64,aGk=", MediaPolicy(), "p") == b"hi"
    assert read_media("data:text/plain,a%20b", MediaPolicy(), "p") == b"a b"
    with pytest.raises(RequestTooLarge):
        read_media("data:image/png;base64," + "QUFB" * 400, MediaPolicy(max_bytes=100), "p")
    with pytest.raises(InvalidRequestError):
        read_media("data:image/png;base64", MediaPolicy(), "p")


def test_local_paths_need_a_root(tmp_path: Path) -> None:
    image = tmp_path / "a.png"
    image.write_bytes(PNG)
    with pytest.raises(InvalidRequestError, match="no allowed directory"):
        read_media(str(image), MediaPolicy(), "p")
    rooted = MediaPolicy(media_roots=(tmp_path.resolve(),), max_bytes=50)
    with pytest.raises(RequestTooLarge):
        read_media(str(image), rooted, "p")
    with pytest.raises(InvalidRequestError, match="local path"):
        read_media("file://elsewhere/a.png", rooted, "p")


def test_policy_reads_the_environment(tmp_path: Path) -> None:
    policy = policy_from_settings([str(tmp_path)], environ={
        "MLXCEL_VIDEO_DIR_ALLOWLIST": f"{tmp_path}, ,{tmp_path}/v",
        "MLXCEL_ALLOW_PRIVATE_MEDIA_URLS": "1"})
    assert policy.media_roots == (tmp_path.resolve(),)
    assert policy.video_dirs == (tmp_path.resolve(), (tmp_path / "v").resolve())
    assert policy.allow_private_urls
    assert not policy_from_settings(environ={}).video_dirs


def noise_png(size: int) -> bytes:
    pixels = np.random.default_rng(0).integers(0, 256, (size, size, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG")
    return out.getvalue()


def test_decode_bounds() -> None:
    data = noise_png(1200)
    assert decode_image(data, MediaPolicy(), "p").size == (1200, 1200)
    with pytest.raises(RequestTooLarge, match="1200x1200"):
        decode_image(data, MediaPolicy(max_pixels=1000 * 1000), "p")
    with pytest.raises(InvalidRequestError) as slow:
        decode_image(data, MediaPolicy(decode_timeout_s=1e-6), "p")
    assert slow.value.code == "image_decode_timeout"
    with pytest.raises(InvalidRequestError, match="not a decodable image"):
        decode_image(b"GIF89a", MediaPolicy(), "p")


def test_inline_videos_go_to_private_create_new_files(tmp_path: Path) -> None:
    import os
    import stat

    from mlxcel.media.video import video_file

    with video_file("data:video/mp4;base64,aGk=", MediaPolicy(), "p") as path:
        assert path.read_bytes() == b"hi"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert not path.exists() and not path.parent.exists()
    with pytest.raises(InvalidRequestError, match="no allowed directory"):
        with video_file(str(tmp_path / "clip.mp4"), MediaPolicy(), "p"):
            pass


def test_cli_media_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlxcel.cli import build_parser, media_policy

    monkeypatch.setenv("MLXCEL_MEDIA_PATH", str(tmp_path))
    monkeypatch.setenv("MLXCEL_VIDEO_DIR_ALLOWLIST", str(tmp_path / "videos"))
    args = build_parser().parse_args(["--media-path", "/var", "--media-max-bytes", "10",
                                      "--media-max-pixels", "20", "--video-max-frames", "4"])
    policy = media_policy(args)
    assert policy.media_roots == (tmp_path.resolve(), Path("/var").resolve())
    assert policy.video_dirs == ((tmp_path / "videos").resolve(),)
    assert (policy.max_bytes, policy.max_pixels, policy.video_max_frames) == (10, 20, 4)
    assert not policy.allow_private_urls
