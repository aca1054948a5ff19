"""Every Python example in docs/ and README.md runs."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([*ROOT.joinpath("docs").rglob("*.md"), ROOT / "README.md"])
SOURCES = {page: page.read_text(encoding="utf-8") for page in PAGES}
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
async def test_doc_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's ```python blocks run in order in one namespace (top-level await allowed)."""
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}", "TMP": tmp_path}
    blocks = BLOCK.findall(SOURCES[page])
    for index, source in enumerate(blocks):
        code = compile(source, f"{page.name}[{index}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        outcome = eval(code, namespace)
        if inspect.isawaitable(outcome):
            await outcome
