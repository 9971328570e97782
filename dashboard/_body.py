"""A change's request body: JSON only (a form another site could post is not), at most ``MAX_BODY``
bytes however it is sent, and checked against its model, each refusal naming what is wrong."""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from machine.errors import BadInputError

MAX_BODY = 256 * 1024
"""The most bytes a change's body may hold (an answer of 50,000 characters fits, escaped)."""

M = TypeVar("M", bound=BaseModel)


class TooLarge(BadInputError):
    """A body past ``MAX_BODY``: answered 413."""


async def body_of(request: Request, model: type[M]) -> M:
    """The request's JSON body as ``model``."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise BadInputError(f"a change is sent as application/json, not {kind or 'no content type'}")
    declared = request.headers.get("content-length", "")
    if declared and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise TooLarge(f"the body is larger than {MAX_BODY:,} bytes")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise TooLarge(f"the body is larger than {MAX_BODY:,} bytes")
    try:
        return model.model_validate(json.loads(bytes(raw)))
    except ValueError as error:
        if isinstance(error, ValidationError):
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            raise BadInputError(f"{where}: {first['msg']}") from None
        raise BadInputError(f"the body is not JSON: {error}") from None


__all__ = ["MAX_BODY", "TooLarge", "body_of"]
