"""The ```python examples of clients/python/README.md, run as they are written against the live
memoryd, each in a fresh interpreter with a tenant of its own (MEMORYD_URL and MEMORYD_TENANT in
its environment, which the examples read), its output compared with the ```text block that
follows it. A block marked `<!-- not run: ... -->` (the tool runner's, which needs the SDK and
an API key) is compiled, and the names it imports from memoryd_client must exist."""

import ast
import os
import re
import subprocess
import sys
import uuid

import pytest

import memoryd_client
from conftest import MEMORYD_URL, PACKAGE_DIR, TENANT_PREFIX

README = (PACKAGE_DIR / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.M | re.S)


def blocks():
    """(language, code, whether it is marked not run, the text block after it or None)."""
    found = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(README)]
    out = []
    for i, (lang, code, start, end) in enumerate(found):
        if lang != "python":
            continue
        before = README[:start].rstrip().rsplit("\n", 1)[-1]
        following = found[i + 1] if i + 1 < len(found) else None
        expected = None
        if following and following[0] == "text" and README[end:following[2]].strip() in ("", "prints", "prints:"):
            expected = following[1]
        out.append((code, before.startswith("<!-- not run:"), expected))
    return out


BLOCKS = blocks()


def test_the_readme_has_examples_to_run():
    assert sum(1 for _, skip, _ in BLOCKS if not skip) >= 3
    assert sum(1 for _, skip, _ in BLOCKS if skip) == 1


@pytest.mark.parametrize("code, skip, expected", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example(code, skip, expected):
    if skip:
        tree = ast.parse(code)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "memoryd_client":
                for alias in node.names:
                    assert hasattr(memoryd_client, alias.name), alias.name
        return
    assert expected is not None, "an example that is run is followed by a ```text block of what it prints"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(MEMORYD_URL=MEMORYD_URL, MEMORYD_TENANT=f"{TENANT_PREFIX}-{uuid.uuid4().hex[:16]}",
               PYTHONPATH=str(PACKAGE_DIR / "src"), PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected
