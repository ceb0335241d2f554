"""The example fragments of the generation section's rule records (``rl-contracts rule CODE`` prints them)."""

from __future__ import annotations

__all__ = ["generation_example"]


def generation_example(*lines: str, policy: tuple[str, ...] = ()) -> str:
    """A recipe fragment: ``policy`` (YAML lines of the ``policy`` section), then ``policy.generation`` holding
    ``lines`` (YAML lines of that section); each line indented under its section.

    >>> print(generation_example("vllm_cfg:", "  async_engine: true"), end="")
    policy:
      generation:
        vllm_cfg:
          async_engine: true
    """
    head = "".join(f"  {line}\n" for line in policy)
    return "policy:\n" + head + "  generation:\n" + "".join(f"    {line}\n" for line in lines)
