"""The six memory commands against a live memoryd: the exact texts they return, the typed errors
they raise for error results (the text the model must see kept on the exception), entity tags
and preconditions, and whole tool_use blocks. The expected texts are those of openapi.yaml's
examples and docs/behaviour.md, section 4, for the files of conftest.SEED."""

import pytest

from memoryd_client import (
    BadRequestError,
    ConflictError,
    MemorydClient,
    MemorydError,
    MemorydStatusError,
    NotFoundError,
    PreconditionFailedError,
    UnprocessableEntityError,
)

LISTING = (
    "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n"
    "174B\t/memories\n65B\t/memories/notes.txt\n109B\t/memories/projects/\n46B\t/memories/projects/alpha/\n"
    "63B\t/memories/projects/roadmap.md"
)
NOTES = (
    "Here's the content of /memories/notes.txt with line numbers:\n"
    "     1\tMeeting notes:\n     2\t- Discussed project timeline\n     3\t- Next steps defined\n     4\t"
)
NOTES_ETAG = '"sha256-cf7994b933f5c0ddc530e8e92fc646a2cc93a00ea326a772c9cf61a5f66ba4a4"'


def test_view_directory_and_file(client, seeded):
    assert client.view("/memories") == LISTING
    assert client.view("/memories/notes.txt") == NOTES
    assert client.view("/memories/notes.txt", view_range=[2, -1]) == (
        "Here's the content of /memories/notes.txt with line numbers:\n"
        "     2\t- Discussed project timeline\n     3\t- Next steps defined\n     4\t"
    )
    assert client.view("/memories/notes.txt", (1, 1)) == (
        "Here's the content of /memories/notes.txt with line numbers:\n     1\tMeeting notes:"
    )


def test_create(client, raw):
    assert client.create("/memories/todo/today.md", "- Call Ana\n- Review the memory PR\n") == (
        "File created successfully at: /memories/todo/today.md"
    )
    assert raw.view("/memories/todo/today.md") == (
        "Here's the content of /memories/todo/today.md with line numbers:\n"
        "     1\t- Call Ana\n     2\t- Review the memory PR\n     3\t"
    )


def test_str_replace(client, seeded):
    assert client.str_replace("/memories/notes.txt", "Next steps defined", "Next steps: ship v1") == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\tMeeting notes:\n     2\t- Discussed project timeline\n     3\t- Next steps: ship v1\n     4\t"
    )


def test_insert(client, seeded):
    assert client.insert("/memories/notes.txt", 1, "- Attendees: Ana, Bo\n") == "The file /memories/notes.txt has been edited."
    assert seeded.view("/memories/notes.txt") == (
        "Here's the content of /memories/notes.txt with line numbers:\n     1\tMeeting notes:\n"
        "     2\t- Attendees: Ana, Bo\n     3\t- Discussed project timeline\n     4\t- Next steps defined\n     5\t"
    )


def test_delete(client, seeded):
    assert client.delete("/memories/projects") == "Successfully deleted /memories/projects"
    assert seeded.view("/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n"
        "65B\t/memories\n65B\t/memories/notes.txt"
    )


def test_rename(client, seeded):
    assert client.rename("/memories/notes.txt", "/memories/archive/2025/notes.txt") == (
        "Successfully renamed /memories/notes.txt to /memories/archive/2025/notes.txt"
    )
    assert seeded.view("/memories/archive/2025/notes.txt") == NOTES.replace(
        "/memories/notes.txt", "/memories/archive/2025/notes.txt"
    )


# (call, error class, status, the exact tool_result text)
ERRORS = [
    (lambda c: c.view("/memories/missing.txt"), NotFoundError, 404,
     "The path /memories/missing.txt does not exist. Please provide a valid path."),
    (lambda c: c.create("/memories/notes.txt", "new text"), ConflictError, 409,
     "Error: File /memories/notes.txt already exists"),
    (lambda c: c.create("/memories/notes.txt/today.md", "x"), ConflictError, 409,
     "Error: Cannot create /memories/notes.txt/today.md: /memories/notes.txt is a file, not a directory"),
    (lambda c: c.create("/memories/../etc/passwd", "x"), BadRequestError, 400,
     "Error: Path /memories/../etc/passwd would escape /memories directory"),
    (lambda c: c.view("/etc/passwd"), BadRequestError, 400,
     "Error: Path must start with /memories, got: /etc/passwd"),
    (lambda c: c.str_replace("/memories/missing.txt", "a", "b"), NotFoundError, 404,
     "Error: The path /memories/missing.txt does not exist. Please provide a valid path."),
    (lambda c: c.str_replace("/memories/notes.txt", "Budget", "Costs"), ConflictError, 409,
     "No replacement was performed, old_str `Budget` did not appear verbatim in /memories/notes.txt."),
    (lambda c: c.str_replace("/memories/projects/roadmap.md", "- v", "* v"), ConflictError, 409,
     "No replacement was performed. Multiple occurrences of old_str `- v` in lines: 2, 3. Please ensure it is unique"),
    (lambda c: c.str_replace("/memories/notes.txt", "", "x"), BadRequestError, 400,
     "Error: Parameter `old_str` must not be empty"),
    (lambda c: c.insert("/memories/notes.txt", 5, "x"), UnprocessableEntityError, 422,
     "Error: Invalid `insert_line` parameter: 5. It should be within the range of lines of the file: [0, 4]"),
    (lambda c: c.insert("/memories/missing.txt", 0, "x"), NotFoundError, 404,
     "Error: The path /memories/missing.txt does not exist"),
    (lambda c: c.delete("/memories"), BadRequestError, 400,
     "Error: Cannot delete the /memories directory itself"),
    (lambda c: c.delete("/memories/missing.txt"), NotFoundError, 404,
     "Error: The path /memories/missing.txt does not exist"),
    (lambda c: c.rename("/memories/notes.txt", "/memories/projects/roadmap.md"), ConflictError, 409,
     "Error: The destination /memories/projects/roadmap.md already exists"),
    (lambda c: c.rename("/memories/missing.txt", "/memories/found.txt"), NotFoundError, 404,
     "Error: The path /memories/missing.txt does not exist"),
    (lambda c: c.rename("/memories/projects", "/memories/projects/old"), ConflictError, 409,
     "Error: Cannot rename /memories/projects to /memories/projects/old: a directory cannot be moved inside itself"),
]


@pytest.mark.parametrize("call, cls, status, text", ERRORS, ids=[e[3][:60] for e in ERRORS])
def test_error_results_raise_typed_errors_with_the_exact_text(client, seeded, call, cls, status, text):
    with pytest.raises(cls) as info:
        call(client)
    e = info.value
    assert isinstance(e, MemorydStatusError) and isinstance(e, MemorydError)
    assert e.content == text
    assert str(e) == text
    assert e.status == status
    assert e.replayed is False
    # Nothing changed: the tree is as seeded.
    assert seeded.view("/memories") == LISTING


def test_execute_returns_error_results_and_the_entity_tag(client, seeded):
    r = client.execute({"command": "view", "path": "/memories/notes.txt"})
    assert (r.content, r.is_error, r.status, r.replayed, r.etag) == (NOTES, False, 200, False, NOTES_ETAG)
    r = client.execute({"command": "view", "path": "/memories/missing.txt"})
    assert (r.content, r.is_error, r.status, r.etag) == (
        "The path /memories/missing.txt does not exist. Please provide a valid path.", True, 404, None)


def test_if_match_and_if_none_match(client, seeded):
    stale = client.execute({"command": "view", "path": "/memories/notes.txt"}).etag
    r = client.execute({"command": "str_replace", "path": "/memories/notes.txt", "old_str": "defined", "new_str": "agreed"},
                       if_match=stale)
    assert (r.is_error, r.status) == (False, 200)
    assert r.etag != stale and r.etag.startswith('"sha256-')
    with pytest.raises(PreconditionFailedError) as info:
        client.insert("/memories/notes.txt", 0, "# Monday\n", if_match=stale)
    assert info.value.content == "The file /memories/notes.txt changed since you viewed it; view it again before editing."
    assert info.value.status == 412
    with pytest.raises(PreconditionFailedError) as info:
        client.create("/memories/notes.txt", "new text", if_none_match="*")
    assert info.value.content == (
        "The file /memories/notes.txt already exists (the request asked for If-None-Match: *); view it before changing it."
    )
    assert client.insert("/memories/notes.txt", 0, "# Monday\n", if_match=[stale, r.etag]) == (
        "The file /memories/notes.txt has been edited."
    )


def test_run_tool_use_returns_the_tool_result_block(client, seeded):
    block = client.run_tool_use({"type": "tool_use", "id": "toolu_01A2B3C4D5E6F7G8H9J0K1L2", "name": "memory",
                                 "input": {"command": "view", "path": "/memories/projects/roadmap.md", "view_range": [1, 2]}})
    assert block == {
        "type": "tool_result",
        "tool_use_id": "toolu_01A2B3C4D5E6F7G8H9J0K1L2",
        "content": "Here's the content of /memories/projects/roadmap.md with line numbers:\n     1\t# Roadmap\n     2\t- v1: ship the memory tool",
        "is_error": False,
    }
    block = client.run_tool_use({"type": "tool_use", "id": "toolu_01M2N3P4Q5R6S7T8U9V0W1X2", "name": "memory",
                                 "input": {"command": "delete", "path": "/memories/missing.txt"}})
    assert block == {
        "type": "tool_result",
        "tool_use_id": "toolu_01M2N3P4Q5R6S7T8U9V0W1X2",
        "content": "Error: The path /memories/missing.txt does not exist",
        "is_error": True,
    }


def test_tenants_are_apart(url, seeded, tenant):
    other = MemorydClient(url, tenant=tenant + "-other")
    assert other.view("/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories"
    )


def test_the_actor_is_recorded(url, tenant, raw):
    MemorydClient(url, tenant=tenant, actor="agent-7").create("/memories/a.md", "a\n")
    assert raw.history("/memories/a.md")["versions"][0]["actor"] == "agent-7"


@pytest.mark.parametrize("kwargs, message", [
    ({"base_url": "ftp://x"}, "MemorydClient: base_url must be an http:// or https:// URL, got 'ftp://x'"),
    ({"tenant": "team/b"}, "MemorydClient: tenant must be 1-128 characters of A-Z a-z 0-9 . _ -"),
    ({"api_key": "a\nb"}, "MemorydClient: api_key must be a non-empty string without line breaks"),
    ({"timeout": 0}, "MemorydClient: timeout must be a positive number of seconds"),
    ({"retries": -1}, "MemorydClient: retries must be a whole number >= 0"),
    ({"headers": {"idempotency-key": "k"}},
     "MemorydClient: headers must not set Idempotency-Key (one key per write: see the idempotency_key argument of the write methods)"),
])
def test_invalid_options(url, kwargs, message):
    args = {"base_url": url, **kwargs}
    with pytest.raises(ValueError) as info:
        MemorydClient(**args)
    assert str(info.value) == message


def test_clear_all_memory_removes_every_file_in_one_write_that_a_restore_undoes(client, seeded):
    answer = client.clear_all_memory()
    assert answer == {"path": "/memories", "removed": 3, "restore_before": answer["restore_before"],
                      "seq": 4, "versions_recorded": 3}
    assert seeded.view("/memories").endswith("\n0B\t/memories")
    restored = client.restore("/memories", before=answer["restore_before"])
    assert (restored["restored"], restored["removed"]) == (3, 0)
    assert seeded.changes()[-2:] == ["clear /memories", "restore /memories"]
    # Nothing left to clear: an answer all the same.
    client.clear_all_memory()
    again = client.clear_all_memory()
    assert (again["removed"], again["restore_before"], again["versions_recorded"]) == (0, None, 0)
