"""``tool_choice``: validation (400s), which tools the template sees, the instruction for a
forced choice and where it goes.

    tool_choice            tools rendered   forced
    absent / "auto"        all              no
    "none"                 none             no
    "required"             all              any declared function (400 without tools)
    {"type": "function",   only that one    that function (400 if undeclared, empty name,
     "function": {name}}                    or type other than "function")

The instruction goes onto the first system message, else the last user message, else a new
leading system message; the caller's messages are copied, never modified.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jsonschema import SchemaError
from jsonschema.validators import validator_for

from ..errors import InvalidRequestError
from ..structured.limits import check_schema_limits

Tools = list[dict[str, Any]]


@dataclass(frozen=True)
class ToolPlan:
    tools: Tools | None  # what the template renders (None: no tools at all)
    forced_name: str | None = None  # the named function, for a named choice
    required: bool = False  # a forced choice of any kind
    instruction: str | None = None


def _validate_tools(tools: Any) -> Tools:
    if not isinstance(tools, list):
        raise InvalidRequestError("tools must be an array.", param="tools")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise InvalidRequestError(f"tools[{i}].type must be 'function'.",
                                      param=f"tools.{i}.type")
        if not isinstance(name, str) or not name:
            raise InvalidRequestError(f"tools[{i}].function.name must be a non-empty string.",
                                      param=f"tools.{i}.function.name")
        assert isinstance(function, dict)  # a name was found in it
        _check_function_fields(function, f"tools.{i}.function")
    return tools


def _check_function_fields(function: dict[str, Any], param: str) -> None:
    """OpenAI's FunctionObject: a string ``description``, an object ``parameters`` (a valid
    JSON schema) and a boolean or null ``strict``, each when sent."""
    if "description" in function and not isinstance(function["description"], str):
        raise InvalidRequestError(f"{param}.description must be a string.",
                                  param=f"{param}.description")
    if "parameters" in function:
        if not isinstance(function["parameters"], dict):
            raise InvalidRequestError(f"{param}.parameters must be a JSON schema object.",
                                      param=f"{param}.parameters")
        check_parameters(function["parameters"], f"{param}.parameters")
    if function.get("strict") is not None and not isinstance(function["strict"], bool):
        raise InvalidRequestError(f"{param}.strict must be a boolean or null.",
                                  param=f"{param}.strict")


def validate_tools(tools: Any) -> Tools | None:
    """``tools`` checked as chat's are (type, name, parameters), whatever ``tool_choice`` is:
    the template renders every schema, so each is bounded before it does."""
    return None if tools is None else _validate_tools(tools)


def check_parameters(schema: Any, param: str) -> None:
    """A tool's parameters: a JSON schema within the limits ``response_format`` has, and a
    valid one (``{"properties": 5}`` is not), so no grammar compiler or template meets it."""
    check_schema_limits(schema, param)
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "the root"
        raise InvalidRequestError(f"{param} is not a valid JSON schema at {where}: "
                                  f"{exc.message[:160]}", param=param) from None


def _named(choice: dict[str, Any], tools: Tools) -> str:
    if choice.get("type") != "function":
        raise InvalidRequestError("tool_choice.type must be 'function'.", param="tool_choice")
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or not name:
        raise InvalidRequestError("tool_choice.function.name must be a non-empty string.",
                                  param="tool_choice")
    declared = {t["function"]["name"] for t in tools}
    if name not in declared:
        raise InvalidRequestError(f"tool_choice names function {name[:64]!r}, which is not "
                                  "declared in tools.", param="tool_choice")
    return name


def plan_tools(tools: Any, tool_choice: Any) -> ToolPlan:
    declared = _validate_tools(tools) if tools is not None else []
    if tool_choice is None or tool_choice == "auto":
        return ToolPlan(declared or None)
    if tool_choice == "none":
        return ToolPlan(None)
    if tool_choice == "required":
        if not declared:
            raise InvalidRequestError("tool_choice 'required' needs at least one tool.",
                                      param="tool_choice")
        return ToolPlan(declared, required=True, instruction=(
            "You must call one or more of the declared functions."))
    if isinstance(tool_choice, dict):
        if not declared:
            raise InvalidRequestError("tool_choice names a function but no tools were sent.",
                                      param="tool_choice")
        name = _named(tool_choice, declared)
        narrowed = [t for t in declared if t["function"]["name"] == name]
        return ToolPlan(narrowed, forced_name=name, required=True,
                        instruction=f"You must call the function {name}.")
    raise InvalidRequestError(
        "tool_choice must be 'none', 'auto', 'required' or {\"type\": \"function\", "
        "\"function\": {\"name\": ...}}.", param="tool_choice")


def place_instruction(messages: list[dict[str, Any]], instruction: str | None
                      ) -> list[dict[str, Any]]:
    """A copy of ``messages`` with ``instruction`` appended where the rules put it."""
    if not instruction:
        return messages
    out = [dict(m) for m in messages]
    target = next((i for i, m in enumerate(out) if m.get("role") == "system"), None)
    if target is None:
        target = next((i for i in range(len(out) - 1, -1, -1) if out[i].get("role") == "user"),
                      None)
    if target is None:
        return [{"role": "system", "content": instruction}, *out]
    content = out[target].get("content") or ""
    out[target]["content"] = f"{content}\n\n{instruction}" if content else instruction
    return out
