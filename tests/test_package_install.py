"""The distribution a user installs: built, checked, and installed without torch (marker ``package``).

Slow (a build and a fresh venv), so ``pytest`` alone deselects it; ``.ci/run`` runs it with ``-m package``.  The
wheel goes into a fresh venv with no torch, where ``rl-contracts validate`` checks the bundled recipe, as
``pip install rl-contracts`` in a recipe repository's CI would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.package


def _run(*command: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built from the checkout (isolated build, as a release is built)."""
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", out)
    return out


def test_distributions_pass_twine_check_strict(dist: Path) -> None:
    """Both distributions' metadata render on the package index (``twine check --strict``)."""
    files = sorted(dist.iterdir())
    assert sorted(f.suffix for f in files) == [".gz", ".whl"]
    _run(sys.executable, "-m", "twine", "check", "--strict", *files)


def test_sdist_ships_no_tests_and_the_license(dist: Path) -> None:
    """The sdist holds the package, README, LICENSE and CHANGELOG, and no tests that could not run from it."""
    [sdist] = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    assert {"LICENSE", "CHANGELOG.md", "README.md", "src/rl_contracts/recipes/grpo_qwen3_moe.yaml"} <= set(
        names
    )
    shipped = {name.split("/", 1)[0] for name in names}
    assert not shipped & {"tests", "property_tests", "benchmarks", "examples", "docs", ".ci"}


def test_wheel_metadata_makes_torch_an_extra(dist: Path) -> None:
    """torch is required only with the ``torch`` extra; the wheel carries the license and the version."""
    [wheel] = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode()
        assert any(n.endswith("licenses/LICENSE") for n in archive.namelist())
    requires = [line for line in text.splitlines() if line.startswith("Requires-Dist: torch")]
    assert requires
    assert all("extra ==" in line for line in requires), requires
    assert "Version: 0.4.0" in text
    assert "License-Expression: Apache-2.0" in text


def test_wheel_validates_the_bundled_recipe_without_torch(dist: Path, tmp_path: Path) -> None:
    """In a fresh venv, ``pip install`` of the wheel pulls no torch, and ``rl-contracts validate`` passes."""
    [wheel] = dist.glob("*.whl")
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", wheel)
    listed = _run(python, "-m", "pip", "list", "--format=freeze").stdout
    assert "torch" not in listed.lower()
    recipe = _run(
        python, "-c", "import rl_contracts, pathlib; print(pathlib.Path(rl_contracts.__file__).parent)"
    )
    path = Path(recipe.stdout.strip()) / "recipes" / "grpo_qwen3_moe.yaml"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [venv / "bin" / "rl-contracts", "validate", path],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 file: 1 valid" in done.stdout
