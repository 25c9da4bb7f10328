"""The /v1 API through the client against a live memoryd: search, history, versions, restore,
redact and the change feed, with openapi.yaml's examples (its seeded files, then its writes 4
to 7) and their exact answers (times excepted: they differ from run to run), and the typed
errors of its error answers."""

import re

import pytest

from memoryd_client import BadRequestError, ConflictError, NotFoundError

TIME_RE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


@pytest.fixture
def examples(seeded):
    """openapi.yaml's writes 4 to 7 after its three seeded files (changes 1 to 7, versions 1 to 8)."""
    for actor, command in [
        ("agent-1", {"command": "str_replace", "path": "/memories/notes.txt", "old_str": "Next steps defined",
                     "new_str": "Next steps: ship v1"}),
        ("agent-1", {"command": "insert", "path": "/memories/notes.txt", "insert_line": 1,
                     "insert_text": "- Attendees: Ana, Bo\n"}),
        ("agent-2", {"command": "delete", "path": "/memories/projects"}),
        (None, {"command": "create", "path": "/memories/todo.md", "file_text": "- Call Ana\n"}),
    ]:
        status, body = seeded.post(command, {"X-Memory-Actor": actor} if actor else {})
        assert status == 200, body
    return seeded


def untimed(value):
    """`value` with each `time` checked for its form and removed."""
    if isinstance(value, dict):
        if "time" in value:
            assert TIME_RE.fullmatch(value["time"]), value["time"]
        return {k: untimed(v) for k, v in value.items() if k != "time"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def test_search(client, examples):
    assert client.search("ship") == {
        "query": "ship", "path": "/memories",
        "hits": [{"path": "/memories/notes.txt", "matching_lines": 1, "lines": [{"line": 4, "text": "- Next steps: ship v1"}]}],
        "next_cursor": None,
    }
    assert client.search('"call ana"') == {
        "query": '"call ana"', "path": "/memories",
        "hits": [{"path": "/memories/todo.md", "matching_lines": 1, "lines": [{"line": 1, "text": "- Call Ana"}]}],
        "next_cursor": None,
    }
    assert client.search("invoice", path="/memories") == {"query": "invoice", "path": "/memories", "hits": [], "next_cursor": None}
    assert client.search_text("ship") == (
        "Files in /memories that match ship (best first, 1 to 1):\n/memories/notes.txt\n     4\t- Next steps: ship v1\n"
    )
    with pytest.raises(BadRequestError) as info:
        client.search("ship", limit=101)
    assert (info.value.content, info.value.status, info.value.command) == (
        "Parameter `limit` must be an integer from 1 to 100", 400, "search")


def test_history_and_versions(client, examples):
    assert untimed(client.history("/memories/notes.txt")) == {
        "path": "/memories/notes.txt",
        "versions": [
            {"version": 5, "path": "/memories/notes.txt", "command": "insert", "actor": "agent-1", "existed": True,
             "size": 66, "sha256": "93d0320a8fe5d40afdcc963cd6a4adb22931263b21cf58d866981c282c64b4e6", "redacted": False},
            {"version": 4, "path": "/memories/notes.txt", "command": "str_replace", "actor": "agent-1", "existed": True,
             "size": 65, "sha256": "cf7994b933f5c0ddc530e8e92fc646a2cc93a00ea326a772c9cf61a5f66ba4a4", "redacted": False},
            {"version": 1, "path": "/memories/notes.txt", "command": "create", "actor": None, "existed": False,
             "size": None, "sha256": None, "redacted": False},
        ],
        "next_cursor": None,
    }
    page = client.history("/memories/notes.txt", limit=2)
    assert [v["version"] for v in page["versions"]] == [5, 4] and page["next_cursor"] == "4"
    assert [v["version"] for v in client.history("/memories/notes.txt", limit=2, cursor=4)["versions"]] == [1]
    assert untimed(client.version(4)) == {
        "version": 4, "path": "/memories/notes.txt", "command": "str_replace", "actor": "agent-1", "existed": True,
        "size": 65, "sha256": "cf7994b933f5c0ddc530e8e92fc646a2cc93a00ea326a772c9cf61a5f66ba4a4", "redacted": False,
        "content": "Meeting notes:\n- Discussed project timeline\n- Next steps defined\n",
    }
    with pytest.raises(NotFoundError) as info:
        client.history("/memories/missing.txt")
    assert info.value.content == "The path /memories/missing.txt has no history and does not exist"
    with pytest.raises(NotFoundError) as info:
        client.version(99)
    assert info.value.content == "Version 99 is not kept (there is no such version of this tenant, or retention has pruned it)"


def test_restore(client, examples):
    assert client.restore("/memories/notes.txt", version=4) == {
        "path": "/memories/notes.txt", "version": 4, "restored": 1, "removed": 0, "unchanged": 0, "seq": 8,
        "versions_recorded": 1}
    assert examples.view("/memories/notes.txt") == (
        "Here's the content of /memories/notes.txt with line numbers:\n"
        "     1\tMeeting notes:\n     2\t- Discussed project timeline\n     3\t- Next steps defined\n     4\t"
    )
    with pytest.raises(ConflictError) as info:
        client.restore("/memories/todo.md", version=4)
    assert (info.value.content, info.value.status) == ("Version 4 is of /memories/notes.txt, not of /memories/todo.md", 409)
    with pytest.raises(BadRequestError) as info:
        client.restore("/memories/notes.txt", version=4, before=4)
    assert info.value.content == (
        "Give either `version` (a positive integer: put that version of the file back) or `before` (a positive "
        "integer: put every file at or below the path back as it stood just before that version), not both"
    )


def test_restore_before(client, examples):
    assert client.restore("/memories", before=4) == {
        "path": "/memories", "before": 4, "restored": 3, "removed": 1, "unchanged": 0, "seq": 8, "versions_recorded": 4}
    assert examples.view("/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n"
        "174B\t/memories\n65B\t/memories/notes.txt\n109B\t/memories/projects/\n46B\t/memories/projects/alpha/\n"
        "63B\t/memories/projects/roadmap.md"
    )


def test_redact(client, examples):
    assert client.redact("/memories/notes.txt", 4) == {
        "path": "/memories/notes.txt", "version": 4, "redacted": True, "seq": 8, "versions_recorded": 0}
    v = client.version(4)
    assert (v["redacted"], v["content"], v["sha256"]) == (True, None, None)


def test_changes(client, examples):
    assert untimed(client.changes(after=3, limit=2)) == {
        "changes": [
            {"seq": 4, "version": 4, "versions": 1, "history_bytes": 65, "command": "str_replace",
             "paths": ["/memories/notes.txt"], "actor": "agent-1"},
            {"seq": 5, "version": 5, "versions": 1, "history_bytes": 66, "command": "insert",
             "paths": ["/memories/notes.txt"], "actor": "agent-1"},
        ],
        "last_seq": 7,
        "next_after": 5,
    }
    assert client.changes(after=7, wait=1) == {"changes": [], "last_seq": 7, "next_after": 7}
    with pytest.raises(BadRequestError) as info:
        client.changes(wait=61)
    assert info.value.content == "Parameter `wait` must be an integer from 0 to 60"


def test_follow_changes(client, examples):
    feed = client.follow_changes(after=5, wait=5)
    assert [(c["seq"], c["command"]) for c in (next(feed), next(feed))] == [(6, "delete"), (7, "create")]
    client.create("/memories/later.md", "x")
    change = next(feed)  # the long poll that was waiting, or the next one, gets it
    assert (change["seq"], change["command"], change["paths"]) == (8, "create", ["/memories/later.md"])
