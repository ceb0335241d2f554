"""The docstring parser of the API reference: Google-style sections (``Raises:``, ``Returns:``) read as fields.

The library's docstrings are reStructuredText with Google-style sections.  Read as plain reStructuredText, a
``Raises:`` block is a definition list whose entries of one and of several lines break it; this parser turns the
sections into reStructuredText fields first (Sphinx's napoleon converter) and escapes the bars of ``|l - g|``
(an absolute value here, a substitution in reStructuredText) and the underscore of ``val_`` (a prefix here, a
link in reStructuredText), then parses the result.
sphinx-autodoc2 uses it through ``autodoc2_docstring_parser_regexes`` in ``conf.py``.
"""

from __future__ import annotations

import re

from docutils import nodes
from docutils.parsers.rst import Parser as RstParser
from sphinx.ext.napoleon import Config
from sphinx.ext.napoleon.docstring import GoogleDocstring

_LITERAL = re.compile(r"(``.+?``)", re.S)

_REFERENCE = re.compile(r"(?<=[A-Za-z0-9])_(?=\W|$)")


def _escape_markup(text: str) -> str:
    """Outside literals, ``|l - g|`` is an absolute value, not a substitution, and ``val_`` a prefix, not a link."""
    parts = _LITERAL.split(text)
    return "".join(
        part if index % 2 else _REFERENCE.sub(r"\\_", part.replace("|", "\\|"))
        for index, part in enumerate(parts)
    )


_CONFIG = Config(napoleon_use_param=True, napoleon_use_rtype=False, napoleon_use_ivar=True)


class Parser(RstParser):  # type: ignore[misc]
    """reStructuredText after napoleon's Google-style conversion."""

    def parse(self, inputstring: str, document: nodes.document) -> None:
        super().parse(_escape_markup(str(GoogleDocstring(inputstring, _CONFIG))), document)
