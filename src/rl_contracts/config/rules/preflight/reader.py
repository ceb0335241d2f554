"""Safe typed reads of a composed recipe for the preflight rules: defaults, forced values, unresolved leaves.
A read raises only the signals the rule runner turns into results: :class:`Unresolved` (the rule is skipped),
:class:`WrongShape` (a finding of the reading rule at its path) and :class:`MissingKey` (P1). Absent keys take
the trainer's defaults; a null parent reads as absent (``.get(...) or {}``)."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from ...._internal.config_absent import ABSENT
from ...._internal.config_paths import is_under, join, split_path

__all__ = [
    "MAX_RECIPE_INT",
    "REQUIRED",
    "TRAINER_DEFAULTS",
    "MissingKey",
    "Reader",
    "Required",
    "Unresolved",
    "WrongShape",
]


class Required:
    """The type of :data:`REQUIRED`."""

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Final = Required()
"""A read's default meaning "the trainer indexes this key directly": absent raises :class:`MissingKey`."""

MAX_RECIPE_INT: Final = 2**63 - 1
"""The largest magnitude an int read by a rule may have (signed 64-bit); a larger one is a finding of the rule."""

_VC = "policy.generation.vllm_cfg"

TRAINER_DEFAULTS: Final[Mapping[str, object]] = {
    "grpo.num_prompts_per_step": 32,
    "grpo.num_generations_per_prompt": 16,
    "grpo.batch_multiplier": 1.0,
    "grpo.use_dynamic_sampling": False,
    "grpo.val_num_generations_per_prompt": 1,
    "grpo.stop_at_validation_metric": None,
    "grpo.stop_at_validation_threshold": None,
    "grpo.skip_reference_policy_logprobs_calculation": False,
    "grpo.seq_logprob_error_threshold": None,
    "grpo.deduplicate_multimodal_data": False,
    "grpo.val_period": 10,
    "grpo.val_at_start": False,
    "grpo.val_at_end": False,
    "grpo.max_val_samples": 256,
    "grpo.async_grpo.enabled": False,
    "grpo.async_grpo.max_trajectory_age_steps": 1,
    "grpo.async_grpo.in_flight_weight_updates": False,
    "loss_fn.reference_policy_kl_penalty": 0.01,
    "loss_fn.use_kl_in_reward": False,
    "loss_fn.use_importance_sampling_correction": False,
    "loss_fn.force_on_policy_ratio": False,
    "async_rl.min_groups_for_streaming_train": 32,
    "async_rl.sampler.name": "in_order",
    f"{_VC}.tensor_parallel_size": 1,
    f"{_VC}.pipeline_parallel_size": 1,
    f"{_VC}.expert_parallel_size": 1,
}
"""The values NeMo RL's trainers use for absent keys (PREFLIGHT.md §1); every ``*.enabled`` flag defaults to
false.  OPD teacher defaults are applied where teachers are read (:mod:`.facts`)."""


class _Signal(Exception):
    """A read's signal about ``path``."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


class Unresolved(_Signal):
    """A rule read ``path``, which is (or is above or below) a leaf that failed resolution."""


class WrongShape(_Signal):
    """The value at ``path`` is not ``expected``."""

    def __init__(self, path: str, value: object, expected: str) -> None:
        super().__init__(path)
        self.value = value
        self.expected = expected


class MissingKey(_Signal):
    """``path`` is absent, but the trainer indexes it directly (a KeyError at start-up)."""


def _checked_int(path: str, found: object, expected: str) -> int:
    """``found`` when it is an int (never a bool) of magnitude at most :data:`MAX_RECIPE_INT`, else WrongShape."""
    if not isinstance(found, int) or isinstance(found, bool):
        raise WrongShape(path, found, expected)
    if abs(found) > MAX_RECIPE_INT:
        raise WrongShape(
            path, found, f"{expected}, within the signed 64-bit range (at most 2**63 - 1 in magnitude)"
        )
    return found


def _checked_number(path: str, found: object, expected: str) -> float:
    """``found`` when it is a finite float or an int as ``_checked_int`` takes it, else WrongShape."""
    if isinstance(found, float):
        if not math.isfinite(found):
            raise WrongShape(path, found, f"{expected}, finite (not .inf, -.inf or .nan)")
        return found
    return _checked_int(path, found, expected)


class Reader:
    """Typed reads of one document; ``forced`` values (dotted path -> value the entrypoint forces) win over it,
    ``unresolved`` are the dotted paths of the leaves dropped because they did not resolve."""

    def __init__(
        self,
        document: Mapping[Any, Any],
        *,
        unresolved: Collection[str] = (),
        forced: Mapping[str, object] | None = None,
    ) -> None:
        self._root = document
        self._unresolved = tuple(str(path) for path in unresolved)
        self._forced = dict(forced or {})

    def is_unresolved(self, path: str) -> bool:
        """Whether ``path`` itself is a leaf that failed resolution (it was dropped from its mapping)."""
        return path in self._unresolved

    def _lookup(self, path: str, *, deep: bool = True) -> object:
        if path in self._forced:
            return self._forced[path]
        for leaf in self._unresolved:
            if is_under(path, (leaf,)) or (deep and is_under(leaf, (path,))):
                raise Unresolved(leaf)
        node: object = self._root
        walked = ""
        for key in split_path(path):
            if node is None:
                return ABSENT
            if isinstance(key, int):
                if not isinstance(node, Sequence) or isinstance(node, str):
                    raise WrongShape(walked, node, "a list")
                if key >= len(node):
                    return ABSENT
                node = node[key]
            else:
                if not isinstance(node, Mapping):
                    raise WrongShape(walked, node, "a mapping")
                if key not in node:
                    return ABSENT
                node = node[key]
            walked = join(walked, key)
        return node

    def shallow(self, path: str) -> object:
        """The raw value at ``path`` (:data:`ABSENT` when absent, no defaults), whose unresolved leaves are
        dropped: for listing its keys or items."""
        return self._lookup(path, deep=False)

    def present(self, path: str) -> bool:
        """Whether ``path`` is in the document (defaults not applied; null counts as present)."""
        return self._lookup(path) is not ABSENT

    def value(self, path: str) -> object:
        """The value at ``path``; the trainer's default when absent; :data:`ABSENT` when neither."""
        found = self._lookup(path)
        if found is not ABSENT:
            return found
        if path in TRAINER_DEFAULTS:
            return TRAINER_DEFAULTS[path]
        if path.endswith(".enabled"):
            return False
        return ABSENT

    def _get(self, path: str, default: object) -> object:
        found = self.value(path)
        if found is ABSENT:
            if isinstance(default, Required):
                raise MissingKey(path)
            return default
        return found

    def flag(self, path: str, default: bool | Required = False) -> bool:
        """A boolean flag; null reads as false (the trainer tests truthiness of ``.get``)."""
        found = self._get(path, default)
        if found is None or isinstance(found, bool):
            return bool(found)
        raise WrongShape(path, found, "true or false")

    def truthy(self, path: str) -> bool:
        """Python truthiness of the value, absent reading false (``if cfg.get(key):`` in the trainer)."""
        found = self.value(path)
        return found is not ABSENT and bool(found)

    def integer(self, path: str, default: int | Required = REQUIRED) -> int:
        """An int (never a bool) of magnitude at most :data:`MAX_RECIPE_INT`."""
        return _checked_int(path, self._get(path, default), "an int")

    def opt_integer(self, path: str) -> int | None:
        """An int (as :meth:`integer`) or null; absent reads as null."""
        found = self._get(path, None)
        return None if found is None else _checked_int(path, found, "an int or null")

    def count(self, path: str, default: int | Required = REQUIRED, *, minimum: int = 1) -> int:
        """A size or count: an int (as :meth:`integer`) of at least ``minimum``, checked on its own so that no
        combination of out-of-range sizes (two negative factors whose product is positive) cancels out."""
        found = self.integer(path, default)
        if found < minimum:
            raise WrongShape(path, found, f"an int >= {minimum}")
        return found

    def opt_count(self, path: str, *, minimum: int = 1) -> int | None:
        """A size or count (as :meth:`count`) or null; absent reads as null."""
        found = self.opt_integer(path)
        if found is not None and found < minimum:
            raise WrongShape(path, found, f"an int >= {minimum} or null")
        return found

    def number(self, path: str, default: float | Required = REQUIRED) -> float:
        """A finite int or float (never a bool, NaN or an infinity; an int as :meth:`integer`)."""
        return _checked_number(path, self._get(path, default), "a number")

    def opt_number(self, path: str) -> float | None:
        """A number (as :meth:`number`) or null; absent reads as null."""
        found = self._get(path, None)
        return None if found is None else _checked_number(path, found, "a number or null")

    def text(self, path: str, default: str | Required = REQUIRED) -> str:
        """A string."""
        found = self._get(path, default)
        if not isinstance(found, str):
            raise WrongShape(path, found, "a string")
        return found

    def opt_text(self, path: str) -> str | None:
        """A string or null; absent reads as null."""
        found = self._get(path, None)
        if found is None or isinstance(found, str):
            return found
        raise WrongShape(path, found, "a string or null")

    def mapping(self, path: str) -> Mapping[object, object] | None:
        """A mapping; absent or null reads as None."""
        found = self._get(path, None)
        if found is None or isinstance(found, Mapping):
            return found
        raise WrongShape(path, found, "a mapping or null")
