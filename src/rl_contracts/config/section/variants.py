"""The building blocks every whole-recipe section model shares: :class:`SectionModel`, keys that may be omitted but
never null, enabled/disabled variants of a section, and open mappings.

- :class:`SectionModel` is :class:`~rl_contracts._internal.config_base.ConfigModel` (extra keys kept, to be
  classified) with :attr:`SectionModel.open_keys`: ``True`` where the section is an open mapping whose other keys
  belong to someone else (a dataset, a pass-through), so an undeclared key there is not reported as unknown.
- :data:`Omittable` ``[T]``: a key NeMo RL declares optional (``NotRequired``) but not nullable: absent is fine,
  ``null`` is an error, as NeMo RL's own validation has it.
- enabled/disabled variants (NeMo RL's ``XConfig | XConfigDisabled``) are written
  ``Annotated[Annotated[XConfig, ENABLED] | Annotated[DisabledSection, DISABLED], SWITCH]``: ``enabled`` picks the
  variant, and a missing or non-bool ``enabled`` is judged by
  the enabled variant (so its error is reported at ``enabled``).  The variant tags never reach a finding's path:
  :func:`strip_tags` removes them from a pydantic ``loc``.
"""

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Final, Literal, TypeVar

from pydantic import BeforeValidator, ConfigDict, Discriminator, Tag, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..._internal.config_base import ConfigModel
from ..._internal.config_scalars import ConfigFloat, ConfigInt, ConfigStr

__all__ = [
    "DISABLED",
    "ENABLED",
    "NEVER_NULL",
    "SWITCH",
    "DisabledSection",
    "FloatList",
    "IntList",
    "Omittable",
    "OpenMapping",
    "SectionModel",
    "StrictFalse",
    "StrictTrue",
    "chosen_by",
    "is_tag",
    "strip_tags",
    "tag",
]

_T = TypeVar("_T")


def _strict_list(value: object) -> object:
    if not isinstance(value, list | tuple):
        raise ValueError(f"expected a list, got {type(value).__name__}")
    return list(value)


def _strict_true(value: object) -> object:
    if value is not True:
        raise ValueError("expected true (a bool)")
    return value


def _strict_false(value: object) -> object:
    if value is not False:
        raise ValueError("expected false (a bool)")
    return value


class _NeverNull:
    """The marker of :data:`Omittable` fields (read by :class:`SectionModel`, one check per model)."""


NEVER_NULL: Final = _NeverNull()
Omittable = Annotated[_T | None, NEVER_NULL]
"""A key that may be omitted (NeMo RL then uses its default) but is never ``null``."""
IntList = Annotated[list[ConfigInt], BeforeValidator(_strict_list)]
"""A list (or tuple) of config ints."""
FloatList = Annotated[list[ConfigFloat], BeforeValidator(_strict_list)]
"""A list (or tuple) of config floats."""
OpenMapping = dict[ConfigStr, Any]
"""A mapping NeMo RL passes through or reads per plugin: its keys are not typed here."""
StrictTrue = Annotated[Literal[True], BeforeValidator(_strict_true)]
"""``enabled`` of an enabled variant: exactly ``true``."""
StrictFalse = Annotated[Literal[False], BeforeValidator(_strict_false)]
"""``enabled`` of a disabled variant: exactly ``false``."""


_DESCRIBE_FIELDS: Any = ConfigModel.model_config.get("json_schema_extra")


def _section_schema(schema: dict[str, Any], model_cls: type["SectionModel"]) -> None:
    """``json_schema_extra`` of every section model: the field docstrings (as every config model), and no ``null``
    (nor a ``null`` default) for an :data:`Omittable` key."""
    _DESCRIBE_FIELDS(schema, model_cls)
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for key in model_cls.never_null:
        prop = properties.get(key)
        if not isinstance(prop, dict):
            continue
        if prop.get("default", ...) is None:
            del prop["default"]
        members = prop.get("anyOf")
        if isinstance(members, list):
            kept = [member for member in members if member != {"type": "null"}]
            if len(kept) == 1 and isinstance(kept[0], dict):
                del prop["anyOf"]
                prop.update(kept[0])
            else:
                prop["anyOf"] = kept


class SectionModel(ConfigModel):
    """A section (or sub-section) of a whole recipe; extra keys are kept for classification.

    ``open_keys`` is ``True`` on models whose undeclared keys belong to someone else (a dataset's own options, a
    plugin's kwargs): those keys are neither unknown nor typos of anything.
    """

    model_config = ConfigDict(json_schema_extra=_section_schema)

    open_keys: ClassVar[bool] = False
    never_null: ClassVar[frozenset[str]] = frozenset()
    """The keys (as spelled in a recipe) of the :data:`Omittable` fields."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.never_null = frozenset(
            field.alias or name
            for name, field in cls.model_fields.items()
            if any(item is NEVER_NULL for item in field.metadata)
        )

    @model_validator(mode="before")
    @classmethod
    def _omitted_not_null(cls, data: Any) -> Any:
        """Reject ``null`` for a key NeMo RL declares optional but not nullable (NeMo RL rejects it too)."""
        if isinstance(data, Mapping) and cls.never_null:
            nulls = [key for key in cls.never_null if key in data and data[key] is None]
            if nulls:
                message = "null is not allowed here: omit the key to take NeMo RL's default"
                raise ValidationError.from_exception_data(
                    cls.__name__,
                    [
                        InitErrorDetails(
                            type=PydanticCustomError("null_not_allowed", message), loc=(key,), input=None
                        )
                        for key in sorted(nulls)
                    ],
                )
        return data


class DisabledSection(SectionModel):
    """The ``enabled: false`` variant of a section: NeMo RL reads nothing else in it, so other keys are open."""

    open_keys: ClassVar[bool] = True

    enabled: StrictFalse
    """``false``: the section is switched off and its other keys are not read."""


_TAG_OPEN, _TAG_CLOSE = "<", ">"


def tag(name: str) -> Tag:
    """The ``Tag`` of a union member named ``name`` (written ``<name>``, so that :func:`strip_tags` knows it)."""
    return Tag(f"{_TAG_OPEN}{name}{_TAG_CLOSE}")


def chosen_by(chooser: Callable[[Any], str]) -> Discriminator:
    """A callable discriminator: ``chooser`` returns the bare name of the member to validate against."""
    return Discriminator(lambda value: f"{_TAG_OPEN}{chooser(value)}{_TAG_CLOSE}")


def is_tag(part: object) -> bool:
    """Whether ``part`` of a pydantic ``loc`` is a variant tag of this package (``<enabled>``, ``<list>``, ...)."""
    return (
        isinstance(part, str) and part.startswith(_TAG_OPEN) and part.endswith(_TAG_CLOSE) and len(part) > 2
    )


def strip_tags(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """``loc`` without the variant tags that tagged unions insert."""
    return tuple(part for part in loc if not is_tag(part))


def _enabled_tag(value: Any) -> str:
    return "disabled" if isinstance(value, Mapping) and value.get("enabled") is False else "enabled"


ENABLED = tag("enabled")
"""The tag of a section's enabled variant."""
DISABLED = tag("disabled")
"""The tag of a section's disabled variant."""
SWITCH = chosen_by(_enabled_tag)
"""Picks a section's variant by its ``enabled`` key: the disabled one for ``false``, else the enabled one."""
