"""Where an image's bytes come from: a ``data:`` URI, a local file (``file://`` URL or a bare
absolute path) under a ``--media-path`` root, or an ``http(s)`` URL.

Local paths are resolved (``..`` and every symlink followed) before the root check, so a
traversal or a symlink that leads outside every root is refused like any other outside path;
with no root configured every local path is refused. Remote URLs: the host's addresses are
checked before connecting and the connected peer after it (redirects are followed by hand, each
hop checked again); a non-public address (``addresses.py``: IPv4 written inside IPv6 included)
is refused unless ``MLXCEL_ALLOW_PRIVATE_MEDIA_URLS=1``.
Every source is bounded by ``max_bytes`` (413) and remote fetches by ``fetch_timeout_s``.
"""

from __future__ import annotations

import base64
import binascii
import socket
import time
from pathlib import Path
from urllib.parse import unquote, unquote_to_bytes, urljoin, urlparse

import httpx

from ..errors import InvalidRequestError, RequestTooLarge
from .addresses import is_public_address
from .policy import MediaPolicy

MAX_REDIRECTS = 3


def _too_large(param: str, policy: MediaPolicy) -> RequestTooLarge:
    return RequestTooLarge(
        f"{param}: the media exceeds the server's limit of {policy.max_bytes} bytes.",
        param=param,
    )


def read_data_uri(uri: str, policy: MediaPolicy, param: str) -> bytes:
    header, sep, payload = uri[5:].partition(",")
    if not sep:
        raise InvalidRequestError(f"{param}: a data URI needs a ',' before its payload.",
                                  param=param)
    if header.endswith(";base64"):
        if len(payload) * 3 // 4 > policy.max_bytes + 3:
            raise _too_large(param, policy)
        try:
            data = base64.b64decode(payload.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidRequestError(f"{param}: the data URI is not valid base64.",
                                      param=param) from None
    else:
        data = unquote_to_bytes(payload)
    if len(data) > policy.max_bytes:
        raise _too_large(param, policy)
    return data


def local_path_of(url: str, param: str) -> Path | None:
    """The path a ``file://`` URL or bare absolute path names; None for anything else."""
    if url.startswith("file://"):
        parsed = urlparse(url)
        if parsed.netloc not in ("", "localhost"):
            raise InvalidRequestError(f"{param}: a file URL must name a local path.",
                                      param=param)
        return _no_nul(unquote(parsed.path), param)
    if url.startswith("/"):
        return _no_nul(url, param)
    return None


def _no_nul(path: str, param: str) -> Path:
    # No file name holds NUL (%00): the OS would refuse it, and Python raises ValueError.
    if "\x00" in path:
        raise InvalidRequestError(f"{param}: a local path cannot contain a NUL character.",
                                  param=param)
    return Path(path)


def allowed_path(path: Path, roots: tuple[Path, ...], param: str, what: str) -> Path:
    """``path`` fully resolved, if it lies under one of ``roots``; else a 400."""
    if not roots:
        raise InvalidRequestError(
            f"{param}: local {what} paths are refused: the server has no allowed directory "
            "for them.", param=param)
    resolved = path.resolve()  # follows every symlink and removes '..'
    if not any(resolved.is_relative_to(root) for root in roots):
        raise InvalidRequestError(
            f"{param}: the {what} path is outside the server's allowed directories.",
            param=param)
    if not resolved.is_file():
        raise InvalidRequestError(f"{param}: no {what} file at that path.", param=param)
    return resolved


def read_local(path: Path, policy: MediaPolicy, param: str) -> bytes:
    resolved = allowed_path(path, policy.media_roots, param, "media")
    if resolved.stat().st_size > policy.max_bytes:
        raise _too_large(param, policy)
    with resolved.open("rb") as handle:
        data = handle.read(policy.max_bytes + 1)
    if len(data) > policy.max_bytes:
        raise _too_large(param, policy)
    return data


def _check_host(host: str, port: int, policy: MediaPolicy, param: str) -> None:
    if policy.allow_private_urls:
        return
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError:
        raise InvalidRequestError(f"{param}: the media host could not be resolved.",
                                  param=param) from None
    if not infos or not all(is_public_address(str(info[4][0])) for info in infos):
        raise InvalidRequestError(
            f"{param}: the media URL resolves to a non-public address, which the server "
            "refuses (MLXCEL_ALLOW_PRIVATE_MEDIA_URLS=1 allows it).", param=param)


def _check_peer(response: httpx.Response, policy: MediaPolicy, param: str) -> None:
    if policy.allow_private_urls:
        return
    stream = response.extensions.get("network_stream")
    peer = stream.get_extra_info("server_addr") if stream is not None else None
    if peer and not is_public_address(str(peer[0])):
        raise InvalidRequestError(
            f"{param}: the media URL connected to a non-public address, which the server "
            "refuses.", param=param)


def fetch_remote(url: str, policy: MediaPolicy, param: str) -> bytes:
    deadline = time.monotonic() + policy.fetch_timeout_s
    timeout = httpx.Timeout(policy.fetch_timeout_s)
    with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            parsed = urlparse(url)
            if parsed.scheme not in ("http", "https") or not parsed.hostname:
                raise InvalidRequestError(f"{param}: unsupported media URL.", param=param)
            _check_host(parsed.hostname, parsed.port or (443 if parsed.scheme == "https"
                                                          else 80), policy, param)
            try:
                with client.stream("GET", url) as response:
                    _check_peer(response, policy, param)
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        continue
                    if response.status_code != 200:
                        raise InvalidRequestError(
                            f"{param}: fetching the media URL answered HTTP "
                            f"{response.status_code}.", param=param)
                    return _bounded_body(response, policy, param, deadline)
            except httpx.TimeoutException:
                raise _fetch_timeout(param, policy) from None
            except httpx.HTTPError as exc:
                raise InvalidRequestError(
                    f"{param}: the media URL could not be fetched ({type(exc).__name__}).",
                    param=param) from None
    raise InvalidRequestError(f"{param}: the media URL redirected too many times.", param=param)


def _fetch_timeout(param: str, policy: MediaPolicy) -> InvalidRequestError:
    return InvalidRequestError(
        f"{param}: fetching the media URL took longer than {policy.fetch_timeout_s:g} s.",
        param=param, code="media_fetch_timeout")


def _bounded_body(response: httpx.Response, policy: MediaPolicy, param: str,
                  deadline: float) -> bytes:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > policy.max_bytes:
        raise _too_large(param, policy)
    data = bytearray()
    for chunk in response.iter_bytes():
        data += chunk
        if len(data) > policy.max_bytes:
            raise _too_large(param, policy)
        if time.monotonic() > deadline:
            raise _fetch_timeout(param, policy)
    return bytes(data)


def read_media(url: str, policy: MediaPolicy, param: str) -> bytes:
    """The bytes ``url`` names, under ``policy``."""
    if url.startswith("data:"):
        return read_data_uri(url, policy, param)
    local = local_path_of(url, param)
    if local is not None:
        return read_local(local, policy, param)
    scheme = urlparse(url).scheme
    if scheme in ("http", "https"):
        return fetch_remote(url, policy, param)
    raise InvalidRequestError(
        f"{param}: the media URL must be a data URI, an http(s) URL, a file:// URL or an "
        "absolute path.", param=param)
