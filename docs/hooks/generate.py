"""mkdocs hook: add the pages generated from the repository's sources at build time.

- `api/index.md`, `api/schemas.md`, `api/openapi.yaml` from `openapi/openapi.yaml`;
- `results.md` from the matrices and plots committed under `docs/`.

Generated pages exist only in the build; nothing is written to `docs/`, so they cannot drift.
(`configuration.md` is committed instead, kept current by a test: see configuration.py.)
"""

from __future__ import annotations

from pathlib import Path

import api_reference
import results
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = _root(config)
    spec_path = root / "openapi" / "openapi.yaml"
    pages: dict[str, str] = {}
    pages.update(api_reference.render(spec_path))
    pages.update(results.render(Path(config.docs_dir)))
    pages["api/openapi.yaml"] = spec_path.read_text(encoding="utf-8")
    for src_uri, content in pages.items():
        existing = files.get_file_from_path(src_uri)
        if existing is not None:
            raise ValueError(f"docs/{src_uri} is generated at build time; remove the file")
        files.append(File.generated(config, src_uri, content=content))
    _refuse_url_clashes(files)
    return files


def _refuse_url_clashes(files: Files) -> None:
    """Two pages rendering to one URL (`a.md` and `a/index.md`) would silently lose one."""
    seen: dict[str, str] = {}
    for file in files.documentation_pages():
        if file.dest_uri in seen:
            raise ValueError(
                f"docs/{file.src_uri} and docs/{seen[file.dest_uri]} both render to "
                f"{file.dest_uri}; rename one"
            )
        seen[file.dest_uri] = file.src_uri
