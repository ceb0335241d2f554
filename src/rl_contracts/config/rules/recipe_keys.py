"""The keys of a whole recipe that its algorithm's model does not declare: typos (K1), keys misplaced in another
section (K3) and unknown keys (K2).

The walk reads the recipe document beside the model of its algorithm
(:data:`~rl_contracts.config.section.recipe.RECIPE_MODELS`), so it works whether or not the recipe validates.  At
each mapping it judges the keys the model there does not declare, most specific first:

1. *typo* (``K1``, error): within ``difflib`` ratio 0.8 of a key that model declares;
2. *misplaced* (``K3``, error): a key the algorithm declares in exactly one place, under another top-level section
   (``grpo.train_micro_batch_size`` belongs in ``policy``), outside an open section;
3. *unknown* (``K2``, warning, an error under ``--strict``): anything else, except in an open section (a dataset
   entry, a pass-through mapping, a disabled section), whose own keys are not ours to judge.

The generation section is left to the generation check (it reports its own K1/K2/P28/W2).
"""

from __future__ import annotations

import difflib
import functools
import types
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, Discriminator

from ..._internal.messages import render_name
from ..finding import Finding, SuggestedFix
from ..rule import Rule, checks
from ..section.key_paths import declared_keys
from ..section.recipe import RECIPE_MODELS, Algorithm
from ..section.variants import SectionModel
from .recipe_schema import finding

__all__ = ["K3", "recipe_key_findings"]

K3 = Rule(
    "K3",
    "misplaced-section-key",
    summary="a key written in the wrong section (the algorithm declares it in one other place): it is never read",
    reference="never",
    what_it_checks=(
        "That no section holds a key that the algorithm's recipe declares only in another section, such as "
        "`grpo.train_micro_batch_size` (a `policy` key) or `checkpointing.save_steps`-style keys moved by hand."
    ),
    why_it_matters=(
        "NeMo RL's models keep unknown keys, so the misplaced key is accepted and never read: the setting it was "
        "meant to change keeps its inherited value and nothing fails."
    ),
    example="""\
grpo:
  train_micro_batch_size: 2
""",
    fix="Move the key to the section the finding names.",
    fix_safety="safe",
)

_TYPO_CUTOFF = 0.8
_GENERATION = {("policy", "generation"), ("teacher", "generation"), ("generation",)}


@functools.cache
def _misplaced_index(algorithm: Algorithm) -> Mapping[str, list[tuple[str, ...]]]:
    """Each key name the algorithm declares at a fixed place, to its places (read only when a key is undeclared)."""
    index: dict[str, list[tuple[str, ...]]] = {}
    for declared in declared_keys(algorithm):
        if not any(part.startswith(("[", "<")) for part in declared.path):
            index.setdefault(declared.path[-1], []).append(declared.path)
    return index


def _judge(
    model: type[BaseModel],
    keys: tuple[str, ...],
    key: str,
    value: object,
    algorithm: Algorithm,
) -> Finding | None:
    declared = [field.alias or name for name, field in model.model_fields.items()]
    matches = difflib.get_close_matches(key, declared, n=2, cutoff=_TYPO_CUTOFF)
    if matches:
        reason = (
            "unknown key, probably a misspelling: its setting is never applied and an inherited value stays; "
            f"did you mean '{render_name(matches[0])}'?"
        )
        fix = None
        if len(matches) == 1:
            fix = SuggestedFix(
                action="rename",
                target=matches[0],
                description=f"rename {render_name(key)} to {render_name(matches[0])}",
            )
        return finding((*keys, key), "K1", "error", reason, value, fix)
    if isinstance(model, type) and issubclass(model, SectionModel) and model.open_keys:
        return None
    places = _misplaced_index(algorithm).get(key, [])
    if keys and len(places) == 1 and places[0][0] != keys[0]:
        target = ".".join(places[0])
        reason = (
            f"misplaced: this algorithm reads {render_name(key)} only at {render_name(target)}; move it there"
        )
        fix = SuggestedFix(
            action="move", target=target, description=f"move {render_name(key)} to {render_name(target)}"
        )
        return finding((*keys, key), "K3", "error", reason, value, fix)
    return finding((*keys, key), "K2", "warning", "unknown key (not validated)", value)


def _walk(
    model: type[BaseModel],
    data: Mapping[Any, Any],
    keys: tuple[str, ...],
    algorithm: Algorithm,
) -> Iterator[Finding]:
    """The findings of the keys of ``data`` (a mapping at ``keys``) that ``model`` does not declare, and of the
    models nested in those it does."""
    annotations = _annotations(model)
    for key, value in data.items():
        if not isinstance(key, str):
            continue
        if key not in annotations:
            finding = _judge(model, keys, key, value, algorithm)
            if finding is not None:
                yield finding
        elif (*keys, key) not in _GENERATION:
            yield from _descend(annotations[key], value, (*keys, key), algorithm)


@functools.cache
def _annotations(model: type[BaseModel]) -> Mapping[str, Any]:
    """The full annotation (metadata included) of each field of ``model``, by name and by alias."""
    annotations = {name: field.rebuild_annotation() for name, field in model.model_fields.items()}
    annotations.update(
        {field.alias: annotations[name] for name, field in model.model_fields.items() if field.alias}
    )
    return annotations


def _descend(
    annotation: Any, value: object, keys: tuple[Any, ...], algorithm: Algorithm
) -> Iterator[Finding]:
    """The findings below ``value`` (at ``keys``) as ``annotation`` types it; a tagged union descends into the member
    its discriminator picks for ``value``."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *metadata = get_args(annotation)
        chooser = next((item for item in metadata if isinstance(item, Discriminator)), None)
        if chooser is None or not callable(chooser.discriminator):
            yield from _descend(inner, value, keys, algorithm)
            return
        wanted = chooser.discriminator(value)
        for member in get_args(inner):
            if any(getattr(item, "tag", None) == wanted for item in getattr(member, "__metadata__", ())):
                yield from _descend(member, value, keys, algorithm)
    elif origin is Union or origin is types.UnionType:
        for member in get_args(annotation):
            yield from _descend(member, value, keys, algorithm)
    elif origin is list and isinstance(value, list):
        for position, item in enumerate(value):
            yield from _descend(get_args(annotation)[0], item, (*keys, position), algorithm)
    elif origin is dict and isinstance(value, Mapping):
        for name, item in value.items():
            yield from _descend(get_args(annotation)[1], item, (*keys, name), algorithm)
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel) and isinstance(value, Mapping):
        yield from _walk(annotation, value, keys, algorithm)


@checks(K3)
def recipe_key_findings(document: Mapping[Any, Any], algorithm: Algorithm) -> list[Finding]:
    """Every undeclared key of ``document`` judged against the model of ``algorithm`` (see the module), in
    document order; the generation section is skipped."""
    return list(_walk(RECIPE_MODELS[algorithm], document, (), algorithm))
