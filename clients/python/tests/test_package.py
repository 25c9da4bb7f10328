"""The package itself: it imports nothing outside the standard library (but the optional SDK, in
tool.py, inside `try`), declares no dependency, and installs offline with Debian's python3 and
python3-setuptools into a fresh virtual environment
(`pip install --no-build-isolation --no-index`), where it works against the live memoryd."""

import ast
import os
import shutil
import subprocess
import sys
import tomllib

from conftest import MEMORYD_URL, PACKAGE_DIR

SRC = PACKAGE_DIR / "src" / "memoryd_client"


def imports(tree):
    """(top-level module, the node) of every absolute import of a module's syntax tree."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module.split(".")[0], node


def test_no_third_party_imports():
    files = sorted(SRC.glob("*.py"))
    assert [f.name for f in files] == ["__init__.py", "_version.py", "client.py", "errors.py", "tool.py"]
    sdk = []
    for f in files:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        guarded = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id == "ImportError" for h in node.handlers
            ):
                guarded.update(id(n) for n in ast.walk(node))
        for module, node in imports(tree):
            if module == "anthropic":
                assert id(node) in guarded, f"{f.name}: an import of the SDK outside try/except ImportError"
                sdk.append(f.name)
            else:
                assert module in sys.stdlib_module_names, f"{f.name} imports {module}, not in the standard library"
    assert sorted(set(sdk)) == ["tool.py"]


def test_pyproject_declares_no_dependency():
    project = tomllib.loads((PACKAGE_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "memoryd-client"
    assert project["dependencies"] == []
    assert project["optional-dependencies"] == {"anthropic": ["anthropic>=0.84"]}


def test_pip_installs_it_offline_into_a_venv(tmp_path, tenant):
    # A copy: pip builds in the source tree, which must stay clean.
    source = tmp_path / "memoryd-client"
    shutil.copytree(PACKAGE_DIR, source, ignore=shutil.ignore_patterns("tests", "__pycache__", "*.egg-info", "build"))
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, env=env)
    python = str(venv / "bin" / "python")
    r = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-cache-dir", str(source)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([python, "-m", "pip", "show", "memoryd-client"], capture_output=True, text=True, env=env, check=True)
    fields = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    assert (fields["Name"], fields["Version"], fields["Requires"], fields["License"]) == ("memoryd-client", "0.1.0", "", "MIT")
    code = (
        "import os, sys, memoryd_client\n"
        "assert memoryd_client.__file__.startswith(sys.prefix), memoryd_client.__file__\n"
        "c = memoryd_client.MemorydClient(os.environ['MEMORYD_URL'], tenant=os.environ['MEMORYD_TENANT'])\n"
        "print(c.create('/memories/installed.md', 'yes'))\n"
        "print(memoryd_client.__version__)\n"
    )
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env={**env, "MEMORYD_URL": MEMORYD_URL, "MEMORYD_TENANT": tenant})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "File created successfully at: /memories/installed.md\n0.1.0\n"
