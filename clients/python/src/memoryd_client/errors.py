"""The errors of memoryd_client: one class per way a request can fail.

Every error is a ``MemorydError`` whose ``content`` (also ``str(error)``) is a text meant to
be shown as it is: for a memory command, exactly the ``tool_result`` text the model must see.

- ``MemorydStatusError`` and its subclasses (one per HTTP status: ``NotFoundError`` for 404,
  ``ConflictError`` for 409, ...): memoryd answered with an error. For a memory command its
  ``content`` is memoryd's ``tool_result`` text verbatim (``is_error: true``); for the ``/v1``
  API it is the ``error`` of memoryd's ``{"error": "..."}`` answer.
- ``MemorydTransportError``: memoryd could not be asked, or what came back is not memoryd's
  answer (a timeout, a lost connection, a proxy's HTML page, a gateway's 502 after the
  retries). Its text starts with ``Error: `` and says whether the command was applied.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

__all__ = [
    "MemorydError",
    "MemorydStatusError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "GoneError",
    "PreconditionFailedError",
    "PayloadTooLargeError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "InsufficientStorageError",
    "MemorydTransportError",
    "error_class_for_status",
]


class MemorydError(Exception):
    """Base class of every error of memoryd_client.

    Attributes:
        content: The text of the error (the same as ``str(error)``). For a memory command it is
            what the model must see as the ``tool_result`` content, with ``is_error: true``.
        command: What was asked: the memory command (``view``, ``create``, ...) or the ``/v1``
            operation (``search``, ``history``, ``restore``, ...).
        status: The HTTP status of the last answer, or None when none came.
        attempts: How many HTTP attempts were made (1 + the retries used).
        idempotency_key: The ``Idempotency-Key`` the write was sent with, or None.
        outcome_unknown: True when a write may or may not have been applied: view the path (or
            send the same write again with ``idempotency_key``) before trying again.
    """

    def __init__(
        self,
        content: str,
        *,
        command: str = "unknown",
        status: Optional[int] = None,
        attempts: int = 1,
        idempotency_key: Optional[str] = None,
        outcome_unknown: bool = False,
    ) -> None:
        super().__init__(content)
        self.content = content
        self.command = command
        self.status = status
        self.attempts = attempts
        self.idempotency_key = idempotency_key
        self.outcome_unknown = outcome_unknown

    def __str__(self) -> str:
        return self.content


class MemorydStatusError(MemorydError):
    """memoryd (or a proxy in its answer shape) answered with an error.

    Attributes (besides those of ``MemorydError``):
        replayed: True when memoryd answered with the kept first answer of an earlier attempt
            with the same ``Idempotency-Key`` (``Idempotent-Replayed: true``).
        retry_after: The ``Retry-After`` of the answer, in seconds, or None.
    """

    def __init__(self, content: str, *, replayed: bool = False, retry_after: Optional[float] = None, **details: Any) -> None:
        super().__init__(content, **details)
        self.replayed = replayed
        self.retry_after = retry_after


class BadRequestError(MemorydStatusError):
    """400: a malformed request, an invalid path or parameter, a bad header."""


class AuthenticationError(MemorydStatusError):
    """401: no valid API key (``memoryd --auth keys``, or the proxy in front of memoryd)."""


class PermissionDeniedError(MemorydStatusError):
    """403: not a trusted proxy, a key of another tenant, or a read key for a write."""


class NotFoundError(MemorydStatusError):
    """404: the path (or version, or history) does not exist."""


class ConflictError(MemorydStatusError):
    """409: the path exists already, ``old_str`` occurs zero or several times, a parent is a file, ..."""


class GoneError(MemorydStatusError):
    """410: the change-feed entries asked for are no longer kept (read the tree again)."""


class PreconditionFailedError(MemorydStatusError):
    """412: ``If-Match`` or ``If-None-Match`` was not met; nothing changed."""


class PayloadTooLargeError(MemorydStatusError):
    """413: the request body, or the file a command would write, is over its limit."""


class UnprocessableEntityError(MemorydStatusError):
    """422: ``insert_line`` outside the file, or an ``Idempotency-Key`` used for another request."""


class RateLimitError(MemorydStatusError):
    """429: too many requests (too many failed authentications, or a proxy's rate limit)."""


class InternalServerError(MemorydStatusError):
    """500: a storage failure (``outcome_unknown`` when memoryd could not confirm the commit)."""


class ServiceUnavailableError(MemorydStatusError):
    """503: memoryd is overloaded, shutting down, or its database is busy; nothing was applied."""


class InsufficientStorageError(MemorydStatusError):
    """507: the write would take the tenant over its quota."""


_BY_STATUS: Dict[int, Type[MemorydStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    412: PreconditionFailedError,
    413: PayloadTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    500: InternalServerError,
    503: ServiceUnavailableError,
    507: InsufficientStorageError,
}


def error_class_for_status(status: int) -> Type[MemorydStatusError]:
    """The error class of an HTTP status (``MemorydStatusError`` for one without a class)."""
    return _BY_STATUS.get(status, MemorydStatusError)


class MemorydTransportError(MemorydError):
    """memoryd could not be asked, or did not answer with its own answer.

    Attributes (besides those of ``MemorydError``):
        kind: ``connection_refused`` (nothing listens), ``connect_failed`` (the connection could
            not be made: host not found, connect timeout, TLS failure; the request was not
            sent), ``timeout`` (no answer within the client's timeout), ``connection_lost`` (the
            connection failed after the request was sent) or ``unexpected_response`` (an
            answer that is not memoryd's: a proxy's HTML page, a gateway's 502, 503 or 504).
    """

    def __init__(self, content: str, *, kind: str, **details: Any) -> None:
        super().__init__(content, **details)
        self.kind = kind
