"""Config contracts for the vLLM generation section of a recipe (SPEC §1); imports neither torch nor vLLM.

- :mod:`.models`: ``GenerationConfig``, ``VllmConfig`` and every nested part, with the cross-field rules;
- :mod:`.refit_rules`: refit-transport normalisation, the reload-refit support check, worker-class resolution;
- :mod:`.recipe`: NeMo RL-style recipe loading (``defaults:`` inheritance, interpolation) and ``ConfigIssue``.
"""

from .models import *  # noqa: F403
from .models import __all__ as _models
from .recipe import *  # noqa: F403
from .recipe import __all__ as _recipe
from .refit_rules import *  # noqa: F403
from .refit_rules import __all__ as _refit_rules

__all__ = [*_models, *_recipe, *_refit_rules]
