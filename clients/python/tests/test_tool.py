"""MemorydMemoryTool, the memory tool for the Anthropic SDK's tool runner, against a live memoryd.

The SDK is not installable here, so the tests put a stand-in `anthropic` package on sys.path
(fake_sdk/anthropic, written from the SDK's source under its documented names) and check the
adapter against it: that it subclasses BetaAbstractMemoryTool (an ABC: a missing or misnamed
method would make it abstract, and instantiating it fail), that the SDK's dispatch
(`call` -> `execute` -> `view`, `create`, ...) reaches memoryd, and that errors are the SDK's
ToolError carrying memoryd's exact text. `run_tool_uses` does what the SDK's tool runner does
with each tool_use block (src/anthropic/lib/tools/_beta_runner.py). Without the SDK the tool is
a plain class with the same methods. memoryd itself is live, not faked."""

import asyncio
import importlib
import subprocess
import sys

import pytest

from conftest import HERE, PACKAGE_DIR

FAKE_SDK = HERE / "fake_sdk"


def purge():
    for name in [m for m in sys.modules if m == "anthropic" or m.startswith("anthropic.") or m == "memoryd_client.tool"]:
        del sys.modules[name]
    if hasattr(sys.modules.get("memoryd_client"), "tool"):
        delattr(sys.modules["memoryd_client"], "tool")


@pytest.fixture
def with_sdk():
    """memoryd_client.tool imported with the stand-in SDK on sys.path."""
    purge()
    sys.path.insert(0, str(FAKE_SDK))
    try:
        yield importlib.import_module("memoryd_client.tool")
    finally:
        sys.path.remove(str(FAKE_SDK))
        purge()


class _NoSdk:
    """An import hook that makes `anthropic` unimportable, as on a machine without the SDK."""

    def find_spec(self, name, path=None, target=None):
        if name == "anthropic" or name.startswith("anthropic."):
            raise ImportError(f"No module named {name!r}")
        return None


@pytest.fixture
def without_sdk():
    purge()
    hook = _NoSdk()
    sys.meta_path.insert(0, hook)
    try:
        yield importlib.import_module("memoryd_client.tool")
    finally:
        sys.meta_path.remove(hook)
        purge()


async def run_tool_uses_async(tools, blocks):
    """The same, as the SDK's async runner does it (``await tool.call(...)``)."""
    from anthropic.lib.tools import ToolError

    by_name = {t.name: t for t in tools}
    results = []
    for block in blocks:
        try:
            content = await by_name[block["name"]].call(block["input"])
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": content})
        except ToolError as exc:
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": exc.content, "is_error": True})
    return results


def run_tool_uses(tools, blocks):
    """The SDK tool runner's handling of tool_use blocks (_beta_runner.py): call the tool by name;
    its result is the tool_result's content; a ToolError's `content` is sent with is_error, any
    other exception as its repr."""
    from anthropic.lib.tools import ToolError

    by_name = {t.name: t for t in tools}
    results = []
    for block in blocks:
        tool = by_name[block["name"]]
        try:
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": tool.call(block["input"])})
        except ToolError as exc:
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": exc.content, "is_error": True})
        except Exception as exc:  # noqa: BLE001 - what the runner does
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": repr(exc), "is_error": True})
    return results


SESSION = [
    ({"command": "view", "path": "/memories"},
     "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories",
     False),
    ({"command": "create", "path": "/memories/prefs.md", "file_text": "- indent: spaces\n"},
     "File created successfully at: /memories/prefs.md", False),
    ({"command": "create", "path": "/memories/prefs.md", "file_text": "again"},
     "Error: File /memories/prefs.md already exists", True),
    ({"command": "str_replace", "path": "/memories/prefs.md", "old_str": "spaces", "new_str": "tabs"},
     "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\t- indent: tabs\n     2\t",
     False),
    ({"command": "str_replace", "path": "/memories/prefs.md", "old_str": "spaces", "new_str": "tabs"},
     "No replacement was performed, old_str `spaces` did not appear verbatim in /memories/prefs.md.", True),
    ({"command": "insert", "path": "/memories/prefs.md", "insert_line": 1, "insert_text": "- width: 100\n"},
     "The file /memories/prefs.md has been edited.", False),
    ({"command": "insert", "path": "/memories/prefs.md", "insert_line": 9, "insert_text": "x"},
     "Error: Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 3]", True),
    ({"command": "view", "path": "/memories/prefs.md", "view_range": [2, -1]},
     "Here's the content of /memories/prefs.md with line numbers:\n     2\t- width: 100\n     3\t", False),
    ({"command": "rename", "old_path": "/memories/prefs.md", "new_path": "/memories/user/prefs.md"},
     "Successfully renamed /memories/prefs.md to /memories/user/prefs.md", False),
    ({"command": "view", "path": "/memories/prefs.md"},
     "The path /memories/prefs.md does not exist. Please provide a valid path.", True),
    ({"command": "delete", "path": "/memories/user"}, "Successfully deleted /memories/user", False),
    ({"command": "delete", "path": "/memories/../etc"}, "Error: Path /memories/../etc would escape /memories directory", True),
]


def session():
    """SESSION's tool_use blocks, and the tool_result blocks the runner must send back."""
    blocks = [{"type": "tool_use", "id": f"toolu_{i:02}", "name": "memory", "input": c} for i, (c, _, _) in enumerate(SESSION)]
    expected = []
    for i, (_, text, is_error) in enumerate(SESSION):
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i:02}", "content": text}
        if is_error:
            result["is_error"] = True
        expected.append(result)
    return blocks, expected


# Each command reached memoryd once: the change feed has the five writes of SESSION that succeeded.
SESSION_CHANGES = ["create /memories/prefs.md", "str_replace /memories/prefs.md", "insert /memories/prefs.md",
                   "rename /memories/prefs.md /memories/user/prefs.md", "delete /memories/user"]


def test_with_the_sdk_the_tool_is_a_beta_abstract_memory_tool(with_sdk, url, tenant, raw):
    from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError

    assert with_sdk.SDK_AVAILABLE is True
    tool = with_sdk.MemorydMemoryTool(url, tenant=tenant)
    assert isinstance(tool, BetaAbstractMemoryTool)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.name == "memory"
    cached = with_sdk.MemorydMemoryTool(url, tenant=tenant, cache_control={"type": "ephemeral"})
    assert cached.to_dict() == {"type": "memory_20250818", "name": "memory", "cache_control": {"type": "ephemeral"}}
    blocks, expected = session()
    assert run_tool_uses([tool], blocks) == expected
    assert raw.changes() == SESSION_CHANGES
    # The ToolError carries the typed error as its cause.
    with pytest.raises(ToolError) as info:
        tool.call({"command": "view", "path": "/memories/missing.txt"})
    from memoryd_client import NotFoundError

    assert isinstance(info.value.__cause__, NotFoundError)


def test_with_the_sdk_the_async_tool_is_a_beta_async_abstract_memory_tool(with_sdk, url, tenant, raw):
    from anthropic.lib.tools import BetaAsyncAbstractMemoryTool

    tool = with_sdk.MemorydAsyncMemoryTool(url, tenant=tenant)
    assert isinstance(tool, BetaAsyncAbstractMemoryTool)
    blocks, expected = session()
    assert asyncio.run(run_tool_uses_async([tool], blocks)) == expected
    assert raw.changes() == SESSION_CHANGES
    raw.post({"command": "create", "path": "/memories/x.md", "file_text": "x"})
    assert asyncio.run(tool.clear_all_memory()) == "All memory cleared"


def test_with_the_sdk_a_transport_failure_reaches_the_model_as_a_tool_error(with_sdk, tenant):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    tool = with_sdk.MemorydMemoryTool(f"http://127.0.0.1:{port}", tenant=tenant, retries=0)
    assert run_tool_uses([tool], [{"type": "tool_use", "id": "toolu_01", "name": "memory",
                                   "input": {"command": "create", "path": "/memories/a.md", "file_text": "a"}}]) == [
        {"type": "tool_result", "tool_use_id": "toolu_01", "is_error": True,
         "content": "Error: Could not connect to the memory service: connection refused; the create command was not applied. Try again later."}
    ]


def test_clear_all_memory_deletes_every_entry_in_one_write(with_sdk, url, tenant, seeded, raw):
    tool = with_sdk.MemorydMemoryTool(url, tenant=tenant)
    for i in range(3):
        seeded.post({"command": "create", "path": f"/memories/d{i}/e/f/g.md", "file_text": "deep"})
    raw.post({"command": "create", "path": "/memories/.hidden/x.md", "file_text": "12345"})
    before = raw.changes()
    assert tool.clear_all_memory() == "All memory cleared"
    assert seeded.view("/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories"
    )
    # Entries a listing leaves out go too, and the whole clear is one change of the feed.
    assert raw.view("/memories/.hidden/x.md") == "The path /memories/.hidden/x.md does not exist. Please provide a valid path."
    assert raw.changes() == before + ["clear /memories"]


def test_without_the_sdk_the_tool_is_a_plain_class_with_the_same_methods(without_sdk, url, tenant):
    from memoryd_client import MemorydClient, NotFoundError

    assert without_sdk.SDK_AVAILABLE is False
    assert "anthropic" not in sys.modules
    tool = without_sdk.MemorydMemoryTool(client=MemorydClient(url, tenant=tenant))
    assert [c.__name__ for c in type(tool).__mro__] == [
        "MemorydMemoryTool", "_Memoryd", "_PlainMemoryTool", "_PlainDefinition", "object"]
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.call({"command": "create", "path": "/memories/a.md", "file_text": "a\n"}) == (
        "File created successfully at: /memories/a.md")
    assert tool.execute({"command": "view", "path": "/memories/a.md"}) == (
        "Here's the content of /memories/a.md with line numbers:\n     1\ta\n     2\t")
    with pytest.raises(NotFoundError) as info:
        tool.call({"command": "delete", "path": "/memories/b.md"})
    assert info.value.content == "Error: The path /memories/b.md does not exist"
    assert tool.clear_all_memory() == "All memory cleared"
    async_tool = without_sdk.MemorydAsyncMemoryTool(url, tenant=tenant)
    assert asyncio.run(async_tool.call({"command": "create", "path": "/memories/b.md", "file_text": "b"})) == (
        "File created successfully at: /memories/b.md")
    with pytest.raises(NotFoundError):
        asyncio.run(async_tool.execute({"command": "view", "path": "/memories/c.md"}))
    assert "anthropic" not in sys.modules


def test_importing_the_package_does_not_import_the_sdk():
    code = (
        "import sys, memoryd_client\n"
        "print('anthropic' in sys.modules)\n"
        "memoryd_client.MemorydMemoryTool\n"
        "import anthropic.lib.tools as t\n"
        "print('anthropic' in sys.modules, issubclass(memoryd_client.MemorydMemoryTool, t.BetaAbstractMemoryTool))\n"
    )
    env = {"PYTHONPATH": f"{FAKE_SDK}:{PACKAGE_DIR / 'src'}", "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out == "False\nTrue True\n"
