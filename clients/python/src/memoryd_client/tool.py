"""MemorydMemoryTool: Claude's memory tool for the Anthropic Python SDK's tool runner, backed by memoryd.

When the SDK (the ``anthropic`` package, 0.84 or later for exact error texts) can be
imported, ``MemorydMemoryTool`` subclasses its ``BetaAbstractMemoryTool`` (and
``MemorydAsyncMemoryTool``, for the async runner, its ``BetaAsyncAbstractMemoryTool``) and
raises its ``ToolError``; otherwise each is a plain class with the same methods, and raises
``MemorydError`` (whose ``content`` is the text). This module is imported only when
``MemorydMemoryTool`` is first used (``memoryd_client.__getattr__``), so the client never
imports the SDK by itself.

The names come from the SDK's source (github.com/anthropics/anthropic-sdk-python,
``src/anthropic/lib/tools/__init__.py`` and ``_beta_builtin_memory_tool.py``, 0.121.0):

- ``anthropic.lib.tools.BetaAbstractMemoryTool``: ``__init__(self, *, cache_control=None)``;
  ``call(input)`` builds the command model and calls ``execute(command)``, which dispatches on
  ``command.command`` to the abstract ``view``, ``create``, ``str_replace``, ``insert``,
  ``delete`` and ``rename``, each taking the command model (``BetaMemoryTool20250818ViewCommand``
  with ``path`` and ``view_range``; ``...CreateCommand``: ``path``, ``file_text``;
  ``...StrReplaceCommand``: ``path``, ``old_str``, ``new_str``; ``...InsertCommand``: ``path``,
  ``insert_line``, ``insert_text``; ``...DeleteCommand``: ``path``; ``...RenameCommand``:
  ``old_path``, ``new_path``) and returning the result (a ``str``); ``clear_all_memory()``
  raises ``NotImplementedError`` unless overridden; ``to_dict()`` is
  ``{"type": "memory_20250818", "name": "memory"}`` (with ``cache_control``).
- ``anthropic.lib.tools.BetaAsyncAbstractMemoryTool``: the same, with ``async`` methods.
- ``anthropic.lib.tools.ToolError(content)`` (exported since 0.84.0): the tool runner
  (``_beta_runner.py``) sends its ``content`` as the ``tool_result`` with ``is_error: True``;
  any other exception reaches the model as its ``repr``.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable, Dict, Mapping, NoReturn, Optional

from .client import MemorydClient, _status_error
from .errors import MemorydError

__all__ = ["MemorydMemoryTool", "MemorydAsyncMemoryTool", "SDK_AVAILABLE"]

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool as _SdkBase
    from anthropic.lib.tools import BetaAsyncAbstractMemoryTool as _SdkAsyncBase
except ImportError:
    _SdkBase = _SdkAsyncBase = None

_SdkToolError: Any = None
if _SdkBase is not None:
    try:
        from anthropic.lib.tools import ToolError as _SdkToolError
    except ImportError:  # an SDK before 0.84: no ToolError (the runner sends repr(exception))
        _SdkToolError = None

#: True when ``MemorydMemoryTool`` subclasses the SDK's ``BetaAbstractMemoryTool``.
SDK_AVAILABLE = _SdkBase is not None

# The fields of each command, in the order memoryd checks them (docs/behaviour.md, 1.2).
_FIELDS: Dict[str, Tuple[str, ...]] = {
    "view": ("path", "view_range"),
    "create": ("path", "file_text"),
    "str_replace": ("path", "old_str", "new_str"),
    "insert": ("path", "insert_line", "insert_text"),
    "delete": ("path",),
    "rename": ("old_path", "new_path"),
}


class _PlainDefinition:
    """What the SDK's memory tool classes have besides the commands: ``to_dict()`` (the tool
    definition) and ``name``. The base of the plain classes used without the SDK."""

    def __init__(self, *, cache_control: Optional[Mapping[str, Any]] = None) -> None:
        self._cache_control = cache_control

    def to_dict(self) -> Dict[str, Any]:
        param: Dict[str, Any] = {"type": "memory_20250818", "name": "memory"}
        if self._cache_control is not None:
            param["cache_control"] = self._cache_control
        return param

    @property
    def name(self) -> str:
        return "memory"

    def _handler(self, command: Any) -> Callable[[Any], Any]:
        name = _field(command, "command")
        if name not in _FIELDS:
            raise NotImplementedError(f"Unknown command: {name}")
        return getattr(self, name)


class _PlainMemoryTool(_PlainDefinition):
    """``BetaAbstractMemoryTool``'s ``call(input)`` and ``execute(command)``, without the SDK."""

    def call(self, input: object) -> Any:  # noqa: A002 - the SDK's name
        return self.execute(input)

    def execute(self, command: Any) -> Any:
        return self._handler(command)(command)


class _PlainAsyncMemoryTool(_PlainDefinition):
    """``BetaAsyncAbstractMemoryTool``'s ``call(input)`` and ``execute(command)``, without the SDK."""

    async def call(self, input: object) -> Any:  # noqa: A002 - the SDK's name
        return await self.execute(input)

    async def execute(self, command: Any) -> Any:
        return await self._handler(command)(command)


class _Memoryd:
    """The client and the commands, shared by the sync and the async tool."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        tenant: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        client: Optional[MemorydClient] = None,
        cache_control: Optional[Mapping[str, Any]] = None,
        **client_options: Any,
    ) -> None:
        super().__init__(cache_control=cache_control)  # type: ignore[call-arg]
        if client is None:
            if base_url is None:
                raise ValueError(f"{type(self).__name__}: give base_url (or a MemorydClient as client)")
            client = MemorydClient(base_url, tenant, api_key, **client_options)
        self.client = client

    def _run(self, name: str, command: Any) -> str:
        body: Dict[str, Any] = {"command": name}
        for field in _FIELDS[name]:
            value = _field(command, field)
            if value is not None:
                body[field] = list(value) if field == "view_range" and isinstance(value, tuple) else value
        try:
            result = self.client.execute(body)
        except MemorydError as e:
            _raise_for_model(e)
        if result.is_error:
            _raise_for_model(_status_error(result.content, result.status, command=name, replayed=result.replayed))
        return result.content

    def _clear(self) -> str:
        try:
            self.client.clear_all_memory()
        except MemorydError as e:
            _raise_for_model(e)
        return "All memory cleared"


_CLEAR_DOC = """Deletes every file and directory of the tenant's ``/memories``: memoryd's
        ``DELETE /v1/memories`` (``MemorydClient.clear_all_memory``), one write with a key that
        may write. It is recorded in the history (kept ``--history-days``) and the change feed
        as one change, so ``POST /v1/restore`` with ``{"path": "/memories", "before": N}``
        undoes it (``N``: the ``restore_before`` of its answer). To erase a tenant whole,
        history included, an administrator uses ``DELETE /v1/tenants/{tenant}``.

        Returns ``All memory cleared``, as the SDK's filesystem tool does.
        """

_Base: Any = _SdkBase if _SdkBase is not None else _PlainMemoryTool
_AsyncBase: Any = _SdkAsyncBase if _SdkAsyncBase is not None else _PlainAsyncMemoryTool


class MemorydMemoryTool(_Memoryd, _Base):  # type: ignore[misc,valid-type]
    """Claude's memory tool (``memory_20250818``) whose commands memoryd carries out.

    Pass it to the SDK's tool runner::

        runner = anthropic.Anthropic().beta.messages.tool_runner(
            model="claude-opus-4-6", max_tokens=4096, messages=[...],
            tools=[MemorydMemoryTool("http://127.0.0.1:8080", tenant="user-42")],
        )

    Each command goes to memoryd's ``POST /memory`` as it is; memoryd's text comes back to the
    model verbatim: returned on success, raised as the SDK's ``ToolError`` on an error result
    (so the runner sends it with ``is_error: true``, unchanged) and on a transport failure
    (a text that says whether the command was applied). Each write carries its own
    ``Idempotency-Key``, so the client's retries apply it at most once.

    Args:
        base_url, tenant, api_key: As for ``MemorydClient`` (ignored when ``client`` is given).
        client: A ``MemorydClient`` to use (e.g. one shared with other code).
        cache_control: The tool definition's ``cache_control``, as the SDK takes it.
        **client_options: Other options of ``MemorydClient`` (``timeout``, ``retries``, ...).
    """

    def view(self, command: Any) -> str:
        """The ``view`` command (``path``, optional ``view_range``)."""
        return self._run("view", command)

    def create(self, command: Any) -> str:
        """The ``create`` command (``path``, ``file_text``)."""
        return self._run("create", command)

    def str_replace(self, command: Any) -> str:
        """The ``str_replace`` command (``path``, ``old_str``, ``new_str``)."""
        return self._run("str_replace", command)

    def insert(self, command: Any) -> str:
        """The ``insert`` command (``path``, ``insert_line``, ``insert_text``)."""
        return self._run("insert", command)

    def delete(self, command: Any) -> str:
        """The ``delete`` command (``path``)."""
        return self._run("delete", command)

    def rename(self, command: Any) -> str:
        """The ``rename`` command (``old_path``, ``new_path``)."""
        return self._run("rename", command)

    def clear_all_memory(self) -> str:
        return self._clear()

    clear_all_memory.__doc__ = _CLEAR_DOC


class MemorydAsyncMemoryTool(_Memoryd, _AsyncBase):  # type: ignore[misc,valid-type]
    """``MemorydMemoryTool`` for the SDK's async tool runner (``AsyncAnthropic``): the same
    arguments and answers, each command run in a worker thread (the client is synchronous)."""

    async def view(self, command: Any) -> str:
        return await _in_thread(self._run, "view", command)

    async def create(self, command: Any) -> str:
        return await _in_thread(self._run, "create", command)

    async def str_replace(self, command: Any) -> str:
        return await _in_thread(self._run, "str_replace", command)

    async def insert(self, command: Any) -> str:
        return await _in_thread(self._run, "insert", command)

    async def delete(self, command: Any) -> str:
        return await _in_thread(self._run, "delete", command)

    async def rename(self, command: Any) -> str:
        return await _in_thread(self._run, "rename", command)

    async def clear_all_memory(self) -> str:
        return await _in_thread(self._clear)

    clear_all_memory.__doc__ = _CLEAR_DOC


async def _in_thread(fn: Callable[..., str], *args: Any) -> str:
    # asyncio.to_thread is Python 3.9+; run_in_executor is what it does.
    return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args))


def _raise_for_model(error: MemorydError) -> NoReturn:
    """Raises what gives the model ``error.content`` verbatim: the SDK's ``ToolError`` (with the
    typed error as its cause), or without the SDK the typed error itself."""
    if _SdkToolError is None:
        raise error
    raise _SdkToolError(error.content) from error


def _field(command: Any, name: str) -> Any:
    """A field of a command: an attribute of the SDK's command model, or a key of a mapping."""
    if isinstance(command, Mapping):
        return command.get(name)
    return getattr(command, name, None)
