"""The stand-in's `anthropic.lib.tools`: BetaAbstractMemoryTool and ToolError as the SDK defines them.

Written from the SDK's source (github.com/anthropics/anthropic-sdk-python 0.121.0):
`src/anthropic/lib/tools/__init__.py` exports both names; `ToolError` is in
`_beta_functions.py` (an Exception whose `content` the tool runner sends as the tool_result,
with is_error True); `BetaAbstractMemoryTool` is in `_beta_builtin_memory_tool.py`: an ABC
whose `__init__` takes only the keyword `cache_control`, whose `to_dict()` is the tool
definition, whose `call(input)` turns the tool_use input into a command model and calls
`execute(command)`, which dispatches on `command.command` to the six abstract methods, and
whose `clear_all_memory()` raises NotImplementedError unless overridden;
`BetaAsyncAbstractMemoryTool` is the same with `async` methods (`call`, `execute`, the six
commands, `clear_all_memory`). The command models
(`BetaMemoryTool20250818ViewCommand`, ...) are pydantic models with the fields as attributes
and `view_range` None when absent; `_Command` below stands for them.
"""

from abc import ABC, abstractmethod
from typing import Any, Dict, Optional

__all__ = [
    "BetaAbstractMemoryTool",
    "BetaAsyncAbstractMemoryTool",
    "BetaAsyncBuiltinFunctionTool",
    "BetaBuiltinFunctionTool",
    "ToolError",
]

# The fields of each command model (src/anthropic/types/beta/beta_memory_tool_20250818_*_command.py).
_FIELDS = {
    "view": ("path", "view_range"),
    "create": ("path", "file_text"),
    "str_replace": ("path", "old_str", "new_str"),
    "insert": ("path", "insert_line", "insert_text"),
    "delete": ("path",),
    "rename": ("old_path", "new_path"),
}


class ToolError(Exception):
    """Raised by a tool: the runner sends `content` as the tool_result, with is_error True."""

    def __init__(self, content: Any) -> None:
        super().__init__(content if isinstance(content, str) else "Tool error")
        self.content = content


class BetaBuiltinFunctionTool(ABC):
    @abstractmethod
    def to_dict(self) -> Dict[str, Any]: ...

    @abstractmethod
    def call(self, input: object) -> Any: ...

    @property
    def name(self) -> str:
        return self.to_dict()["name"]


class _Command:
    """A command model: the command's fields as attributes (optional ones None when absent)."""

    def __init__(self, value: Dict[str, Any]) -> None:
        self.command = value.get("command")
        for field in _FIELDS.get(self.command, ()):
            setattr(self, field, value.get(field))


class _Definition:
    """`__init__` and `to_dict` of both memory tool classes (the SDK repeats them in each)."""

    def __init__(self, *, cache_control: Optional[Dict[str, Any]] = None) -> None:
        super().__init__()
        self._cache_control = cache_control

    def to_dict(self) -> Dict[str, Any]:
        param: Dict[str, Any] = {"type": "memory_20250818", "name": "memory"}
        if self._cache_control is not None:
            param["cache_control"] = self._cache_control
        return param


class BetaAbstractMemoryTool(_Definition, BetaBuiltinFunctionTool):
    def call(self, input: object) -> Any:
        return self.execute(_Command(dict(input)))  # type: ignore[call-overload]

    def execute(self, command: Any) -> Any:
        if command.command == "view":
            return self.view(command)
        elif command.command == "create":
            return self.create(command)
        elif command.command == "str_replace":
            return self.str_replace(command)
        elif command.command == "insert":
            return self.insert(command)
        elif command.command == "delete":
            return self.delete(command)
        elif command.command == "rename":
            return self.rename(command)
        else:
            raise NotImplementedError(f"Unknown command: {command.command}")

    @abstractmethod
    def view(self, command: Any) -> Any: ...

    @abstractmethod
    def create(self, command: Any) -> Any: ...

    @abstractmethod
    def str_replace(self, command: Any) -> Any: ...

    @abstractmethod
    def insert(self, command: Any) -> Any: ...

    @abstractmethod
    def delete(self, command: Any) -> Any: ...

    @abstractmethod
    def rename(self, command: Any) -> Any: ...

    def clear_all_memory(self) -> Any:
        raise NotImplementedError("clear_all_memory not implemented")


class BetaAsyncBuiltinFunctionTool(ABC):
    @abstractmethod
    def to_dict(self) -> Dict[str, Any]: ...

    @abstractmethod
    async def call(self, input: object) -> Any: ...

    @property
    def name(self) -> str:
        return self.to_dict()["name"]


class BetaAsyncAbstractMemoryTool(_Definition, BetaAsyncBuiltinFunctionTool):
    async def call(self, input: object) -> Any:
        return await self.execute(_Command(dict(input)))  # type: ignore[call-overload]

    async def execute(self, command: Any) -> Any:
        if command.command == "view":
            return await self.view(command)
        elif command.command == "create":
            return await self.create(command)
        elif command.command == "str_replace":
            return await self.str_replace(command)
        elif command.command == "insert":
            return await self.insert(command)
        elif command.command == "delete":
            return await self.delete(command)
        elif command.command == "rename":
            return await self.rename(command)
        else:
            raise NotImplementedError(f"Unknown command: {command.command}")

    @abstractmethod
    async def view(self, command: Any) -> Any: ...

    @abstractmethod
    async def create(self, command: Any) -> Any: ...

    @abstractmethod
    async def str_replace(self, command: Any) -> Any: ...

    @abstractmethod
    async def insert(self, command: Any) -> Any: ...

    @abstractmethod
    async def delete(self, command: Any) -> Any: ...

    @abstractmethod
    async def rename(self, command: Any) -> Any: ...

    async def clear_all_memory(self) -> Any:
        raise NotImplementedError("clear_all_memory not implemented")
