"""MemorydClient: the HTTP client of memoryd's ``POST /memory`` and ``/v1`` API.

Standard library only (``http.client``, ``json``, ``uuid``). One HTTP connection per attempt,
so one client may be shared by threads.

The retry policy is that of the TypeScript client (clients/typescript/src/client.ts): a
request is sent again when it is known not to have been applied (memoryd's 503, a 429, a
refused connection), when it only reads, or when it is a write that carries an
``Idempotency-Key`` (one per write, made once and sent on each of its attempts), which memoryd
applies at most once. ``Retry-After`` is honoured, up to ``max_retry_delay``.
"""

from __future__ import annotations

import datetime
import email.utils
import http.client
import json
import random
import re
import socket
import ssl
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Sequence, Union
from urllib.parse import quote, urlencode, urlsplit

from ._version import __version__
from .errors import MemorydStatusError, MemorydTransportError, error_class_for_status

__all__ = [
    "MemorydClient",
    "MemorydResult",
    "RetryEvent",
    "DEFAULT_TIMEOUT",
    "DEFAULT_RETRIES",
    "DEFAULT_RETRY_DELAY",
    "DEFAULT_MAX_RETRY_DELAY",
    "DEFAULT_TENANT_HEADER",
    "IDEMPOTENCY_KEY_HEADER",
    "IDEMPOTENCY_KEY_PREFIX",
]

#: Default time limit of one HTTP attempt (to connect, and for each read), in seconds.
DEFAULT_TIMEOUT = 10.0
#: Default number of retries after the first attempt.
DEFAULT_RETRIES = 2
#: Default first backoff delay in seconds (doubled on each retry, with jitter).
DEFAULT_RETRY_DELAY = 0.25
#: Default cap on any wait between attempts, ``Retry-After`` included, in seconds.
DEFAULT_MAX_RETRY_DELAY = 5.0
#: Default tenant header (memoryd's ``--tenant-header``).
DEFAULT_TENANT_HEADER = "X-Tenant-ID"
#: The request header that carries a write's idempotency key.
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
#: Prefix of the idempotency keys the client makes (``mdc-`` and a random UUID).
IDEMPOTENCY_KEY_PREFIX = "mdc-"

_TENANT_RE = re.compile(r"[A-Za-z0-9._-]{1,128}")
_TOKEN_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_KEY_RE = re.compile(r"[\x21-\x7e]{1,255}")
_ACTOR_RE = re.compile(r"[\x20-\x7e]{1,128}")
_COMMAND_RE = re.compile(r"[a-z_]{1,32}")
# An If-Match value: one entity tag, several, or "*".
_ETags = Union[str, Sequence[str], None]


@dataclass(frozen=True)
class MemorydResult:
    """memoryd's answer to one memory command.

    Attributes:
        content: The ``tool_result`` text, exactly as memoryd sent it.
        is_error: memoryd's ``is_error``.
        status: The HTTP status (200 on success; 400, 404, 409, 412, 413, 422, 500, 503, ...).
        replayed: True when memoryd answered with the kept first answer of an earlier attempt
            with the same ``Idempotency-Key`` (``Idempotent-Replayed: true``): the write was
            applied (or refused) once, by that attempt, and not again.
        etag: The file's entity tag (``"sha256-..."``) after a view of a file or a successful
            ``create``, ``str_replace`` or ``insert``; else None. Send it as ``if_match``.
        tool_use_id: The ``tool_use_id`` of the answer to a whole ``tool_use`` block.
        retry_after: The answer's ``Retry-After`` in seconds, or None.
    """

    content: str
    is_error: bool
    status: int
    replayed: bool = False
    etag: Optional[str] = None
    tool_use_id: Optional[str] = None
    retry_after: Optional[float] = None


@dataclass(frozen=True)
class RetryEvent:
    """What ``on_retry`` is told before each retry.

    Attributes:
        command: The command or operation being sent (``view``, ``create``, ``history``, ...).
        attempt: The attempt that failed (1 for the first).
        reason: ``unavailable`` (memoryd's 503: not applied), ``rate_limited`` (429: not
            applied), ``connection_refused`` or ``connect_failed`` (never sent), ``timeout``,
            ``connection_lost`` or ``bad_gateway`` (a 502, a 504, or a 503 that is not
            memoryd's).
        status: The HTTP status of the failed attempt, when it got an answer.
        delay: The wait before the next attempt, in seconds.
        idempotency_key: The key the write is sent with again, or None.
    """

    command: str
    attempt: int
    reason: str
    status: Optional[int]
    delay: float
    idempotency_key: Optional[str]


@dataclass
class _Answer:
    status: int
    reason: str
    headers: Dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


@dataclass
class _Failure:
    kind: str  # connection_refused | connect_failed | timeout | connection_lost
    reason: str
    error: BaseException


@dataclass
class _Request:
    """One logical request: sent once, or several times with the very same bytes."""

    method: str
    target: str  # path and query, relative to the base URL
    body: Optional[bytes]
    headers: Dict[str, str]
    name: str  # the command or operation, for texts and events
    read_only: bool
    key: Optional[str]
    check_path: str  # what to view to learn a write's outcome
    timeout: float
    parse: Callable[[_Answer], Any]  # memoryd's answer, or None if this is not one


@dataclass
class _Final:
    answer: _Answer
    value: Any
    attempts: int


class _Retry(Exception):
    def __init__(self, reason: str, status: Optional[int], retry_after: Optional[float], unknown: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.retry_after = retry_after
        self.unknown = unknown


class MemorydClient:
    """A client of memoryd: the six memory commands and the ``/v1`` API.

    Example::

        memoryd = MemorydClient("http://127.0.0.1:8080", tenant="alice")
        memoryd.create("/memories/prefs.md", "- indent: tabs\\n")
        print(memoryd.view("/memories/prefs.md"))

    Args:
        base_url: Where memoryd (or the proxy in front of it) listens, e.g.
            ``http://127.0.0.1:8080`` or ``https://gateway.example.com/memoryd`` (a path prefix
            is kept; commands go to ``{base_url}/memory``, the ``/v1`` API to ``{base_url}/v1/...``).
        tenant: The tenant, sent in the tenant header (1 to 128 characters of
            ``A-Z a-z 0-9 . _ -``). Leave it out with an API key that decides the tenant, or to
            use memoryd's default tenant.
        api_key: Sent as ``Authorization: Bearer <api_key>``: a key of ``memoryd --auth keys``,
            or of the authenticating proxy in front of memoryd.
        timeout: Time limit of one HTTP attempt in seconds: to connect, and for each read of
            the answer.
        retries: How many times to try again after a failed attempt, where that is safe (see
            the retry policy in the README). 0 turns retries off.
        tenant_header: Name of the tenant header (memoryd's ``--tenant-header``).
        headers: Extra request headers, sent on every request (the ones above win). Not
            ``Idempotency-Key``: keys are made per write.
        retry_delay: First backoff delay in seconds, doubled on each retry, with jitter (50 to
            100 % of it).
        max_retry_delay: Upper bound of any wait between attempts, ``Retry-After`` included.
        idempotency_keys: Whether each write gets its own ``Idempotency-Key`` (default True),
            which also lets a write be retried after a timeout, a lost connection or a
            gateway's 502/504. False sends none, and a write that may have reached memoryd is
            never sent again (its outcome is reported as unknown).
        actor: Sent as ``X-Memory-Actor`` on every write: who writes, recorded in the history
            and the change feed (1 to 128 printable ASCII characters).
        on_retry: Called with a ``RetryEvent`` before each retry (for logs or metrics); what it
            raises is ignored.
        ssl_context: The ``ssl.SSLContext`` of an ``https`` base URL (default: the system's
            trusted certificates).

    Raises:
        ValueError: An option is invalid.
    """

    def __init__(
        self,
        base_url: str,
        tenant: Optional[str] = None,
        api_key: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        *,
        tenant_header: str = DEFAULT_TENANT_HEADER,
        headers: Optional[Mapping[str, str]] = None,
        retry_delay: float = DEFAULT_RETRY_DELAY,
        max_retry_delay: float = DEFAULT_MAX_RETRY_DELAY,
        idempotency_keys: bool = True,
        actor: Optional[str] = None,
        on_retry: Optional[Callable[[RetryEvent], None]] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        parts = urlsplit(str(base_url))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"MemorydClient: base_url must be an http:// or https:// URL, got {base_url!r}")
        self.base_url = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._ssl_context = ssl_context

        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError("MemorydClient: timeout must be a positive number of seconds")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError("MemorydClient: retries must be a whole number >= 0")
        for name, value in (("retry_delay", retry_delay), ("max_retry_delay", max_retry_delay)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"MemorydClient: {name} must be a number of seconds >= 0")
        if not isinstance(idempotency_keys, bool):
            raise ValueError("MemorydClient: idempotency_keys must be True or False")
        self.timeout = float(timeout)
        self.retries = retries
        self.retry_delay = float(retry_delay)
        self.max_retry_delay = float(max_retry_delay)
        self.idempotency_keys = idempotency_keys
        self._on_retry = on_retry

        common: Dict[str, str] = {}
        for k, v in (headers or {}).items():
            if k.lower() == IDEMPOTENCY_KEY_HEADER.lower():
                # One key for every write would make memoryd answer each new write with the first one's answer.
                raise ValueError(
                    "MemorydClient: headers must not set Idempotency-Key (one key per write: "
                    "see the idempotency_key argument of the write methods)"
                )
            _set_header(common, k, v)
        if not _TOKEN_RE.fullmatch(tenant_header):
            raise ValueError(f"MemorydClient: tenant_header is not a valid header name: {tenant_header!r}")
        if tenant is not None:
            if not isinstance(tenant, str) or not _TENANT_RE.fullmatch(tenant):
                raise ValueError("MemorydClient: tenant must be 1-128 characters of A-Z a-z 0-9 . _ -")
            _set_header(common, tenant_header, tenant)
        if api_key is not None:
            if not isinstance(api_key, str) or api_key == "" or "\r" in api_key or "\n" in api_key:
                raise ValueError("MemorydClient: api_key must be a non-empty string without line breaks")
            _set_header(common, "Authorization", f"Bearer {api_key}")
        if actor is not None and (not isinstance(actor, str) or not _ACTOR_RE.fullmatch(actor)):
            raise ValueError("MemorydClient: actor must be 1-128 printable ASCII characters")
        self._actor = actor
        _set_header(common, "Accept", "application/json")
        _set_header(common, "User-Agent", f"memoryd-client-python/{__version__}")
        self._headers = common

    # ---- the memory tool's commands ----

    def execute(
        self,
        command: Mapping[str, Any],
        *,
        idempotency_key: Optional[str] = None,
        if_match: _ETags = None,
        if_none_match: Optional[str] = None,
    ) -> MemorydResult:
        """Sends one memory command (or a whole ``tool_use`` block) and returns memoryd's answer.

        Error results (``is_error: true``) are returned, not raised; the six command methods
        raise them. The command is sent as its JSON, once serialised, with the same bytes on
        every attempt.

        Args:
            command: The command object, exactly the ``input`` of Claude's memory ``tool_use``
                block (``{"command": "view", "path": "/memories"}``), or the whole block
                (``{"type": "tool_use", "id": ..., "name": "memory", "input": {...}}``): the
                answer then carries its ``tool_use_id``.
            idempotency_key: The write's own ``Idempotency-Key`` instead of a new random one
                (1 to 255 visible ASCII characters), e.g. the ``idempotency_key`` of an error
                whose ``outcome_unknown`` is true, to settle that write's outcome without
                applying it twice. Ignored for ``view``.
            if_match: ``If-Match``: an entity tag (``MemorydResult.etag``), several, or ``*``:
                the write applies only if the file still has that content (else 412).
            if_none_match: ``If-None-Match: *``: the write applies only if nothing exists at
                the path (else 412).

        Raises:
            MemorydTransportError: memoryd could not be asked, or did not answer with a
                ``tool_result`` (its text says whether the command was applied).
            ValueError: An argument is invalid.
        """
        if not isinstance(command, Mapping):
            raise ValueError("MemorydClient.execute: command must be a mapping (a JSON object)")
        inner = command.get("input") if command.get("type") is not None else command
        name = _command_name(inner)
        read_only = name == "view"
        headers = dict(self._headers)
        _set_header(headers, "Content-Type", "application/json")
        key = None
        if not read_only:
            key = self._key(idempotency_key)
            if key is not None:
                _set_header(headers, IDEMPOTENCY_KEY_HEADER, key)
            self._preconditions(headers, if_match, if_none_match)
            if self._actor is not None:
                _set_header(headers, "X-Memory-Actor", self._actor)
        body = json.dumps(command, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        request = _Request(
            method="POST",
            target=self._prefix + "/memory",
            body=body,
            headers=headers,
            name=name,
            read_only=read_only,
            key=key,
            check_path=_target(inner),
            timeout=self.timeout,
            parse=_parse_tool_result,
        )
        return self._send(request).value

    def view(self, path: str, view_range: Optional[Sequence[int]] = None) -> str:
        """``view``: a directory's listing (two levels deep) or a file with line numbers.

        ``view_range`` is ``[start_line, end_line]`` (1-based, ``-1`` for the end). Returns the
        ``tool_result`` text; raises a ``MemorydStatusError`` subclass on an error result
        (e.g. ``NotFoundError``), a ``MemorydTransportError`` when memoryd could not be asked.
        """
        command: Dict[str, Any] = {"command": "view", "path": path}
        if view_range is not None:
            command["view_range"] = list(view_range)
        return self._run(command)

    def create(
        self,
        path: str,
        file_text: str,
        *,
        if_none_match: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> str:
        """``create``: a new file with ``file_text`` (and its missing parent directories); never overwrites."""
        return self._run(
            {"command": "create", "path": path, "file_text": file_text},
            if_none_match=if_none_match,
            idempotency_key=idempotency_key,
        )

    def str_replace(
        self,
        path: str,
        old_str: str,
        new_str: str,
        *,
        if_match: _ETags = None,
        idempotency_key: Optional[str] = None,
    ) -> str:
        """``str_replace``: replaces the one occurrence of ``old_str`` in the file with ``new_str``."""
        return self._run(
            {"command": "str_replace", "path": path, "old_str": old_str, "new_str": new_str},
            if_match=if_match,
            idempotency_key=idempotency_key,
        )

    def insert(
        self,
        path: str,
        insert_line: int,
        insert_text: str,
        *,
        if_match: _ETags = None,
        idempotency_key: Optional[str] = None,
    ) -> str:
        """``insert``: inserts ``insert_text`` after line ``insert_line`` (0: before the first line)."""
        return self._run(
            {"command": "insert", "path": path, "insert_line": insert_line, "insert_text": insert_text},
            if_match=if_match,
            idempotency_key=idempotency_key,
        )

    def delete(
        self,
        path: str,
        *,
        if_match: _ETags = None,
        idempotency_key: Optional[str] = None,
    ) -> str:
        """``delete``: a file, or a directory with everything below it."""
        return self._run({"command": "delete", "path": path}, if_match=if_match, idempotency_key=idempotency_key)

    def rename(
        self,
        old_path: str,
        new_path: str,
        *,
        if_match: _ETags = None,
        idempotency_key: Optional[str] = None,
    ) -> str:
        """``rename``: moves a file or a directory (and makes the destination's missing parents); never overwrites."""
        return self._run(
            {"command": "rename", "old_path": old_path, "new_path": new_path},
            if_match=if_match,
            idempotency_key=idempotency_key,
        )

    def run_tool_use(self, tool_use: Mapping[str, Any]) -> Dict[str, Any]:
        """Runs one memory ``tool_use`` block and returns the ``tool_result`` block to send back.

        For a harness that calls the Messages API itself: the block is sent whole, so the answer
        carries its ``tool_use_id``; an error result comes back as a block with
        ``is_error: true`` (nothing is raised for it), and so does a transport failure, with the
        ``MemorydTransportError``'s text.
        """
        try:
            result = self.execute(tool_use)
        except MemorydTransportError as e:
            block: Dict[str, Any] = {"type": "tool_result"}
            if isinstance(tool_use.get("id"), str):
                block["tool_use_id"] = tool_use["id"]
            block.update(content=e.content, is_error=True)
            return block
        block = {"type": "tool_result"}
        if result.tool_use_id is not None:
            block["tool_use_id"] = result.tool_use_id
        block.update(content=result.content, is_error=result.is_error)
        return block

    # ---- the /v1 API ----

    def search(
        self,
        query: str,
        *,
        path: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> Dict[str, Any]:
        """``GET /v1/search``: the files whose content holds every term of ``query``, best first.

        Returns memoryd's JSON: ``{"query", "path", "hits": [{"path", "matching_lines",
        "lines": [{"line", "text"}]}], "next_cursor"}``; pass ``next_cursor`` as ``cursor`` for
        the next page.
        """
        return self._v1_get("search", "/v1/search", {"q": query, "path": path, "limit": limit, "cursor": cursor})

    def search_text(
        self,
        query: str,
        *,
        path: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> str:
        """``GET /v1/search?format=text``: the same hits as text for a model."""
        params = {"q": query, "path": path, "limit": limit, "cursor": cursor, "format": "text"}
        return self._v1_get("search", "/v1/search", params)

    def history(self, path: str, *, limit: Optional[int] = None, cursor: Optional[int] = None) -> Dict[str, Any]:
        """``GET /v1/history``: the versions kept of ``path``, newest first (``versions``, ``next_cursor``)."""
        return self._v1_get("history", "/v1/history", {"path": path, "limit": limit, "cursor": cursor})

    def version(self, version: int) -> Dict[str, Any]:
        """``GET /v1/versions/{version}``: one version, with the ``content`` the file had."""
        return self._v1_get("version", f"/v1/versions/{quote(str(version), safe='')}", {})

    def restore(
        self,
        path: str,
        *,
        version: Optional[int] = None,
        before: Optional[int] = None,
        if_match: _ETags = None,
        if_none_match: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Dict[str, Any]:
        """``POST /v1/restore``: puts version ``version`` of the file at ``path`` back, or every
        file at or below ``path`` back as it stood just before version ``before`` (give exactly
        one). One atomic write, retried under its own ``Idempotency-Key``. Returns memoryd's
        JSON (``restored``, ``removed``, ``unchanged``, ``seq``, ``versions_recorded``)."""
        body: Dict[str, Any] = {"path": path}
        if version is not None:
            body["version"] = version
        if before is not None:
            body["before"] = before
        return self._v1_post("restore", "/v1/restore", body, path, idempotency_key, if_match, if_none_match)

    def redact(self, path: str, version: int, *, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """``POST /v1/redact``: erases the content (and hash) of version ``version`` of ``path`` for good."""
        return self._v1_post("redact", "/v1/redact", {"path": path, "version": version}, path, idempotency_key)

    def clear_all_memory(self, *, idempotency_key: Optional[str] = None) -> Dict[str, Any]:
        """``DELETE /v1/memories``: every file and directory below ``/memories`` removed, in one
        write recorded in the history and the change feed (one entry), so that
        ``restore("/memories", before=answer["restore_before"])`` undoes it. Retried under its
        own ``Idempotency-Key``. Returns memoryd's JSON (``removed``: the files there were,
        ``restore_before``, ``seq``, ``versions_recorded``)."""
        return self._v1_post("clear", "/v1/memories", None, "/memories", idempotency_key, method="DELETE")

    def changes(self, *, after: int = 0, limit: Optional[int] = None, wait: Optional[int] = None) -> Dict[str, Any]:
        """``GET /v1/changes``: the tenant's writes after ``after``, oldest first.

        Returns ``{"changes": [...], "last_seq", "next_after"}``; pass ``next_after`` as
        ``after`` next time. ``wait`` (0 to 60 seconds) holds an answer that would be empty
        until the tenant's next write (a long poll); the attempt's time limit grows by it.
        Raises ``GoneError`` (410) when the entries after ``after`` are no longer kept.
        """
        extra = float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait > 0 else 0.0
        params = {"after": after, "limit": limit, "wait": wait}
        return self._v1_get("changes", "/v1/changes", params, timeout=self.timeout + extra)

    def follow_changes(self, *, after: int = 0, wait: int = 30, limit: Optional[int] = None) -> Iterator[Dict[str, Any]]:
        """Yields every change-feed entry after ``after``, then each new one as it is written.

        Long-polls ``GET /v1/changes`` with ``wait`` seconds per request; never ends by itself
        (stop iterating to stop).
        """
        while True:
            page = self.changes(after=after, limit=limit, wait=wait)
            for change in page["changes"]:
                yield change
            after = page["next_after"]

    # ---- internals ----

    def _run(self, command: Dict[str, Any], **options: Any) -> str:
        result = self.execute(command, **options)
        if result.is_error:
            raise _status_error(
                result.content,
                result.status,
                command=command["command"],
                replayed=result.replayed,
                retry_after=result.retry_after,
            )
        return result.content

    def _key(self, given: Optional[str]) -> Optional[str]:
        if given is not None:
            if not isinstance(given, str) or not _KEY_RE.fullmatch(given):
                raise ValueError("MemorydClient: idempotency_key must be 1-255 visible ASCII characters")
            return given
        if self.idempotency_keys:
            return IDEMPOTENCY_KEY_PREFIX + str(uuid.uuid4())
        return None

    @staticmethod
    def _preconditions(headers: Dict[str, str], if_match: _ETags, if_none_match: Optional[str]) -> None:
        if if_match is not None:
            value = if_match if isinstance(if_match, str) else ", ".join(if_match)
            _set_header(headers, "If-Match", value)
        if if_none_match is not None:
            _set_header(headers, "If-None-Match", if_none_match)

    def _v1_get(self, name: str, route: str, params: Mapping[str, Any], timeout: Optional[float] = None) -> Any:
        query = urlencode({k: v for k, v in params.items() if v is not None}, quote_via=quote, safe="/")
        request = _Request(
            method="GET",
            target=self._prefix + route + ("?" + query if query else ""),
            body=None,
            headers=dict(self._headers),
            name=name,
            read_only=True,
            key=None,
            check_path=str(params.get("path") or "/memories"),
            timeout=self.timeout if timeout is None else timeout,
            parse=_parse_v1,
        )
        return self._v1_value(self._send(request), name, None)

    def _v1_post(
        self,
        name: str,
        route: str,
        body: Optional[Mapping[str, Any]],
        path: str,
        idempotency_key: Optional[str],
        if_match: _ETags = None,
        if_none_match: Optional[str] = None,
        method: str = "POST",
    ) -> Dict[str, Any]:
        """A /v1 write: ``body`` as JSON (``None``: no body)."""
        headers = dict(self._headers)
        if body is not None:
            _set_header(headers, "Content-Type", "application/json")
        key = self._key(idempotency_key)
        if key is not None:
            _set_header(headers, IDEMPOTENCY_KEY_HEADER, key)
        self._preconditions(headers, if_match, if_none_match)
        if self._actor is not None:
            _set_header(headers, "X-Memory-Actor", self._actor)
        request = _Request(
            method=method,
            target=self._prefix + route,
            body=b"" if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
            headers=headers,
            name=name,
            read_only=False,
            key=key,
            check_path=f"the history of {path}" if isinstance(path, str) else "the history",
            timeout=self.timeout,
            parse=_parse_v1,
        )
        return self._v1_value(self._send(request), name, key)

    @staticmethod
    def _v1_value(final: _Final, name: str, key: Optional[str]) -> Any:
        answer, value = final.answer, final.value
        if answer.status == 200:
            return value
        message = value["error"] if isinstance(value, dict) and isinstance(value.get("error"), str) else answer.text
        raise _status_error(
            message,
            answer.status,
            command=name,
            attempts=final.attempts,
            idempotency_key=key,
            replayed=_replayed(answer),
            retry_after=_retry_after(answer),
        )

    def _send(self, request: _Request) -> _Final:
        unsure = False  # whether an earlier attempt of this write may have been applied
        attempt = 1
        while True:
            outcome = self._attempt(request)
            can_retry = attempt <= self.retries
            try:
                return _decide(outcome, request, attempt, can_retry, unsure)
            except _Retry as step:
                unsure = unsure or step.unknown
                if step.retry_after is not None:
                    delay = min(step.retry_after, self.max_retry_delay)
                else:
                    backoff = min(self.max_retry_delay, self.retry_delay * 2 ** (attempt - 1))
                    delay = backoff * (0.5 + random.random() * 0.5)
                if self._on_retry is not None:
                    try:
                        self._on_retry(RetryEvent(request.name, attempt, step.reason, step.status, delay, request.key))
                    except Exception:  # noqa: BLE001 - a logging hook must not change the outcome
                        pass
                time.sleep(delay)
                attempt += 1

    def _attempt(self, request: _Request) -> Union[_Answer, _Failure]:
        """One HTTP attempt on a connection of its own. Never raises."""
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=request.timeout, context=self._ssl_context)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=request.timeout)
        try:
            try:
                conn.connect()
            except ConnectionRefusedError as e:
                return _Failure("connection_refused", "connection refused", e)
            except (OSError, http.client.HTTPException) as e:
                return _Failure("connect_failed", _reason(e), e)
            try:
                conn.request(request.method, request.target, body=request.body, headers=request.headers)
                response = conn.getresponse()
                body = response.read()
            except (socket.timeout, TimeoutError) as e:
                return _Failure("timeout", "timed out", e)
            except (OSError, http.client.HTTPException) as e:
                return _Failure("connection_lost", _reason(e), e)
            headers = {k.lower(): v for k, v in response.getheaders()}
            return _Answer(response.status, response.reason or "", headers, body)
        finally:
            conn.close()


def _decide(
    outcome: Union[_Answer, _Failure],
    request: _Request,
    attempts: int,
    can_retry: bool,
    unsure: bool,
) -> _Final:
    """The retry policy: returns the final answer, raises the error, or raises ``_Retry``.

    The status decides first, whatever the body: a proxy may answer in memoryd's shape
    (docker/nginx.conf does for 401, 413, 429, 502 and 504), so memoryd's shape alone does not
    say that memoryd handled the request. Three kinds of trouble: certainly not applied (429,
    memoryd's 503, a connection never made): retried, whatever the request; may have been
    applied (a timeout, a lost connection, a gateway's 502/503/504): retried for a read and for
    a write with an idempotency key, else an unknown-outcome error at once; anything else is
    final. When the retries run out on a write, an unknown outcome of any attempt decides.
    """
    name, read_only = request.name, request.read_only
    resendable = read_only or request.key is not None
    tried = f" (tried {attempts} times)" if attempts > 1 else ""

    def transport(text: str, kind: str, unknown: bool, status: Optional[int] = None) -> MemorydTransportError:
        return MemorydTransportError(
            text,
            kind=kind,
            command=name,
            status=status,
            attempts=attempts,
            idempotency_key=request.key,
            outcome_unknown=unknown,
        )

    def unknown_error(what: str, now: bool, kind: str, status: Optional[int] = None) -> MemorydTransportError:
        sentence = _end_sentence(what + tried + ("" if now else ", after an earlier attempt that may have reached it"))
        advice = f"It is unknown whether the command was applied: view {request.check_path} to check before retrying."
        return transport(f"Error: {sentence} {advice}", kind, True, status)

    if isinstance(outcome, _Answer):
        status = outcome.status
        value = request.parse(outcome)
        retry_after = _retry_after(outcome)
        http_status = f"HTTP {status}" + (f" {outcome.reason}" if outcome.reason else "")
        if value is not None:
            if isinstance(value, MemorydResult):
                shown = value.content
            else:
                shown = value.get("error") if isinstance(value, dict) else value
            gateway = ", a gateway's error" if status in (502, 504) else ""
            answered = f'The memory service answered the {name} command with {http_status}{gateway}: "{_full_stop(_snippet(str(shown)))}"'
        else:
            snippet = _snippet(outcome.text)
            ctype = outcome.headers.get("content-type", "") or "no content type"
            answered = (
                f"The memory service answered the {name} command with {http_status}, which is not a memoryd answer"
                f" ({ctype}{': ' + snippet if snippet else ', empty body'})"
            )

        def not_memoryd(not_applied: bool, try_again: bool) -> MemorydTransportError:
            text = f"Error: {answered}{tried}" + (f"; the {name} command was not applied" if not_applied else "") + "."
            return transport(text + (" Try again later." if try_again else ""), "unexpected_response", False, status)

        final = _Final(outcome, value, attempts)
        # Refused before the request was looked at (a rate limit), or memoryd's own 503 ("not
        # applied"): safe to send again, writes included.
        if status == 429 or (status == 503 and value is not None):
            if can_retry:
                raise _Retry("rate_limited" if status == 429 else "unavailable", status, retry_after, False)
            if unsure and not read_only:
                raise unknown_error(answered, False, "unexpected_response", status)
            if value is not None:
                return final
            raise not_memoryd(True, True)
        # A gateway's failure: memoryd never answers 502 or 504. The request may have reached
        # memoryd before the gateway gave up on it: sent again only if that is harmless.
        if status in (502, 503, 504):
            if not resendable:
                raise unknown_error(answered, True, "unexpected_response", status)
            if can_retry:
                raise _Retry("bad_gateway", status, retry_after, not read_only)
            if not read_only:
                raise unknown_error(answered, True, "unexpected_response", status)
            if value is not None:
                return final
            raise not_memoryd(False, True)
        if value is not None:
            return final
        if not read_only and (status >= 500 or status == 408):
            raise unknown_error(answered, True, "unexpected_response", status)
        if unsure and not read_only:
            raise unknown_error(answered, False, "unexpected_response", status)
        raise not_memoryd(False, False)

    kind, reason = outcome.kind, outcome.reason
    if kind in ("connection_refused", "connect_failed"):
        # The connection was never made: the request was not sent.
        if can_retry:
            raise _Retry(kind, None, None, False)
        what = f"Could not connect to the memory service: {reason}"
        if unsure and not read_only:
            raise unknown_error(what, False, kind)
        raise transport(f"Error: {what}{tried}; the {name} command was not applied. Try again later.", kind, False)
    if kind == "timeout":
        what = f"The memory service did not answer the {name} command within {_seconds(request.timeout)}"
    else:
        what = f"The connection to the memory service failed ({reason}) before it answered the {name} command"
    if resendable and can_retry:
        raise _Retry(kind, None, None, not read_only)
    if not read_only:
        raise unknown_error(what, True, kind)
    raise transport(f"Error: {what}{tried}. Try again later.", kind, False)


def _status_error(
    content: str,
    status: int,
    *,
    command: str,
    attempts: int = 1,
    idempotency_key: Optional[str] = None,
    replayed: bool = False,
    retry_after: Optional[float] = None,
) -> MemorydStatusError:
    cls = error_class_for_status(status)
    # memoryd's 500 when a commit could not be confirmed: the write may or may not have been applied.
    unknown = status == 500 and "may or may not have been applied" in content
    return cls(
        content,
        command=command,
        status=status,
        attempts=attempts,
        idempotency_key=idempotency_key,
        outcome_unknown=unknown,
        replayed=replayed,
        retry_after=retry_after,
    )


def _parse_tool_result(answer: _Answer) -> Optional[MemorydResult]:
    """memoryd's answer to ``POST /memory``, or None if the body is not a ``tool_result``."""
    try:
        value = json.loads(answer.body.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("type") != "tool_result":
        return None
    content, is_error = value.get("content"), value.get("is_error")
    if not isinstance(content, str) or not isinstance(is_error, bool):
        return None
    etag = value.get("etag") if isinstance(value.get("etag"), str) else answer.headers.get("etag")
    tool_use_id = value.get("tool_use_id") if isinstance(value.get("tool_use_id"), str) else None
    return MemorydResult(
        content=content,
        is_error=is_error,
        status=answer.status,
        replayed=_replayed(answer),
        etag=etag,
        tool_use_id=tool_use_id,
        retry_after=_retry_after(answer),
    )


def _parse_v1(answer: _Answer) -> Any:
    """memoryd's answer of a ``/v1`` operation (its JSON, or the text of ``format=text``), or None."""
    ctype = answer.headers.get("content-type", "").split(";")[0].strip().lower()
    if answer.status == 200 and ctype == "text/plain":
        return answer.body.decode("utf-8")
    try:
        value = json.loads(answer.body.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if answer.status != 200 and not isinstance(value.get("error"), str):
        return None
    return value


def _replayed(answer: _Answer) -> bool:
    return answer.headers.get("idempotent-replayed", "").strip().lower() == "true"


def _retry_after(answer: _Answer) -> Optional[float]:
    """``Retry-After`` (delta-seconds or an HTTP date) in seconds, or None."""
    value = answer.headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    if re.fullmatch(r"[0-9]+", value):
        return float(int(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


def _command_name(command: Any) -> str:
    if isinstance(command, Mapping):
        name = command.get("command")
        if isinstance(name, str) and _COMMAND_RE.fullmatch(name):
            return name
    return "unknown"


def _target(command: Any) -> str:
    """The path(s) to view to learn a write's outcome."""
    if isinstance(command, Mapping):
        old, new = command.get("old_path"), command.get("new_path")
        if isinstance(old, str) and isinstance(new, str):
            return f"{old} and {new}"
        if isinstance(command.get("path"), str):
            return command["path"]
    return "the affected path"


def _set_header(headers: Dict[str, str], name: str, value: str) -> None:
    for k in [k for k in headers if k.lower() == name.lower()]:
        del headers[k]
    headers[name] = value


def _reason(error: BaseException) -> str:
    if isinstance(error, socket.gaierror):
        return "host not found"
    if isinstance(error, (socket.timeout, TimeoutError)):
        return "timed out"
    if isinstance(error, http.client.RemoteDisconnected):
        return "connection closed by the server"
    if isinstance(error, ConnectionResetError):
        return "connection reset"
    if isinstance(error, BrokenPipeError):
        return "connection closed by the server"
    if isinstance(error, ssl.SSLError):
        return f"TLS: {error.reason or error}"
    if isinstance(error, http.client.IncompleteRead):
        return "the answer was cut short"
    text = str(error) or type(error).__name__
    return text


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _end_sentence(text: str) -> str:
    return text if re.search(r'[.!?…]"?$', text) else text + "."


def _full_stop(text: str) -> str:
    return text if re.search(r"[.!?…]$", text) else text + "."


def _snippet(text: str) -> str:
    s = " ".join(text.split())
    return s[:200] + "…" if len(s) > 200 else s
