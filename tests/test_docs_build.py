"""The documentation site builds offline in strict mode, and its API reference covers every public name."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"

# Runs mkdocs with every way out of this machine closed: a build that reaches for the network fails.
_OFFLINE_BUILD = """
import socket
import sys


def _refuse(*args, **kwargs):
    raise OSError("the documentation build tried to reach the network")


socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse

from mkdocs.__main__ import cli

cli(["build", "--strict", "--config-file", sys.argv[1], "--site-dir", sys.argv[2]], standalone_mode=True)
"""

_DIRECTIVE = re.compile(r"^::: ([\w.]+)", re.MULTILINE)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once for this module by `mkdocs build --strict`, with the network refused."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-c", _OFFLINE_BUILD, str(ROOT / "mkdocs.yml"), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def _reference_pages() -> dict[str, Path]:
    """Each reference page by the package its first ``:::`` block documents."""
    pages: dict[str, Path] = {}
    for page in sorted(REFERENCE.glob("*.md")):
        found = _DIRECTIVE.search(page.read_text(encoding="utf-8"))
        if found is not None:
            pages[found.group(1)] = page
    return pages


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_site_builds_offline_in_strict_mode(site: Path) -> None:
    """Every page of the nav is built, and no page loads a script or stylesheet from elsewhere."""
    for page in ("index", "quickstart", "architecture", "reference/index"):
        assert (site / f"{page}.html").is_file(), page
    remote = re.compile(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", re.IGNORECASE)
    for html in site.rglob("*.html"):
        assert not remote.search(html.read_text(encoding="utf-8")), f"{html.name} loads a remote asset"


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("package", sorted(_reference_pages()))
def test_each_reference_page_documents_every_name_its_package_exports(site: Path, package: str) -> None:
    """Each public name in the package's ``__all__`` has an entry (a heading anchor) on its page."""
    page = _reference_pages()[package]
    html = (site / "reference" / f"{page.stem}.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="([\w.]+)"', html))
    module = importlib.import_module(package)
    missing = [
        name
        for name in getattr(module, "__all__", [])
        if not name.startswith("_")
        and f"{package}.{name}" not in anchors
        and not any(a.startswith(f"{package}.") and a.endswith(f".{name}") for a in anchors)
    ]
    assert not missing, f"{page.name} has no entry for {missing}: give each a docstring"
