"""The official SDKs' request types as validators: a payload they refuse is not one a client
could send. Extra keys are ignored by these TypedDicts, as by the providers' clients."""

from __future__ import annotations

import pydantic
from anthropic.types import MessageParam, TextBlockParam
from openai.types.chat import ChatCompletionMessageParam

_OPENAI = pydantic.TypeAdapter(list[ChatCompletionMessageParam])
_ANTHROPIC = pydantic.TypeAdapter(list[MessageParam])
_SYSTEM = pydantic.TypeAdapter(str | list[TextBlockParam])


def openai_sdk_accepts(body: dict) -> None:
    _OPENAI.validate_python(body["messages"])


def anthropic_sdk_accepts(body: dict) -> None:
    _ANTHROPIC.validate_python(body["messages"])
    if "system" in body:
        _SYSTEM.validate_python(body["system"])
