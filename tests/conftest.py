"""Test configuration: the real-vLLM tier kept out of the core run, and the optional external recipe corpus.

The Hypothesis profile comes from the ``rl_contracts`` pytest plugin (the package's ``pytest11`` entry point), as
in any trainer's project: ``pyproject.toml`` selects ``rl-contracts-ci`` with the ini option
``rl_contracts_hypothesis_profile``; ``RL_CONTRACTS_HYPOTHESIS_PROFILE`` or ``--hypothesis-profile`` override it.

``tests/vllm`` needs the separate vLLM environment that ``.ci/vllm_tier`` builds; that script sets
``RL_CONTRACTS_VLLM_TIER=1``.  Everywhere else the directory is not collected (its tests import vLLM).

The recipe corpus is a folder of real recipes (NeMo RL's samples, which ``.ci/run`` passes on when the project's
shared folder lies beside the checkout) that a few tests sweep: ``--recipe-corpus DIR`` or
``RL_CONTRACTS_RECIPE_CORPUS=DIR``.  Without one those tests skip, saying so; every other test reads only the
fixtures of ``tests/data``.  A corpus that is not a folder of ``*.yaml`` files is a usage error, not a skip.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

collect_ignore = [] if os.environ.get("RL_CONTRACTS_VLLM_TIER") == "1" else ["vllm"]

CORPUS_ENV = "RL_CONTRACTS_RECIPE_CORPUS"
NO_CORPUS = (
    f"no recipe corpus: pass --recipe-corpus DIR or set {CORPUS_ENV}=DIR "
    "(.ci/run sets it to NeMo RL's samples)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--recipe-corpus DIR``: the folder of real recipes that the corpus tests sweep."""
    parser.addoption(
        "--recipe-corpus",
        metavar="DIR",
        default=None,
        help=f"folder of real recipes (*.yaml, searched recursively) for the corpus tests (default: ${CORPUS_ENV}; "
        "without either they skip)",
    )


def _corpus(config: pytest.Config) -> Path | None:
    """The corpus folder given by the option, else the environment variable; None when neither is set."""
    given = config.getoption("--recipe-corpus", default=None) or os.environ.get(CORPUS_ENV) or None
    if given is None:
        return None
    folder = Path(given).expanduser().resolve()
    if not folder.is_dir() or next(folder.rglob("*.yaml"), None) is None:
        raise pytest.UsageError(
            f"recipe corpus {given!r} (--recipe-corpus or {CORPUS_ENV}) is no folder of *.yaml files"
        )
    return folder


def pytest_configure(config: pytest.Config) -> None:
    """Check the corpus option before collection, so that a mistyped folder stops the run with one line."""
    _corpus(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test asking for ``corpus_recipe`` runs once per ``*.yaml`` of the corpus (id: its path in the corpus), or
    is skipped once, with :data:`NO_CORPUS`, when there is none."""
    if "corpus_recipe" not in metafunc.fixturenames:
        return
    folder = _corpus(metafunc.config)
    if folder is None:
        metafunc.parametrize(
            "corpus_recipe", [pytest.param(None, marks=pytest.mark.skip(reason=NO_CORPUS))], ids=["no-corpus"]
        )
        return
    files = sorted(folder.rglob("*.yaml"))
    metafunc.parametrize("corpus_recipe", files, ids=[path.relative_to(folder).as_posix() for path in files])


@pytest.fixture
def recipe_corpus(request: pytest.FixtureRequest) -> Path:
    """The recipe corpus folder; the test is skipped (with :data:`NO_CORPUS`) when none is given."""
    folder = _corpus(request.config)
    if folder is None:
        pytest.skip(NO_CORPUS)
    return folder
