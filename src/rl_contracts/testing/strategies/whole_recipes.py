"""Hypothesis strategies for whole recipes of every NeMo RL algorithm, drawn from the recipe models themselves.

- :func:`whole_recipes`: composed, resolved recipes of one algorithm (or any) that pass every whole-recipe check:
  each required key, a random subset of the optional ones, values of the declared types within their ranges, and
  batch sizes that divide as NeMo RL asserts (P33-P36).  The generation section is left out (it is optional and
  has strategies of its own), except for ``eval``, which requires one: a fixed valid ``VllmConfig`` section.
- :func:`minimal_whole_recipe`: the smallest valid recipe of an algorithm (its required keys), deterministic;
- :func:`broken_whole_recipes`: one of those with exactly one finding planted, as a :class:`PlantedFinding` (the
  recipe, the code and the dotted path it must be reported at): a required key removed (``V8``), a value of the
  wrong type (``V9``), a size of 0 (``P32``), a declared key misspelled (``K1``), an undeclared key (``K2``), a key
  copied into a section that does not declare it (``K3``), or batch arithmetic broken: a global batch that does not
  divide a step (``P33``), a micro-batch that does not divide its global batch (``P34``), dynamic batching with
  sequence packing (``P35``), checkpointing with ``save_period: 0`` (``P36``).

Documents are plain JSON-compatible dicts, as ``load_recipe`` resolves them.
"""

from __future__ import annotations

import difflib
import functools
import types
from typing import Annotated, Any, Literal, NamedTuple, Union, get_args, get_origin

import annotated_types
from hypothesis import strategies as st
from pydantic import BaseModel, Discriminator
from pydantic.fields import FieldInfo

from ...config.section.key_paths import declared_keys
from ...config.section.policy import DynamicBatchingConfig, SequencePackingConfig
from ...config.section.recipe import ALGORITHMS, RECIPE_MODELS, Algorithm
from ...config.section.variants import NEVER_NULL, DisabledSection
from .config import minimal_vllm_generation

__all__ = ["PLANTED_CODES", "PlantedFinding", "broken_whole_recipes", "minimal_whole_recipe", "whole_recipes"]

PLANTED_CODES: tuple[str, ...] = ("V8", "V9", "K1", "K2", "K3", "P32", "P33", "P34", "P35", "P36")
"""The finding codes :func:`broken_whole_recipes` plants, in the rule table's order."""


def _evaluation_generation() -> dict[str, Any]:
    """A new valid generation section for an evaluation recipe: the minimal vLLM section, short and small."""
    section = minimal_vllm_generation(max_new_tokens=16)
    section["vllm_cfg"].update(
        gpu_memory_utilization=0.5,
        max_model_len=64,
        precision="bfloat16",
        enforce_eager=False,
        kv_cache_dtype="auto",
    )
    return section


_TEXT = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)


class PlantedFinding(NamedTuple):
    """A recipe with one planted finding: its ``code`` and the dotted ``path`` it must be reported at.

    ``also`` holds the findings (code, path) the plant implies beside it: the ``V8`` of a required key that a
    ``K1`` typo took away; empty for every other plant.
    """

    recipe: dict[str, Any]
    algorithm: Algorithm
    code: str
    path: str
    also: tuple[tuple[str, str], ...] = ()


def _bounds(metadata: list[Any]) -> tuple[float | None, float | None, bool]:
    """Lower and upper bounds of a number from its metadata, and whether the lower bound is strict."""
    low: float | None = None
    high: float | None = None
    strict = False
    items = [*metadata]
    for item in metadata:
        if isinstance(item, FieldInfo):
            items.extend(item.metadata)
    for item in items:
        if isinstance(item, annotated_types.Ge):
            low = float(item.ge)  # type: ignore[arg-type]
        elif isinstance(item, annotated_types.Gt):
            low, strict = float(item.gt), True  # type: ignore[arg-type]
        elif isinstance(item, annotated_types.Le):
            high = float(item.le)  # type: ignore[arg-type]
        elif isinstance(item, annotated_types.Lt):
            high = float(item.lt)  # type: ignore[arg-type]
    return low, high, strict


def _value(annotation: Any, metadata: list[Any]) -> st.SearchStrategy[Any]:
    """Values of ``annotation`` (with the constraints in ``metadata``) that validate."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *more = get_args(annotation)
        chooser = next((item for item in more if isinstance(item, Discriminator)), None)
        if chooser is not None:
            return st.one_of([_value(get_args(member)[0], []) for member in get_args(inner)])
        return _value(inner, [*metadata, *more])
    if origin is Union or origin is types.UnionType:
        members = [member for member in get_args(annotation) if member is not type(None)]
        options = [_value(member, metadata) for member in members]
        if len(members) < len(get_args(annotation)) and not any(item is NEVER_NULL for item in metadata):
            options.append(st.none())
        return st.one_of(options)
    if origin is Literal:
        return st.sampled_from(get_args(annotation))
    if origin is list:
        return st.lists(_value(get_args(annotation)[0], []), max_size=2)
    if origin is dict:
        return st.dictionaries(_TEXT, _value(get_args(annotation)[1], []), max_size=2)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        low, high, strict = _bounds(metadata)
        first = -4 if low is None else int(low) + (1 if strict else 0)
        return st.integers(min_value=first, max_value=int(high) if high is not None else first + 64)
    if annotation is float:
        low, high, strict = _bounds(metadata)
        start = -4.0 if low is None else low
        last = high if high is not None else start + 64.0
        return st.floats(
            min_value=start, max_value=last, exclude_min=strict, allow_nan=False, allow_infinity=False
        )
    if annotation is str:
        return _TEXT
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _section(annotation)
    return st.none()


@functools.cache
def _section(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    """Mappings that validate as ``model``: every required key, a random subset of the optional ones."""
    if issubclass(model, DisabledSection):
        return st.just({"enabled": False})
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key == "generation":
            continue
        strategy = _value(field.annotation, list(field.metadata))
        # a variant's own name (the sampler's) is written, so that its discriminator picks it
        named_variant = get_origin(field.annotation) is Literal and len(get_args(field.annotation)) == 1
        if field.is_required() or named_variant:
            required[key] = strategy
        else:
            optional[key] = strategy
    return st.fixed_dictionaries(required, optional=optional)


def _consistent(
    recipe: dict[str, Any], algorithm: Algorithm, sizes: tuple[int, int, int, int]
) -> dict[str, Any]:
    """``recipe`` with the batch arithmetic NeMo RL asserts made to hold (P33-P36)."""
    micro, per_global, per_step, generations = sizes
    for model in ("policy", "value", "teacher"):
        section = recipe.get(model)
        if not isinstance(section, dict):
            continue
        section["train_micro_batch_size"] = micro
        section["train_global_batch_size"] = micro * per_global
        section["dynamic_batching"] = {"enabled": False}
        section["sequence_packing"] = {"enabled": False}
    loop = {"grpo": "grpo", "grpo-sc": "grpo", "ppo": "ppo", "distillation": "distillation"}.get(algorithm)
    if loop is not None and isinstance(recipe.get(loop), dict):
        recipe[loop]["num_prompts_per_step"] = micro * per_global * per_step
        if algorithm != "grpo-sc" or "num_generations_per_prompt" in recipe[loop]:
            recipe[loop]["num_generations_per_prompt"] = generations
    for loop in ("sft", "dpo", "rm"):
        if isinstance(recipe.get(loop), dict):
            recipe[loop]["val_micro_batch_size"] = micro
            recipe[loop]["val_global_batch_size"] = micro * per_global
    checkpointing = recipe.get("checkpointing")
    if isinstance(checkpointing, dict) and checkpointing.get("save_period") == 0:
        checkpointing["save_period"] = 1
    if algorithm == "eval":
        recipe["generation"] = _evaluation_generation()
    return recipe


def _least(annotation: Any, metadata: list[Any]) -> Any:
    """The least value of ``annotation`` that validates: the lower bound (or 1) of a number, ``False``, the first
    of a ``Literal``, ``"a"``, an empty list or mapping, a section's required keys; ``None`` where ``None`` fits."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *more = get_args(annotation)
        if any(isinstance(item, Discriminator) for item in more):
            return _least(get_args(get_args(inner)[0])[0], [])
        return _least(inner, [*metadata, *more])
    if origin is Union or origin is types.UnionType:
        members = [member for member in get_args(annotation) if member is not type(None)]
        nullable = len(members) < len(get_args(annotation)) and not any(
            item is NEVER_NULL for item in metadata
        )
        return None if nullable else _least(members[0], metadata)
    if origin is Literal:
        return get_args(annotation)[0]
    if origin in (list, dict):
        return origin()
    if annotation in (int, float):
        low, _, strict = _bounds(metadata)
        return annotation(1 if low is None or strict else low)
    if annotation is bool:
        return False
    if annotation is str:
        return "a"
    if isinstance(annotation, type) and issubclass(annotation, DisabledSection):
        return {"enabled": False}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {
            field.alias or name: _least(field.annotation, list(field.metadata))
            for name, field in annotation.model_fields.items()
            if field.is_required()
        }
    return None


def minimal_whole_recipe(algorithm: Algorithm) -> dict[str, Any]:
    """The smallest valid recipe of ``algorithm``: its required keys, each with its least valid value (a new dict
    on every call); it passes every whole-recipe check."""
    return _consistent(_least(RECIPE_MODELS[algorithm], []), algorithm, (1, 1, 1, 1))


@st.composite
def whole_recipes(draw: st.DrawFn, algorithm: Algorithm | None = None) -> tuple[Algorithm, dict[str, Any]]:
    """A valid resolved recipe of ``algorithm`` (drawn from :data:`ALGORITHMS` when ``None``), with its algorithm.

    Invariant it serves: a drawn recipe passes every whole-recipe check of its algorithm (no V8, V9, P32-P36, K1,
    K3 finding; K2 never, since only declared keys are drawn).
    """
    chosen: Algorithm = algorithm if algorithm is not None else draw(st.sampled_from(ALGORITHMS))
    recipe = draw(_section(RECIPE_MODELS[chosen]))
    sizes = (
        draw(st.integers(1, 4)),
        draw(st.integers(1, 4)),
        draw(st.integers(1, 3)),
        draw(st.integers(1, 4)),
    )
    return chosen, _consistent(recipe, chosen, sizes)


def _mappings(recipe: dict[str, Any]) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every mapping of ``recipe`` reached through mappings only, with its path (the generation section excluded)."""
    found: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    stack: list[tuple[tuple[str, ...], dict[str, Any]]] = [((), recipe)]
    while stack:
        path, mapping = stack.pop()
        found.append((path, mapping))
        for key, value in mapping.items():
            if isinstance(value, dict) and key != "generation" and value.get("enabled") is not False:
                stack.append(((*path, key), value))
    return found


_SIZES = ("train_micro_batch_size", "num_nodes", "gpus_per_node")
"""Keys of sizes every algorithm has somewhere, where :func:`broken_whole_recipes` plants a 0 (P32)."""


def _plantable(code: str, key: str, value: object, required: bool, siblings: set[str]) -> bool:
    """Whether a finding of ``code`` can be planted at this declared key (its value, whether it is required and
    the keys declared beside it)."""
    if code == "V8":
        return required and key != "enabled"
    if code == "V9":
        return isinstance(value, bool)
    if code == "P32":
        return key in _SIZES
    return len(key) >= 5 and _typo(key) not in siblings


def _closed_sections(algorithm: Algorithm) -> set[tuple[str, ...]]:
    """The top-level sections of ``algorithm`` typed by one model that declares every key it accepts (so an
    undeclared key there is reported; an open section such as ``env`` takes any key)."""
    closed: set[tuple[str, ...]] = set()
    for name, field in RECIPE_MODELS[algorithm].model_fields.items():
        members = [m for m in get_args(field.annotation) if m is not type(None)] or [field.annotation]
        model = members[0] if len(members) == 1 else None
        if (
            isinstance(model, type)
            and issubclass(model, BaseModel)
            and not getattr(model, "open_keys", False)
        ):
            closed.add((field.alias or name,))
    return closed


_SELECTORS = frozenset({"dataset_name", "prompt_key", "chosen_key", "rejected_key", "milestones"})
"""Keys whose presence or value picks a section's variant (an evaluation's dataset, a preference dataset, a
scheduler item): removed or misspelled they change which keys are required, so nothing is planted at them."""


def _selects_variant(path: tuple[str, ...]) -> bool:
    """Whether the key at ``path`` picks the variant of its section (see :data:`_SELECTORS`; and the sampler's
    ``name`` of the single-controller GRPO)."""
    return path[-1] in _SELECTORS or path == ("async_rl", "sampler", "name")


def _typo(key: str) -> str:
    """``key`` with its middle letter doubled (``difflib`` ratio ≥ 0.9 for keys of 5 letters or more)."""
    middle = len(key) // 2
    return key[:middle] + key[middle] + key[middle:]


_STEP_LOOPS = {"grpo": "grpo", "ppo": "ppo", "distillation": "distillation"}
"""The section holding a step's prompts and generations, for the algorithms whose step P33 checks."""

_MISPLACED_TARGET = "cluster"
"""The section :func:`broken_whole_recipes` copies a misplaced key into (K3): every algorithm has it, closed."""


def _plantable_codes(recipe: dict[str, Any], algorithm: Algorithm) -> list[str]:
    """The codes of :data:`PLANTED_CODES` that can be planted in ``recipe`` (the batch rules need a policy, P33 a
    step of prompts and generations, P36 a checkpointing section)."""
    trained = isinstance(recipe.get("policy"), dict)
    needs = {
        "P33": trained and algorithm in _STEP_LOOPS,
        "P34": trained,
        "P35": trained,
        "P36": isinstance(recipe.get("checkpointing"), dict),
    }
    return [code for code in PLANTED_CODES if needs.get(code, True)]


def _misplaced_keys(algorithm: Algorithm) -> list[tuple[str, tuple[str, ...]]]:
    """The key names ``algorithm`` declares in exactly one place outside :data:`_MISPLACED_TARGET`, each with that
    place, that are not within a typo's distance of a key the target declares (so a copy there is misplaced, K3,
    not misspelled, K1)."""
    places: dict[str, list[tuple[str, ...]]] = {}
    for declared in declared_keys(algorithm):
        if not any(part.startswith(("[", "<")) for part in declared.path):
            places.setdefault(declared.path[-1], []).append(declared.path)
    target = [
        path[-1]
        for path in (key.path for key in declared_keys(algorithm))
        if path[:-1] == (_MISPLACED_TARGET,)
    ]
    return [
        (name, found[0])
        for name, found in sorted(places.items())
        if len(found) == 1
        and found[0][0] != _MISPLACED_TARGET
        and not difflib.get_close_matches(name, target, n=1, cutoff=0.8)
    ]


def _lookup(recipe: dict[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    holder: Any = recipe
    for key in path:
        if not isinstance(holder, dict) or key not in holder:
            return False, None
        holder = holder[key]
    return True, holder


def _enabled(model: type[BaseModel]) -> dict[str, Any]:
    """The least valid mapping of a switchable section's model, switched on."""
    section: dict[str, Any] = _least(model, [])
    section["enabled"] = True
    return section


def _plant_arithmetic(recipe: dict[str, Any], algorithm: Algorithm, code: str) -> str:
    """Break the batch arithmetic of a consistent recipe for ``code`` (P33-P36); the path it is reported at."""
    policy = recipe.get("policy", {})
    if (
        code == "P33"
    ):  # a global batch larger than the step's samples (and still a multiple of the micro-batch)
        loop = recipe[_STEP_LOOPS[algorithm]]
        samples = loop["num_prompts_per_step"] * loop.get("num_generations_per_prompt", 1)
        policy["train_global_batch_size"] = samples + policy["train_micro_batch_size"]
        return "policy.train_global_batch_size"
    if code == "P34":  # a micro-batch larger than its global batch
        policy["train_micro_batch_size"] = policy["train_global_batch_size"] + 1
        return "policy.train_micro_batch_size"
    if code == "P35":
        policy["dynamic_batching"] = _enabled(DynamicBatchingConfig)
        policy["sequence_packing"] = _enabled(SequencePackingConfig)
        return "policy.dynamic_batching.enabled"
    recipe["checkpointing"].update(enabled=True, save_period=0)
    return "checkpointing.save_period"


@st.composite
def broken_whole_recipes(draw: st.DrawFn, algorithm: Algorithm | None = None) -> PlantedFinding:
    """A recipe of :func:`whole_recipes` with one finding planted (see the module); its code and path.

    Invariant it serves: the planted finding is reported, with exactly its code at its path, and nothing else is
    reported but what the plant implies (:attr:`PlantedFinding.also`).
    """
    chosen, recipe = draw(whole_recipes(algorithm))
    code = draw(st.sampled_from(_plantable_codes(recipe, chosen)))
    if code in ("P33", "P34", "P35", "P36"):
        return PlantedFinding(recipe, chosen, code, _plant_arithmetic(recipe, chosen, code))
    mappings = [(path, mapping) for path, mapping in _mappings(recipe) if path and path[0] != "generation"]
    declared = {key.path: key for key in declared_keys(chosen)}
    if code == "K2":  # in a top-level section whose keys are all declared (not an open one such as env)
        closed = _closed_sections(chosen)
        path, mapping = draw(st.sampled_from([item for item in mappings if item[0] in closed]))
        mapping["zzz_not_a_nemo_rl_key"] = 1
        return PlantedFinding(recipe, chosen, "K2", ".".join((*path, "zzz_not_a_nemo_rl_key")))
    if (
        code == "K3"
    ):  # a copy of a key (its value where the recipe has one) in a section that does not read it
        name, home = draw(st.sampled_from(_misplaced_keys(chosen)))
        found, value = _lookup(recipe, home)
        recipe[_MISPLACED_TARGET][name] = value if found else 1
        return PlantedFinding(recipe, chosen, "K3", f"{_MISPLACED_TARGET}.{name}")
    siblings = {path: {other[-1] for other in declared if other[:-1] == path} for path, _ in mappings}
    candidates = []
    for path, mapping in mappings:
        for key, value in mapping.items():
            entry = declared.get((*path, key))
            if (
                entry is not None
                and not _selects_variant((*path, key))
                and _plantable(code, key, value, entry.required, siblings[path])
            ):
                candidates.append((path, mapping, key))
    if not candidates:  # every algorithm has cluster.num_nodes: required, an int, a size, a long key
        candidates = [(("cluster",), recipe["cluster"], "num_nodes")]
        code = "P32" if code == "V9" else code
    path, mapping, key = draw(st.sampled_from(candidates))
    where = ".".join((*path, key))
    also: tuple[tuple[str, str], ...] = ()
    if code == "V8":
        del mapping[key]
    elif code == "V9":
        mapping[key] = [mapping[key]]
    elif code == "P32":
        mapping[key] = 0
    else:
        mapping[_typo(key)] = mapping.pop(key)
        if declared[tuple((*path, key))].required:
            also = (("V8", where),)
        where = ".".join((*path, _typo(key)))
    return PlantedFinding(recipe, chosen, code, where, also)
