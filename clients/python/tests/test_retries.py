"""Retries: a write whose answer is lost is sent again under the same Idempotency-Key and applied
once; Retry-After is honoured (up to max_retry_delay) on 503 and 429; what is not retried, and
the errors when the retries run out. A local proxy (proxy.py) between the client and the live
memoryd makes each failure at an exact point; what memoryd holds (the file, the change feed) is
read from memoryd itself."""

import json
import re
import socket
import time

import pytest

from memoryd_client import (
    MemorydClient,
    MemorydTransportError,
    RateLimitError,
    ServiceUnavailableError,
    UnprocessableEntityError,
)

FILE = "/memories/todo.md"
KEY_RE = re.compile(r"mdc-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
ONCE = f"Here's the content of {FILE} with line numbers:\n     1\ttop\n     2\tone\n     3\ttwo\n     4\t"
OVERLOADED = json.dumps({"type": "tool_result",
                         "content": "Error: memoryd is overloaded; the command was not applied. Retry shortly.",
                         "is_error": True})
JSON = {"Content-Type": "application/json"}


def seed(raw):
    status, body = raw.post({"command": "create", "path": FILE, "file_text": "one\ntwo\n"})
    assert status == 200, body


def events_of(events):
    return [(e.command, e.attempt, e.reason, e.status, e.delay) for e in events]


def test_a_write_whose_answer_is_lost_is_retried_with_its_key_and_applied_once(proxy, raw, tenant):
    seed(raw)
    p = proxy(lambda n: "drop" if n == 0 else "pass")
    events = []
    c = MemorydClient(p.url, tenant=tenant, retry_delay=0, on_retry=events.append)
    r = c.execute({"command": "insert", "path": FILE, "insert_line": 0, "insert_text": "top\n"})
    assert (r.content, r.is_error, r.status, r.replayed) == (f"The file {FILE} has been edited.", False, 200, True)
    # Both attempts carried the same key, made by the client, and the very same body.
    keys = p.keys()
    assert len(keys) == 2 and keys[0] == keys[1] and KEY_RE.fullmatch(keys[0])
    assert p.requests[0][4] == p.requests[1][4]
    # memoryd applied the first and answered the second from the key.
    assert [a[1].get("idempotent-replayed") for a in p.upstream] == [None, "true"]
    assert events_of(events) == [("insert", 1, "connection_lost", None, 0.0)]
    assert events[0].idempotency_key == keys[0]
    # Applied once: one inserted line, one change-feed entry.
    assert raw.view(FILE) == ONCE
    assert raw.changes() == [f"create {FILE}", f"insert {FILE}"]


def test_the_six_methods_retry_the_same_way(proxy, raw, tenant):
    seed(raw)
    p = proxy(lambda n: "drop" if n == 0 else "pass")
    c = MemorydClient(p.url, tenant=tenant, retry_delay=0)
    assert c.insert(FILE, 0, "top\n") == f"The file {FILE} has been edited."
    assert raw.view(FILE) == ONCE
    assert len(p.requests) == 2


def test_each_write_gets_a_key_of_its_own_and_a_view_none(proxy, raw, tenant):
    p = proxy(lambda n: "pass")
    c = MemorydClient(p.url, tenant=tenant)
    c.create("/memories/a.md", "a")
    c.create("/memories/b.md", "b")
    c.view("/memories")
    keys = p.keys()
    assert KEY_RE.fullmatch(keys[0]) and KEY_RE.fullmatch(keys[1]) and keys[0] != keys[1]
    assert keys[2] is None


def test_without_keys_a_write_that_may_have_been_applied_is_not_sent_again(proxy, raw, tenant):
    seed(raw)
    p = proxy(lambda n: "drop")
    c = MemorydClient(p.url, tenant=tenant, retry_delay=0, idempotency_keys=False)
    with pytest.raises(MemorydTransportError) as info:
        c.insert(FILE, 0, "top\n")
    e = info.value
    assert e.content == (
        "Error: The connection to the memory service failed (connection closed by the server) before it answered the "
        f"insert command. It is unknown whether the command was applied: view {FILE} to check before retrying."
    )
    assert (e.kind, e.outcome_unknown, e.attempts, e.idempotency_key, e.command) == (
        "connection_lost", True, 1, None, "insert")
    assert p.keys() == [None]
    assert raw.view(FILE) == ONCE  # it had been applied


def test_an_unknown_outcome_is_settled_later_with_the_key(proxy, raw, tenant, url):
    seed(raw)
    p = proxy(lambda n: "drop")
    c = MemorydClient(p.url, tenant=tenant, retry_delay=0)
    with pytest.raises(MemorydTransportError) as info:
        c.insert(FILE, 0, "top\n")
    e = info.value
    assert e.content == (
        "Error: The connection to the memory service failed (connection closed by the server) before it answered the "
        f"insert command (tried 3 times). It is unknown whether the command was applied: view {FILE} to check before retrying."
    )
    assert (e.kind, e.outcome_unknown, e.attempts) == ("connection_lost", True, 3)
    assert KEY_RE.fullmatch(e.idempotency_key) and p.keys() == [e.idempotency_key] * 3
    direct = MemorydClient(url, tenant=tenant)
    r = direct.execute({"command": "insert", "path": FILE, "insert_line": 0, "insert_text": "top\n"},
                       idempotency_key=e.idempotency_key)
    assert (r.content, r.replayed) == (f"The file {FILE} has been edited.", True)
    assert raw.view(FILE) == ONCE
    assert raw.changes() == [f"create {FILE}", f"insert {FILE}"]


def test_retry_after_of_a_503_is_honoured(proxy, raw, tenant):
    p = proxy(lambda n: (503, {**JSON, "Retry-After": "1"}, OVERLOADED) if n == 0 else "pass")
    events = []
    c = MemorydClient(p.url, tenant=tenant, on_retry=events.append)
    assert c.create(FILE, "one\ntwo\n") == f"File created successfully at: {FILE}"
    assert events_of(events) == [("create", 1, "unavailable", 503, 1.0)]
    assert p.requests[1][0] - p.requests[0][0] >= 1.0
    assert p.keys()[0] == p.keys()[1]
    assert raw.changes() == [f"create {FILE}"]


def test_retry_after_is_capped_by_max_retry_delay(proxy, raw, tenant):
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 3600))
    answers = {0: (429, {"Content-Type": "text/html", "Retry-After": "30"}, "<html>429 Too Many Requests</html>"),
               1: (503, {**JSON, "Retry-After": date}, OVERLOADED)}
    p = proxy(lambda n: answers.get(n, "pass"))
    events = []
    c = MemorydClient(p.url, tenant=tenant, max_retry_delay=0.25, on_retry=events.append)
    assert c.view("/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories"
    )
    assert events_of(events) == [("view", 1, "rate_limited", 429, 0.25), ("view", 2, "unavailable", 503, 0.25)]


def test_a_503_every_time_raises_memoryds_text_when_the_retries_run_out(proxy, tenant):
    p = proxy(lambda n: (503, {**JSON, "Retry-After": "0"}, OVERLOADED))
    c = MemorydClient(p.url, tenant=tenant, retries=1)
    with pytest.raises(ServiceUnavailableError) as info:
        c.create(FILE, "x")
    e = info.value
    assert (e.content, e.status, e.retry_after) == (
        "Error: memoryd is overloaded; the command was not applied. Retry shortly.", 503, 0.0)
    assert len(p.requests) == 2


def test_a_429_page_every_time(proxy, tenant):
    p = proxy(lambda n: (429, {"Content-Type": "application/json", "Retry-After": "0"},
                         '{"error":"Too many failed authentication attempts from your address (10 within 60 seconds); nothing was done. Retry in a minute (Retry-After tells the seconds)."}'))
    c = MemorydClient(p.url, tenant=tenant, retries=1)
    with pytest.raises(RateLimitError) as info:
        c.history("/memories/a.md")
    assert info.value.content == (
        "Too many failed authentication attempts from your address (10 within 60 seconds); nothing was done. "
        "Retry in a minute (Retry-After tells the seconds)."
    )
    assert (info.value.status, info.value.attempts, len(p.requests)) == (429, 2, 2)


def test_a_view_is_retried_after_a_timeout(proxy, seeded, tenant):
    p = proxy(lambda n: "hang" if n == 0 else "pass")
    events = []
    c = MemorydClient(p.url, tenant=tenant, timeout=0.5, retry_delay=0, on_retry=events.append)
    assert c.view("/memories/notes.txt").startswith("Here's the content of /memories/notes.txt with line numbers:\n")
    assert events_of(events) == [("view", 1, "timeout", None, 0.0)]


def test_a_gateway_page_is_retried_for_a_view_then_reported(proxy, tenant):
    p = proxy(lambda n: (502, {"Content-Type": "text/html"}, "<html>bad gateway</html>"))
    c = MemorydClient(p.url, tenant=tenant, retries=1, retry_delay=0)
    with pytest.raises(MemorydTransportError) as info:
        c.view("/memories")
    e = info.value
    assert e.content == (
        "Error: The memory service answered the view command with HTTP 502 Bad Gateway, which is not a memoryd answer "
        "(text/html: <html>bad gateway</html>) (tried 2 times). Try again later."
    )
    assert (e.kind, e.status, e.attempts, e.outcome_unknown) == ("unexpected_response", 502, 2, False)


def test_a_proxy_page_that_is_not_memoryds_answer_is_not_retried(proxy, tenant):
    p = proxy(lambda n: (401, {"Content-Type": "text/html"}, "<html>401 Authorization Required</html>"))
    c = MemorydClient(p.url, tenant=tenant)
    with pytest.raises(MemorydTransportError) as info:
        c.create(FILE, "x")
    assert info.value.content == (
        "Error: The memory service answered the create command with HTTP 401 Unauthorized, which is not a memoryd answer "
        "(text/html: <html>401 Authorization Required</html>)."
    )
    assert len(p.requests) == 1


def test_a_refused_connection_is_retried_and_reported_as_not_applied(tenant):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    events = []
    c = MemorydClient(f"http://127.0.0.1:{port}", tenant=tenant, retries=1, retry_delay=0, on_retry=events.append)
    with pytest.raises(MemorydTransportError) as info:
        c.create(FILE, "x")
    e = info.value
    assert e.content == (
        "Error: Could not connect to the memory service: connection refused (tried 2 times); "
        "the create command was not applied. Try again later."
    )
    assert (e.kind, e.outcome_unknown, e.attempts) == ("connection_refused", False, 2)
    assert events_of(events) == [("create", 1, "connection_refused", None, 0.0)]


def test_a_key_used_for_another_request_is_memoryds_422_not_retried(client, raw):
    events = []
    c = MemorydClient(client.base_url, tenant=raw.tenant, on_retry=events.append)
    c.create(FILE, "- Call Ana\n", idempotency_key="0b6f2c1e-retry-demo")
    with pytest.raises(UnprocessableEntityError) as info:
        c.create(FILE, "- Call Bo\n", idempotency_key="0b6f2c1e-retry-demo")
    assert info.value.content == (
        "Error: This Idempotency-Key was already used for another request (a different body, path or precondition); "
        "a new request needs a new key."
    )
    assert events == []
    # The same request with the key is answered again, not applied again.
    r = c.execute({"command": "create", "path": FILE, "file_text": "- Call Ana\n"}, idempotency_key="0b6f2c1e-retry-demo")
    assert (r.content, r.replayed) == (f"File created successfully at: {FILE}", True)
    assert raw.changes() == [f"create {FILE}"]


def test_v1_reads_and_restore_are_retried(proxy, seeded, tenant):
    seeded.post({"command": "str_replace", "path": "/memories/notes.txt", "old_str": "defined", "new_str": "agreed"})
    unavailable = (503, {**JSON, "Retry-After": "0"},
                   '{"error":"The memory store is busy; the command was not applied. Try again shortly."}')
    p = proxy(lambda n: {0: unavailable, 2: "drop"}.get(n, "pass"))
    c = MemorydClient(p.url, tenant=tenant, retry_delay=0)
    assert [v["version"] for v in c.history("/memories/notes.txt")["versions"]] == [4, 1]
    restored = c.restore("/memories/notes.txt", version=4)
    assert {k: restored[k] for k in ("path", "version", "restored", "removed", "unchanged", "versions_recorded")} == {
        "path": "/memories/notes.txt", "version": 4, "restored": 1, "removed": 0, "unchanged": 0, "versions_recorded": 1}
    keys = p.keys()
    assert keys[:2] == [None, None] and keys[2] == keys[3] and KEY_RE.fullmatch(keys[2])
    assert [a[1].get("idempotent-replayed") for a in p.upstream] == [None, None, "true"]
    assert seeded.changes()[-1] == "restore /memories/notes.txt"
    assert len(seeded.changes()) == 5  # 3 creates, the str_replace, one restore
