"""Hypothesis strategies for every input the library validates, grouped by concern and re-exported here.

Each strategy's docstring says what it generates and which SPEC §7 invariants it is meant to exercise.
"""

from .chat import *  # noqa: F403
from .chat import __all__ as _chat
from .config import *  # noqa: F403
from .config import __all__ as _config
from .hostile_recipes import *  # noqa: F403
from .hostile_recipes import __all__ as _hostile_recipes
from .logprobs import *  # noqa: F403
from .logprobs import __all__ as _logprobs
from .metrics import *  # noqa: F403
from .metrics import __all__ as _metrics
from .prompts import *  # noqa: F403
from .prompts import __all__ as _prompts
from .recipes import *  # noqa: F403
from .recipes import __all__ as _recipes
from .rollouts import *  # noqa: F403
from .rollouts import __all__ as _rollouts
from .routes import *  # noqa: F403
from .routes import __all__ as _routes
from .splice import *  # noqa: F403
from .splice import __all__ as _splice
from .weights import *  # noqa: F403
from .weights import __all__ as _weights
from .whole_recipes import *  # noqa: F403
from .whole_recipes import __all__ as _whole_recipes

__all__ = [
    *_chat,
    *_config,
    *_hostile_recipes,
    *_logprobs,
    *_metrics,
    *_prompts,
    *_recipes,
    *_rollouts,
    *_routes,
    *_splice,
    *_weights,
    *_whole_recipes,
]
