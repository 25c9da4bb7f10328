"""memoryd_client: a client of memoryd, the server of Claude's memory tool, standard library only.

- ``MemorydClient``: the six memory commands (``view``, ``create``, ``str_replace``,
  ``insert``, ``delete``, ``rename``) on ``POST /memory`` and the ``/v1`` API (search, history,
  versions, restore, redact, the change feed), with retries under ``Idempotency-Key`` and
  ``Retry-After``.
- The errors of ``memoryd_client.errors``: one class per HTTP status of memoryd's error answers
  (``NotFoundError``, ``ConflictError``, ...) and ``MemorydTransportError``.
- ``MemorydMemoryTool`` (and ``MemorydAsyncMemoryTool``): the memory tool for the Anthropic SDK's
  tool runner (and its async runner). Loaded on first use, so that importing this package never
  imports the SDK.
"""

from typing import Any

from . import client as _client
from . import errors as _errors
from ._version import __version__
from .client import *  # noqa: F401,F403 - MemorydClient, MemorydResult, RetryEvent, the defaults
from .errors import *  # noqa: F401,F403 - MemorydError and its subclasses

__all__ = ["__version__", "MemorydMemoryTool", "MemorydAsyncMemoryTool", *_client.__all__, *_errors.__all__]


def __getattr__(name: str) -> Any:
    # The SDK adapter, imported on first use (PEP 562): `import memoryd_client` alone never
    # imports the `anthropic` package.
    if name in ("MemorydMemoryTool", "MemorydAsyncMemoryTool"):
        from . import tool

        return getattr(tool, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
