"""pytest fixtures of memoryd_client's tests: the live memoryd they run against, a fresh tenant per
test, raw HTTP to check what memoryd holds (without the client), and local proxies.

Run by tests/clients/python.test.mjs, which starts memoryd (on SQLite, or on PostgreSQL as
pg/clients/python) and sets MEMORYD_URL and MEMORYD_TENANT (the prefix of the tests' tenants):

    MEMORYD_URL=http://127.0.0.1:8080 MEMORYD_TENANT=py /usr/bin/python3 -m pytest clients/python/tests -q
"""

import http.client
import json
import os
import pathlib
import sys
import uuid
from urllib.parse import quote, urlsplit

import pytest

HERE = pathlib.Path(__file__).resolve().parent
PACKAGE_DIR = HERE.parent
sys.path.insert(0, str(PACKAGE_DIR / "src"))
sys.path.insert(0, str(HERE))

MEMORYD_URL = os.environ.get("MEMORYD_URL", "")
TENANT_PREFIX = os.environ.get("MEMORYD_TENANT", "py")

# The files the openapi.yaml examples start from (its "The examples" table), created in this order.
SEED = [
    ("/memories/notes.txt", "Meeting notes:\n- Discussed project timeline\n- Next steps defined\n"),
    ("/memories/projects/roadmap.md", "# Roadmap\n- v1: ship the memory tool\n- v2: sync across devices\n"),
    ("/memories/projects/alpha/spec.md", "# Alpha spec\nGoal: remember user preferences.\n"),
]


def pytest_configure(config):
    if not MEMORYD_URL:
        raise pytest.UsageError("set MEMORYD_URL to a running memoryd (tests/clients/python.test.mjs does)")


@pytest.fixture
def url():
    return MEMORYD_URL


@pytest.fixture
def tenant():
    """A tenant of its own for each test (memoryd needs no setup for a new one)."""
    return f"{TENANT_PREFIX}-{uuid.uuid4().hex[:16]}"


@pytest.fixture
def client(tenant):
    from memoryd_client import MemorydClient

    return MemorydClient(MEMORYD_URL, tenant=tenant)


class Raw:
    """memoryd over plain http.client, to check what it holds without the client under test."""

    def __init__(self, tenant):
        self.tenant = tenant

    def request(self, method, target, body=None, headers=None):
        parts = urlsplit(MEMORYD_URL)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            h = {"X-Tenant-ID": self.tenant, **(headers or {})}
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, parts.path.rstrip("/") + target, body=data, headers=h)
            r = conn.getresponse()
            text = r.read().decode()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, text
        finally:
            conn.close()

    def post(self, command, headers=None):
        status, headers, text = self.request("POST", "/memory", command, headers)
        return status, json.loads(text)

    def view(self, path):
        """The content memoryd answers to a view of `path`."""
        return self.post({"command": "view", "path": path})[1]["content"]

    def changes(self):
        """The tenant's change feed as `command path...` strings."""
        status, _, text = self.request("GET", "/v1/changes?after=0")
        assert status == 200, text
        return [f"{c['command']} {' '.join(c['paths'])}" for c in json.loads(text)["changes"]]

    def history(self, path):
        status, _, text = self.request("GET", "/v1/history?path=" + quote(path, safe="/"))
        assert status == 200, text
        return json.loads(text)

    def seed(self):
        for path, text in SEED:
            status, body = self.post({"command": "create", "path": path, "file_text": text})
            assert status == 200, body


@pytest.fixture
def raw(tenant):
    return Raw(tenant)


@pytest.fixture
def seeded(raw):
    """The tenant holds the three files of openapi.yaml's examples."""
    raw.seed()
    return raw


@pytest.fixture
def proxy():
    """Starts local proxies in front of memoryd (see proxy.py); all are stopped after the test."""
    from proxy import Proxy

    started = []

    def start(plan):
        p = Proxy(MEMORYD_URL, plan)
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()
