"""The base classes of every config model: extra keys kept (or forbidden), both spellings of ``_`` keys accepted.

A key spelled with a leading ``_`` is an attribute without it; either spelling is accepted on input (not both),
and ``model_dump(by_alias=True, exclude_unset=True)`` writes the ``_`` one.  Assignment is not re-validated.

A field's docstring is its JSON Schema ``description``, read from the source only when a schema is generated
(pydantic's ``use_attribute_docstrings`` would cost about 80 ms at every import).  Validators are built on first
use (``defer_build``), except :class:`~rl_contracts.config.VllmConfig`'s, built at import.  The model modules do
without ``from __future__ import annotations``: pydantic would evaluate each annotation string again.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from ..config.finding import Finding
from ..config.rule import Rule, checks
from .config_absent import ABSENT
from .config_examples import generation_example
from .config_paths import keys_in

__all__ = [
    "FINDINGS",
    "V3",
    "ConfigModel",
    "ForbidExtra",
    "collected_findings",
    "duplicate_spellings",
    "known_keys",
    "raise_findings",
    "report_findings",
]

FINDINGS: Final = "rl_contracts_findings"
"""The key of a validation context whose list collects the rule findings of a section instead of raising them."""


def raise_findings(
    title: str, findings: Sequence[Finding], container: object, *, error_type: str = ""
) -> None:
    """Raise one pydantic ``ValidationError`` carrying every finding (no-op when there is none).

    Each line error has the finding's message, its ``loc`` (the path's keys in ``container``), the type
    ``error_type`` or ``config_rule_<code>`` (``..._missing`` for an absent key), and as ``input`` the value, or
    ``container`` for an absent key.
    """
    details = [
        InitErrorDetails(
            type=PydanticCustomError(error_type or _rule_error_type(finding), finding.message),
            loc=keys_in(finding.path, container),
            input=container if finding.value is ABSENT else finding.value,
        )
        for finding in findings
    ]
    if details:
        raise ValidationError.from_exception_data(title, details)


def _rule_error_type(finding: Finding) -> str:
    return f"config_rule_{finding.code.lower()}" + ("_missing" if finding.value is ABSENT else "")


def collected_findings(info: ValidationInfo) -> list[Finding] | None:
    """The list the validation context collects findings in (:data:`FINDINGS`), or ``None``: raise them."""
    collected = info.context.get(FINDINGS) if isinstance(info.context, Mapping) else None
    return collected if isinstance(collected, list) else None


def report_findings(title: str, findings: Sequence[Finding], container: object, info: ValidationInfo) -> None:
    """Add ``findings`` to the list the validation context collects them in, else raise them
    (:func:`raise_findings`)."""
    collected = collected_findings(info)
    if collected is None:
        raise_findings(title, findings, container)
    else:
        collected.extend(findings)


@functools.cache
def _attribute_docstrings(cls: type) -> Mapping[str, str]:
    """The docstrings written right under annotated attributes in the body of ``cls`` itself (as pydantic's
    ``use_attribute_docstrings`` reads them: cleaned with ``inspect.cleandoc``); empty when the source cannot be
    read or parsed."""
    try:
        lines, _ = inspect.getsourcelines(cls)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for statement, following in itertools.pairwise(body):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[statement.target.id] = inspect.cleandoc(following.value.value)
    return docs


def _field_docstring(model_cls: type[BaseModel], name: str) -> str | None:
    """The docstring of field ``name`` in the class of ``model_cls``'s MRO that declares it (whose field wins)."""
    for klass in model_cls.__mro__:
        if name in inspect.get_annotations(klass):
            return _attribute_docstrings(klass).get(name)
    return None


def _describe_fields(schema: dict[str, Any], model_cls: type[BaseModel]) -> None:
    """``json_schema_extra`` of every config model: each property whose field sets no ``description`` gets the
    docstring under the field, as ``use_attribute_docstrings`` would have given it."""
    properties = schema.get("properties") or {}
    for name, field in model_cls.model_fields.items():
        if field.description is not None:
            continue
        keys = (field.validation_alias, field.serialization_alias, field.alias, name)
        key = next((key for key in keys if isinstance(key, str) and key in properties), None)
        doc = _field_docstring(model_cls, name)
        if key is not None and doc is not None and isinstance(properties[key], dict):
            properties[key].setdefault("description", doc)


V3 = Rule(
    "V3",
    "schema-violation",
    summary="a value breaks the VllmConfig schema (type, range, forbidden key)",
    reference="vllm_worker.py and the config TypedDicts (S1-S3)",
    what_it_checks=(
        "That the generation section matches the `VllmConfig` schema: every required key present, every value "
        "of its declared type (strict: no bool for an int, no string for a number), no forbidden extra key, "
        "and no key given in both its `_key` and `key` spellings."
    ),
    why_it_matters=(
        "The reference's config is an unchecked `TypedDict`: a wrong type reaches `vllm_worker.py` or the "
        "engine arguments and fails there (S1-S3, a `TypeError`/`KeyError` after Ray and the workers "
        "started), or is silently used as is."
    ),
    example=generation_example("max_new_tokens: '512'"),
    fix="Give the value the type the issue names (here the int `512`, not the string `'512'`).",
)


@checks(V3)
def duplicate_spellings(model: type[BaseModel], data: Mapping[Any, Any]) -> list[Finding]:
    """V3 for each underscore key that ``data`` gives in both spellings (the model could keep only one), at the
    key relative to ``model``; the rest of V3 is pydantic's schema validation of the section models."""
    return [
        Finding(
            code=V3.code,
            path=name,
            value=data[name],
            message=(
                f"both {field.alias!r} and {name!r} are set; give the key once (the canonical spelling is "
                f"{field.alias!r})"
            ),
        )
        for name, field in model.model_fields.items()
        if field.alias and field.alias != name and field.alias in data and name in data
    ]


class ConfigModel(BaseModel):
    """Common config of every model of :mod:`rl_contracts.config`: extra keys kept, both ``_`` spellings accepted.

    Its ``json_schema_extra`` writes the field docstrings into the JSON Schema (see the module docstring); a
    subclass that sets its own ``json_schema_extra`` must call it.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        protected_namespaces=(),
        json_schema_extra=_describe_fields,
        defer_build=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _one_spelling_per_key(cls, data: Any) -> Any:
        """Reject an input that gives both spellings of an underscore key (a schema error, type
        ``config_rule_duplicate_key``: the model could keep only one)."""
        if isinstance(data, Mapping):
            raise_findings(
                cls.__name__, duplicate_spellings(cls, data), data, error_type="config_rule_duplicate_key"
            )
        return data


class ForbidExtra(ConfigModel):
    """A config model that rejects unknown keys."""

    model_config = ConfigDict(extra="forbid")


def known_keys(model_cls: type[BaseModel]) -> dict[str, str]:
    """Every accepted key spelling of ``model_cls`` (field names and aliases) mapped to its attribute name."""
    return {key: name for name, field in model_cls.model_fields.items() for key in (name, field.alias) if key}
