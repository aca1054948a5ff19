"""Rendering of signals: ``<tag attr="value">contents</tag>`` with XML escaping and name checks."""

from __future__ import annotations

import re
from collections.abc import Mapping
from xml.sax.saxutils import escape, quoteattr

from procflow.errors import ConfigurationError

__all__ = ["render_signal", "validate_xml_name"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")


def validate_xml_name(name: str, *, what: str) -> str:
    """Return ``name`` if it is a valid XML tag/attribute name, else raise ``ConfigurationError`` (a
    ``ValueError``) saying why."""
    if not _NAME.match(name) or name.lower().startswith("xml"):
        raise ConfigurationError(
            f"invalid signal {what} {name!r}: use letters, digits, '_', '-' or '.', starting with a letter "
            "or '_' (and not starting with 'xml'), e.g. 'system-reminder'"
        )
    return name


def render_signal(contents: str, *, tag_name: str, attributes: Mapping[str, object]) -> str:
    """Render a signal as the model sees it, escaping contents and attribute values."""
    validate_xml_name(tag_name, what="tag name")
    attrs = "".join(
        f" {validate_xml_name(str(k), what='attribute name')}={quoteattr(str(v))}"
        for k, v in attributes.items()
    )
    return f"<{tag_name}{attrs}>{escape(contents)}</{tag_name}>"
