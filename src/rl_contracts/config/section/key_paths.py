"""Every key path a whole-recipe model declares, read from the models themselves (never kept by hand).

:func:`declared_keys` walks a model's fields and the models nested in them (through ``X | None``, lists, mappings
and the variants of a tagged union); the generation section, open in the recipe models, is walked as
:class:`~rl_contracts.config.VllmConfig`.  A list item is written ``[]``, a mapping value ``<name>``.  The docs'
table of what is typed per algorithm, the misplaced-key index and the test strategies read it.
"""

import functools
import types
from collections.abc import Iterator
from typing import Annotated, Any, NamedTuple, Union, get_args, get_origin

from pydantic import BaseModel

from .generation import VllmConfig
from .recipe import RECIPE_MODELS, Algorithm
from .variants import DisabledSection

__all__ = ["DeclaredKey", "declared_keys", "models_in"]

_GENERATION_FIELDS = {("policy", "generation"), ("teacher", "generation"), ("generation",)}
"""The open generation fields of the recipe models, typed as ``VllmConfig``."""


class DeclaredKey(NamedTuple):
    """One declared key: its ``path`` from the recipe root (``("policy", "dtensor_cfg", "tensor_parallel_size")``),
    whether its model requires it, and the model that declares it."""

    path: tuple[str, ...]
    required: bool
    owner: type[BaseModel]


def models_in(annotation: Any) -> Iterator[tuple[str | None, type[BaseModel]]]:
    """The config models an annotation holds, each with the path part it adds (``"[]"`` for a list item,
    ``"<name>"`` for a mapping value, ``None`` for the value itself); the disabled variant of a section is left
    out (its keys are the enabled variant's)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        yield from models_in(get_args(annotation)[0])
    elif origin is Union or origin is types.UnionType:
        for member in get_args(annotation):
            yield from models_in(member)
    elif origin is list:
        yield from (
            ("[]" if part is None else part, model) for part, model in models_in(get_args(annotation)[0])
        )
    elif origin is dict:
        for part, model in models_in(get_args(annotation)[1]):
            yield ("<name>" if part is None else part), model
    elif (
        isinstance(annotation, type)
        and issubclass(annotation, BaseModel)
        and not issubclass(annotation, DisabledSection)
    ):
        yield None, annotation


def _walk(
    model: type[BaseModel], prefix: tuple[str, ...], seen: set[tuple[str, ...]]
) -> Iterator[DeclaredKey]:
    for name, field in model.model_fields.items():
        path = (*prefix, field.alias or name)
        if path not in seen:
            seen.add(path)
            yield DeclaredKey(path, field.is_required(), model)
        annotation: Any = field.annotation
        if path in _GENERATION_FIELDS:
            annotation = VllmConfig
        for part, nested in models_in(annotation):
            yield from _walk(nested, path if part is None else (*path, part), seen)


@functools.cache
def declared_keys(algorithm: Algorithm) -> tuple[DeclaredKey, ...]:
    """Every key path the whole-recipe model of ``algorithm`` declares, in declaration order, each once (a key
    that several variants declare counts once, required if its first variant requires it)."""
    return tuple(_walk(RECIPE_MODELS[algorithm], (), set()))
