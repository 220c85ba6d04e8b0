"""The project's own promises, outside the package: `make help` lists every target, the
dev-dependency lists agree, the library never imports its command line, and the `>>>`
examples of the README and of the user documentation (docs/) run as written."""

from __future__ import annotations

import ast
import doctest
import re
import shutil
import subprocess

import pytest
from repo import tomllib

# -- the build ---------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_help_lists_every_target(repo_root):
    makefile = (repo_root / "Makefile").read_text()
    phony = set()
    for line in makefile.splitlines():
        if line.startswith(".PHONY:"):
            phony.update(line.split(":", 1)[1].split())
    phony.discard("FORCE")
    r = subprocess.run(["make", "-s", "help"], cwd=repo_root, capture_output=True, timeout=60)
    assert r.returncode == 0
    listed = {line.split()[0] for line in r.stdout.decode().splitlines()[1:] if line.strip()}
    assert phony == listed
    for target in ("help", "venv", "build", "run", "test", "test-rust", "test-python", "bench", "lint", "clean"):
        assert target in listed


def test_dev_requirements_match_pyproject(repo_root):
    project = tomllib.loads((repo_root / "pyproject.toml").read_text())
    dev = project["project"]["optional-dependencies"]["dev"]
    lines = (repo_root / "requirements-dev.txt").read_text().splitlines()
    # A line may carry pip's per-requirement options (py3amf is built from source with
    # its Cython extension): compare the requirement before them.
    reqs = [ln.split(" --")[0].strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    assert reqs[0].startswith("maturin")
    assert sorted(reqs[1:]) == sorted(dev)
    assert project["project"]["scripts"]["amfkit"] == "amfkit.cli.main:main"
    assert project["project"]["dependencies"] == []


def test_the_bench_distribution_is_released_with_amfkit_and_installed_by_make(repo_root):
    """bench/ (amfkit-bench) has the version of amfkit (the Cargo workspace's) and pins
    amfkit to it, amfkit's `bench` extra pins it back; `make venv` installs it without its
    dependencies, so every one of them (amfkit's extras' too) must be in the dev list."""
    version = tomllib.loads((repo_root / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    amfkit_project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    bench_project = tomllib.loads((repo_root / "bench" / "pyproject.toml").read_text())["project"]
    extras, dev = amfkit_project["optional-dependencies"], amfkit_project["optional-dependencies"]["dev"]
    assert bench_project["name"] == "amfkit-bench" and bench_project["version"] == version
    assert extras["bench"] == [f"amfkit-bench=={version}"]
    (amfkit_req,) = [r for r in bench_project["dependencies"] if re.match(r"amfkit\b(?!-)", r)]
    wanted = re.fullmatch(r"amfkit\[([a-z,]+)\]==(\S+)", amfkit_req)
    assert wanted and wanted.group(2) == version, amfkit_req
    needed = [r for r in bench_project["dependencies"] if r != amfkit_req]
    for extra in wanted.group(1).split(","):
        needed += extras[extra]
    assert sorted(set(needed) - set(dev)) == []
    makefile = (repo_root / "Makefile").read_text()
    assert "pip install --quiet --no-deps -e ./bench" in makefile


# -- the package's shape ---------------------------------------------------------------


def _imported(path, package):
    """The absolute names of the modules a file imports (`from .. import x` gives
    `amfkit.x` as well as `amfkit`)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + (node.module.split(".") if node.module else []))
            names.append(module)
            names += [f"{module}.{a.name}" for a in node.names]
    return names


def test_the_library_never_imports_the_command_line(repo_root):
    """Library code (python/amfkit outside cli/) never imports `amfkit.cli`: what the
    library and the command line both print with (the value tree, the JSON mapping, the
    packet printer, the value readings) lives in the library, and the CLI imports it."""
    root = repo_root / "python" / "amfkit"
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "cli" or rel.parts == ("__main__.py",):
            continue
        package = ["amfkit", *rel.parts[:-1]]
        found += [f"{rel}: {name}" for name in _imported(path, package) if name == "amfkit.cli" or name.startswith("amfkit.cli.")]
    assert found == []


# -- the documentation's examples -----------------------------------------------------


def test_readme_examples_run(repo_root):
    """The README's `>>>` examples are executed, so the front page never lies."""
    text = (repo_root / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```pycon\n(.*?)```", text, flags=re.S)
    assert blocks, "the README has no pycon example"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, {}, f"README.md[{i}]", "README.md", 0)
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0


@pytest.mark.parametrize("name", ["cli.md", "data.md", "sol.md"])
def test_docs_examples_run(repo_root, name):
    """The `>>>` examples of the user documentation moved out of module docstrings are
    executed, one page as one session (a later example uses an earlier one's names)."""
    text = (repo_root / "docs" / name).read_text(encoding="utf-8")
    blocks = re.findall(r"```pycon\n(.*?)```", text, flags=re.S)
    assert blocks, f"docs/{name} has no pycon example"
    test = doctest.DocTestParser().get_doctest("".join(blocks), {}, f"docs/{name}", f"docs/{name}", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted > 0


def test_rpc_doc_examples_run(repo_root):
    """docs/rpc.md's `>>>` examples (JSON-RPC and XML-RPC) are executed."""
    text = (repo_root / "docs" / "rpc.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```pycon\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 2
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner()
    for i, block in enumerate(blocks):
        runner.run(parser.get_doctest(block, {}, f"rpc.md[{i}]", "docs/rpc.md", 0))
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted > 0
