"""The torchvision CPU shim patch of the real-vLLM tier (``tests/vllm/torchvision_shim.py``), on a stand-in file.

The tier patches torchvision 0.28.0's ``extension.py``; here a file with the same extension-loading branch stands in
for it, so the patch's placement, idempotence and refusal of an unknown loader are checked without torchvision.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest


def _load_shim() -> ModuleType:
    path = Path(__file__).parent / "vllm" / "torchvision_shim.py"
    spec = importlib.util.spec_from_file_location("torchvision_shim", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shim = _load_shim()
LOADER = (
    "import torch\n\n\ndef _has_ops():\n    return False\n\n\n"
    + shim.ANCHOR
    + "\n\ndef _assert_has_ops():\n    pass\n"
)


def test_the_shim_becomes_the_else_branch_of_the_extension_loader(tmp_path: Path) -> None:
    """The schemas are defined exactly when the C++ extension did not load; a second patch changes nothing."""
    extension = tmp_path / "torchvision" / "extension.py"
    extension.parent.mkdir()
    extension.write_text(LOADER)
    assert shim.patch(tmp_path) == f"patched: {extension}"
    patched = extension.read_text()
    assert patched == LOADER.replace(shim.ANCHOR, shim.ANCHOR + shim.SHIM)
    compile(patched, str(extension), "exec")
    assert patched.count(shim.SHIM_TAG) == 1
    assert shim.patch(tmp_path) == f"already patched: {extension}"
    assert extension.read_text() == patched


def test_an_unknown_loader_is_refused_unchanged(tmp_path: Path) -> None:
    """A torchvision whose loader lacks the branch the shim extends fails the tier's step, naming the file."""
    extension = tmp_path / "torchvision" / "extension.py"
    extension.parent.mkdir()
    extension.write_text("import torch\n")
    with pytest.raises(SystemExit, match="does not contain the extension-loading branch"):
        shim.patch(tmp_path)
    assert extension.read_text() == "import torch\n"
