"""The NeMo RL algorithms whose recipes are typed (one per ``examples/run_*.py`` entry point), the entry point of
each, which one a recipe is for, and :class:`RecipeModel`, the base of their whole-recipe models.

Nothing here builds a section model: the models of an algorithm are imported when its recipe is checked
(:data:`~.recipe.RECIPE_MODELS`).
"""

from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal, get_args

from .variants import SectionModel

__all__ = ["ALGORITHMS", "RUN_SCRIPTS", "Algorithm", "RecipeModel", "detect_algorithm"]

Algorithm = Literal[
    "grpo", "grpo-sc", "sft", "dpo", "rm", "ppo", "distillation", "xtoken-distillation", "eval"
]
"""The NeMo RL algorithms whose recipes are typed: one per ``examples/run_*.py`` entry point."""

ALGORITHMS: Final[tuple[Algorithm, ...]] = get_args(Algorithm)
"""Every :data:`Algorithm`, in the order of :data:`~.recipe.RECIPE_MODELS`."""

RUN_SCRIPTS: Final[Mapping[Algorithm, str]] = {
    "grpo": "examples/run_grpo.py",
    "grpo-sc": "examples/run_grpo_single_controller.py",
    "sft": "examples/run_sft.py",
    "dpo": "examples/run_dpo.py",
    "rm": "examples/run_rm.py",
    "ppo": "examples/run_ppo.py",
    "distillation": "examples/run_distillation.py",
    "xtoken-distillation": "examples/run_xtoken_off_policy_distillation.py",
    "eval": "examples/run_eval.py",
}
"""The NeMo RL entry point that runs each algorithm."""


class RecipeModel(SectionModel):
    """A whole composed recipe of one algorithm (its top-level sections)."""

    algorithm: ClassVar[Algorithm]
    """The algorithm this model types."""


_SIGNATURES: Final[tuple[tuple[str, Algorithm], ...]] = (
    ("eval", "eval"),
    ("teachers", "xtoken-distillation"),
    ("teacher", "distillation"),
    ("value", "ppo"),
    ("value_loss_fn", "ppo"),
    ("ppo", "ppo"),
    ("async_rl", "grpo-sc"),
    ("grpo", "grpo"),
    ("sft", "sft"),
    ("dpo", "dpo"),
    ("rm", "rm"),
    ("distillation", "distillation"),
)


def detect_algorithm(document: Mapping[Any, Any]) -> Algorithm | None:
    """The algorithm whose entry point runs ``document``, judged by its top-level sections, most specific first (an
    ``eval`` section means ``run_eval.py``; ``teachers`` cross-tokenizer distillation; ``teacher`` distillation;
    ``value``/``ppo`` PPO; ``async_rl`` the single-controller GRPO script; then ``grpo``, ``sft``, ``dpo``, ``rm``,
    ``distillation``); ``None`` when no algorithm's own section is there (a fragment, or a bare generation
    section)."""
    for section, algorithm in _SIGNATURES:
        if document.get(section) is not None:
            return algorithm
    return None
