"""The base classes of every config model: extra keys kept (or forbidden), both spellings of ``_`` keys accepted.

Keys spelled with a leading ``_`` are exposed as attributes without it; both spellings are accepted on input (not
both at once), and ``model_dump(by_alias=True, exclude_unset=True)`` writes the ``_`` spelling.  Models are
validated at construction; attribute assignment is not re-validated (build a new model instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from ..rules.loading import V3
from .violations import Violation, raise_violations

__all__ = ["ConfigModel", "ForbidExtra", "known_keys"]


class ConfigModel(BaseModel):
    """Common config of every model of :mod:`rl_contracts.config`: extra keys kept, both ``_`` spellings accepted."""

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        protected_namespaces=(),
        use_attribute_docstrings=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _one_spelling_per_key(cls, data: Any) -> Any:
        """Reject an input that gives both spellings of an underscore key (the model could keep only one)."""
        if isinstance(data, Mapping):
            violations = [
                Violation(
                    V3,
                    (name,),
                    f"both {field.alias!r} and {name!r} are set; give the key once "
                    f"(the canonical spelling is {field.alias!r})",
                    data[name],
                    error_type="config_rule_duplicate_key",
                )
                for name, field in cls.model_fields.items()
                if field.alias and field.alias != name and field.alias in data and name in data
            ]
            raise_violations(cls.__name__, violations, data)
        return data


class ForbidExtra(ConfigModel):
    """A config model that rejects unknown keys."""

    model_config = ConfigDict(extra="forbid")


def known_keys(model_cls: type[BaseModel]) -> dict[str, str]:
    """Every accepted key spelling of ``model_cls`` (field names and aliases) mapped to its attribute name."""
    names: dict[str, str] = {}
    for name, field in model_cls.model_fields.items():
        names[name] = name
        if field.alias:
            names[field.alias] = name
    return names
