"""Render `openapi/openapi.yaml` as Markdown pages (generated at docs build time, never copied).

Two pages: the operations grouped by tag (`api/index.md`) and every component schema
(`api/schemas.md`). Schema names become explicit heading ids, so a link to a schema that the
spec does not define breaks the `--strict` build instead of rendering silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

Schema = dict[str, Any]
METHODS = ("get", "post", "put", "patch", "delete")
_CONSTRAINTS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                "maxLength", "minItems", "maxItems", "pattern", "format")
_MAX_DEPTH = 4


def load_spec(path: Path) -> Schema:
    spec: Schema = yaml.safe_load(path.read_text(encoding="utf-8"))
    return spec


def cell(text: str) -> str:
    """Make `text` safe inside one Markdown table cell."""
    return " ".join(text.replace("|", "\\|").split())


def prose(text: object) -> str:
    """A spec description as Markdown: Python-Markdown needs a blank line before a list."""
    out: list[str] = []
    bullets = ("- ", "* ")
    for line in str(text).strip().splitlines():
        after_prose = bool(out) and out[-1].strip() and not out[-1].lstrip().startswith(bullets)
        if line.lstrip().startswith(bullets) and after_prose:
            out.append("")
        out.append(line)
    return "\n".join(out)


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


class Renderer:
    """Renders one spec; `schema_page` is the relative link prefix of the schemas page."""

    def __init__(self, spec: Schema) -> None:
        self.spec = spec
        self.components: Schema = spec.get("components", {})

    def resolve(self, node: Schema) -> Schema:
        """Follow a local `$ref` (responses, parameters) to its target."""
        while "$ref" in node:
            section, name = node["$ref"].split("/")[-2:]
            node = self.components[section][name]
        return node

    # ------------------------------------------------------------------ types
    def type_text(self, schema: Schema, link: str) -> str:
        if "$ref" in schema:
            name = _ref_name(schema["$ref"])
            return f"[{name}]({link}#{name})"
        if "const" in schema:
            return f"`{json.dumps(schema['const'])}`"
        if "enum" in schema:
            return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
        for key, word in (("anyOf", " or "), ("oneOf", " or "), ("allOf", " and ")):
            if key in schema:
                return word.join(self.type_text(part, link) for part in schema[key])
        kinds = schema.get("type", "any")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        words = []
        for kind in kinds:
            if kind == "array" and "items" in schema:
                words.append(f"array of {self.type_text(schema['items'], link)}")
            else:
                words.append(str(kind))
        return " or ".join(words)

    @staticmethod
    def notes(schema: Schema) -> str:
        parts = [str(schema.get("description", "")).strip()]
        for key in _CONSTRAINTS:
            if key in schema:
                parts.append(f"{key}: `{schema[key]}`")
        if "default" in schema:
            parts.append(f"default: `{json.dumps(schema['default'])}`")
        if schema.get("deprecated"):
            parts.append("deprecated")
        return " ".join(p for p in parts if p)

    def property_rows(self, schema: Schema, link: str, prefix: str = "",
                      depth: int = 0) -> Iterator[str]:
        """One table row per property; inline objects are flattened as `parent.child`."""
        required = set(schema.get("required", []))
        for name, prop in schema.get("properties", {}).items():
            field = f"{prefix}{name}"
            yes = "yes" if name in required else ""
            yield (f"| `{field}` | {cell(self.type_text(prop, link))} | {yes} | "
                   f"{cell(self.notes(prop))} |")
            if "properties" in prop and depth < _MAX_DEPTH:
                yield from self.property_rows(prop, link, f"{field}.", depth + 1)
            items = prop.get("items", {})
            if isinstance(items, dict) and "properties" in items and depth < _MAX_DEPTH:
                yield from self.property_rows(items, link, f"{field}[].", depth + 1)

    def object_table(self, schema: Schema, link: str) -> list[str]:
        rows = list(self.property_rows(schema, link))
        if not rows:
            return []
        return ["| field | type | required | notes |", "|---|---|---|---|", *rows, ""]

    # ---------------------------------------------------------------- schemas
    def schema_section(self, name: str, schema: Schema) -> list[str]:
        lines = [f"## {name} {{ #{name} }}", ""]
        if schema.get("description"):
            lines += [prose(schema["description"]), ""]
        if "properties" not in schema:
            lines += [f"Type: {self.type_text(schema, '')}", ""]
        lines += self.object_table(schema, "")
        for key in ("oneOf", "anyOf", "allOf"):
            for number, part in enumerate(schema.get(key, []), start=1):
                table = self.object_table(part, "")
                if table:
                    lines += [f"**{key} variant {number}**", "", *table]
        if schema.get("additionalProperties") is True and "properties" in schema:
            lines += ["Unknown fields are accepted.", ""]
        return lines

    def schemas_page(self) -> str:
        lines = ["# Schemas", "",
                 "Every component schema of `openapi/openapi.yaml`, rendered at build time.", ""]
        for name, schema in self.components.get("schemas", {}).items():
            lines += self.schema_section(name, schema)
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------- operations
    def operations(self) -> Iterator[tuple[str, str, Schema, list[Schema]]]:
        for path, item in self.spec.get("paths", {}).items():
            shared = item.get("parameters", [])
            for method in METHODS:
                if method in item:
                    yield path, method, item[method], shared

    def media_lines(self, media_type: str, media: Schema) -> list[str]:
        link = "schemas.md"
        if "itemSchema" in media:
            text = f"one event: {self.type_text(media['itemSchema'], link)}"
            if "x-sse-terminator" in media:
                text += f"; ends with `data: {media['x-sse-terminator']}`"
            return [f"- `{media_type}`: {text}"]
        if "schema" in media:
            return [f"- `{media_type}`: {self.type_text(media['schema'], link)}"]
        return [f"- `{media_type}`"]

    def parameter_lines(self, params: Iterable[Schema]) -> list[str]:
        rows = []
        for raw in params:
            p = self.resolve(raw)
            kind = self.type_text(p.get("schema", {}), "schemas.md")
            yes = "yes" if p.get("required") else ""
            rows.append(f"| `{p['name']}` | {p.get('in', '')} | {cell(kind)} | {yes} | "
                        f"{cell(str(p.get('description', '')))} |")
        if not rows:
            return []
        return ["**Parameters**", "", "| name | in | type | required | notes |",
                "|---|---|---|---|---|", *rows, ""]

    def request_lines(self, op: Schema) -> list[str]:
        body = op.get("requestBody")
        if not body:
            return []
        body = self.resolve(body)
        lines = ["**Request body**" + (" (required)" if body.get("required") else ""), ""]
        for media_type, media in body.get("content", {}).items():
            lines += self.media_lines(media_type, media)
            for example in media.get("examples", {}).values():
                lines += ["", f"Example: {example.get('summary', '')}", "", "```json",
                          json.dumps(example.get("value"), indent=2, ensure_ascii=False), "```"]
        return lines + [""]

    def response_lines(self, op: Schema) -> list[str]:
        lines = ["**Responses**", ""]
        for status, raw in op.get("responses", {}).items():
            response = self.resolve(raw)
            description = " ".join(str(response.get("description", "")).split())
            lines.append(f"- **{status}**: {description}")
            for media_type, media in response.get("content", {}).items():
                lines += ["    " + line for line in self.media_lines(media_type, media)]
        return lines + [""]

    def operation_section(self, path: str, method: str, op: Schema,
                          shared: list[Schema]) -> list[str]:
        anchor = op.get("operationId") or f"{method}-{path}".replace("/", "-").strip("-")
        lines = [f"### `{method.upper()} {path}` {{ #{anchor} }}", ""]
        if op.get("summary"):
            lines += [str(op["summary"]), ""]
        if op.get("description"):
            lines += [prose(op["description"]), ""]
        facts = []
        if "x-mlxcel-family" in op:
            facts.append(f"suite family: `{op['x-mlxcel-family']}`")
        if op.get("security") == []:
            facts.append("no API key needed")
        if op.get("x-mlxcel-unsupported"):
            facts.append("not implemented by the reference server (answers 501)")
        if facts:
            lines += ["; ".join(facts), ""]
        lines += self.parameter_lines([*shared, *op.get("parameters", [])])
        lines += self.request_lines(op)
        lines += self.response_lines(op)
        return lines

    def operations_page(self) -> str:
        info = self.spec.get("info", {})
        lines = [f"# {info.get('title', 'API reference')}", "",
                 f"Spec version `{info.get('version', '')}`, OpenAPI "
                 f"`{self.spec.get('openapi', '')}`. Rendered at build time from "
                 "`openapi/openapi.yaml` ([download](openapi.yaml)); schemas are on the "
                 "[schemas page](schemas.md).", "",
                 prose(info.get("description", "")), ""]
        by_tag: dict[str, list[list[str]]] = {}
        for path, method, op, shared in self.operations():
            tag = (op.get("tags") or ["other"])[0]
            by_tag.setdefault(tag, []).append(self.operation_section(path, method, op, shared))
        for tag, sections in by_tag.items():
            lines += [f"## {tag}", ""]
            for section in sections:
                lines += section
        return "\n".join(lines) + "\n"


def render(spec_path: Path) -> dict[str, str]:
    """Pages by their path under `docs/`."""
    renderer = Renderer(load_spec(spec_path))
    return {
        "api/index.md": renderer.operations_page(),
        "api/schemas.md": renderer.schemas_page(),
    }
