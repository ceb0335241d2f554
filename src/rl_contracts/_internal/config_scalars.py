"""Strict scalar types of the config models (SPEC §1.1): :data:`ConfigBool` takes only ``bool``,
:data:`ConfigInt` only a Python ``int``, :data:`ConfigFloat` a finite ``int`` or ``float`` (never a bool),
:data:`ConfigStr` only ``str``; lists a ``list`` or ``tuple``.  Range constraints sit inside the strict validators
so that pydantic writes them into the JSON Schema.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from ..checks import real_or_none
from .messages import type_name

__all__ = [
    "AtLeastOne",
    "ConfigBool",
    "ConfigFloat",
    "ConfigInt",
    "ConfigStr",
    "EnvValue",
    "Fraction",
    "KvCacheDtype",
    "LogprobsMode",
    "NonNegative",
    "NonNegativeFloat",
    "NullAsAuto",
    "NullAsFalse",
    "Port",
    "Positive",
    "PositiveFloat",
    "Ratio",
    "StrList",
    "StrictStr",
    "TokenIdList",
]


def _strict_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected a bool (true or false), got {type_name(value)}")
    return value


def _python_int(value: object) -> object:
    """A Python ``int`` (never a bool); pydantic's ``int`` then reads an ``int`` subclass (an ``IntEnum``) as its
    plain ``int``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(
            f"expected an int (not bool, float, str or another integer type), got {type_name(value)}"
        )
    return value


def _finite_float(value: object) -> float:
    number = real_or_none(value) if isinstance(value, int | float) else None
    if number is None:
        raise ValueError(f"expected a number (int or float, not bool or str), got {type_name(value)}")
    if not math.isfinite(number):
        shown = "an int too large for a float" if isinstance(value, int) else repr(number)
        raise ValueError(f"expected a finite number, got {shown}")
    return number


def _strict_str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a str, got {type_name(value)}")
    return value


def _strict_list(value: object) -> list[object]:
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected a list, got {type_name(value)}")
    return list(value)


def _env_value(value: object) -> str:
    if isinstance(value, bool) or value is None or not isinstance(value, str | int | float):
        raise ValueError(
            f"expected a str, int or float environment value (not bool or null), got {type_name(value)}; "
            "quote the value if you mean the string"
        )
    return str(value)


def _null_as(default: object) -> Callable[[object], object]:
    """A before-validator reading ``null`` as the field's ``default`` ("Req. no", SPEC §1.1)."""
    return lambda value: default if value is None else value


class _Before:
    """A before-validator, as ``pydantic.BeforeValidator`` without its per-use ``inspect.signature`` of the
    function (it takes no ``info``): the config models use these hundreds of times, and that inspection was a
    third of building their validators."""

    __slots__ = ("function",)

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_before_validator_function(self.function, handler(source))


_PYTHON_INT = _Before(_python_int)
_AS_FLOAT = _Before(_finite_float)

StrictStr = _Before(_strict_str)
"""The before-validator of :data:`ConfigStr`, for ``Literal`` string fields (``Annotated[Literal[...], StrictStr]``)."""

ConfigBool = Annotated[bool, _Before(_strict_bool)]
"""A config ``bool``: accepts only ``True``/``False``."""
ConfigInt = Annotated[int, _PYTHON_INT]
"""A config int: a Python ``int`` only, never a bool or another ``__index__`` type (stricter than
:data:`~rl_contracts.checks.ContractInt`)."""
ConfigFloat = Annotated[float, _AS_FLOAT]
"""A config float: accepts a finite ``int`` or ``float``, never a bool or str."""
ConfigStr = Annotated[str, StrictStr]
"""A config ``str``: accepts only ``str``."""

AtLeastOne = Annotated[int, Field(ge=1), _PYTHON_INT]
"""A config int ≥ 1."""
Port = Annotated[int, Field(ge=1, le=65535), _PYTHON_INT]
"""A TCP port, 1–65535."""
Positive = Annotated[int, Field(gt=0), _PYTHON_INT]
"""A config int > 0."""
NonNegative = Annotated[int, Field(ge=0), _PYTHON_INT]
"""A config int ≥ 0."""
NonNegativeFloat = Annotated[float, Field(ge=0), _AS_FLOAT]
"""A config float ≥ 0."""
PositiveFloat = Annotated[float, Field(gt=0), _AS_FLOAT]
"""A config float > 0."""
Ratio = Annotated[float, Field(gt=0, lt=1), _AS_FLOAT]
"""A config float in the open interval (0, 1)."""
Fraction = Annotated[float, Field(gt=0, le=1), _AS_FLOAT]
"""A config float in (0, 1]."""
StrList = Annotated[list[ConfigStr], _Before(_strict_list)]
"""A list (or tuple) of config strs."""
TokenIdList = Annotated[list[NonNegative], _Before(_strict_list)]
"""A list (or tuple) of token ids, each ≥ 0."""
EnvValue = Annotated[str, BeforeValidator(_env_value, json_schema_input_type=str | int | float)]
"""An environment variable value: a str, or an int/float converted with ``str()``; never a bool or null."""

KvCacheDtype = Literal["auto", "fp8", "fp8_e4m3", "fp8_ds_mla"]
"""The KV-cache dtypes ``vllm_cfg.kv_cache_dtype`` accepts."""
LogprobsMode = Literal["processed_logprobs", "raw_logprobs"]
"""The log-probability modes ``vllm_cfg.logprobs_mode`` accepts."""

NullAsAuto = BeforeValidator(_null_as("auto"), json_schema_input_type=KvCacheDtype | None)
"""Before-validator of ``kv_cache_dtype``: ``null`` reads as its default ``"auto"``."""
NullAsFalse = BeforeValidator(_null_as(False), json_schema_input_type=bool | None)
"""Before-validator of ``refit_with_reload_api``: ``null`` reads as its default ``False``."""
