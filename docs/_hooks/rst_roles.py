"""mkdocs hook: docstrings name objects with Sphinx roles (:class:`~procflow.errors.X`); show them as code.

mkdocstrings renders Google-style docstrings as Markdown, where a role stays as literal text
(":class:" before the code). This drops the role and, as Sphinx does for a leading ``~``, the path
before the last dot.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj|const):<code>(~?)([^<]*)</code>")


def _code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"<code>{target.rsplit('.', 1)[-1] if short else target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    """Rewrite each role in the page's HTML into plain inline code."""
    return _ROLE.sub(_code, html)
