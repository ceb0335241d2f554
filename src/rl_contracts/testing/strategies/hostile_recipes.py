"""Hypothesis strategies for hostile recipe files: what a pull request from a fork can put in a recipe.

Each strategy generates a :class:`HostileRecipe`, a set of YAML files (one top recipe, possibly ``defaults``
parents) that :meth:`HostileRecipe.write` writes into a directory, so multi-file attacks (diamonds) are
fixtures too.  Every recipe starts from :data:`BASE_RECIPE`, a small GRPO recipe that passes every check, and
adds one hostile class (:data:`HOSTILE_KINDS`):

- ``depth``: lists or mappings nested 100 to 30,000 levels, anywhere in the document (:func:`deep_recipes`);
- ``numbers``: inf, -inf, nan, ints of thousands of digits, negative and zero sizes at the sizes, counts and
  factors the rules read (:func:`extreme_number_recipes`);
- ``keys``: keys (and string values) holding Unicode digits, empty segments, dots, brackets, control
  characters, ANSI sequences and workflow commands (:func:`control_key_recipes`);
- ``interpolation``: ``${.a}${.a}`` doubling chains and resolver products (``${mul:ab,500000000}``)
  (:func:`interpolation_recipes`);
- ``diamond``: a ``defaults`` chain whose every file lists its parent twice (:func:`diamond_recipes`).

:func:`hostile_recipes` draws from all of them.  The invariant they exercise (issue 21, README "Security and
limits"): validating any of them returns an exit status of 0, 1 or 2 (``load_recipe`` raises only
``ContractError``\\ s), within bounded time and memory, and prints recipe text only escaped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from hypothesis import strategies as st

__all__ = [
    "BASE_RECIPE",
    "HOSTILE_KINDS",
    "HostileKind",
    "HostileRecipe",
    "control_key_recipes",
    "deep_recipes",
    "diamond_recipes",
    "extreme_number_recipes",
    "hostile_recipes",
    "interpolation_recipes",
]

HostileKind = Literal["depth", "numbers", "keys", "interpolation", "diamond"]
HOSTILE_KINDS: Final[tuple[HostileKind, ...]] = ("depth", "numbers", "keys", "interpolation", "diamond")
"""The hostile classes, in the order of the module docstring."""

BASE_RECIPE: Final = """\
grpo:
  num_prompts_per_step: 32
  num_generations_per_prompt: 16
  val_period: 10
  max_val_samples: 256
loss_fn:
  reference_policy_kl_penalty: 0.01
  use_importance_sampling_correction: false
policy:
  model_name: Qwen/Qwen2.5-1.5B
  train_global_batch_size: 512
  train_micro_batch_size: 4
  logprob_batch_size: 4
  max_total_sequence_length: 512
  precision: bfloat16
  dtensor_cfg:
    enabled: true
    _v2: true
    tensor_parallel_size: 1
    context_parallel_size: 1
  megatron_cfg:
    enabled: false
  draft:
    enabled: false
  sequence_packing:
    enabled: false
  generation:
    backend: vllm
    max_new_tokens: ${policy.max_total_sequence_length}
    temperature: 1.0
    top_p: 1.0
    top_k: null
    val_temperature: ${.temperature}
    val_top_p: ${.top_p}
    val_top_k: ${.top_k}
    stop_token_ids: null
    stop_strings: null
    colocated:
      enabled: true
      resources:
        gpus_per_node: null
        num_nodes: null
    vllm_cfg:
      async_engine: false
      precision: ${policy.precision}
      tensor_parallel_size: 1
      pipeline_parallel_size: 1
      expert_parallel_size: 1
      gpu_memory_utilization: 0.6
      max_model_len: ${policy.max_total_sequence_length}
      kv_cache_dtype: auto
      enforce_eager: false
data:
  use_multiple_dataloader: false
cluster:
  gpus_per_node: 8
  num_nodes: 1
"""
"""A GRPO recipe that passes every check (the parent of every hostile recipe, written as ``base.yaml``)."""

_TOP = "recipe.yaml"
_BASE = "base.yaml"


@dataclass(frozen=True)
class HostileRecipe:
    """Hostile recipe files: ``files`` maps a relative file name to its YAML text; ``top`` is the one to
    validate; ``kind`` the hostile class; ``description`` a short, printable account of what it holds."""

    kind: HostileKind
    files: tuple[tuple[str, str], ...]
    top: str = _TOP
    description: str = ""

    def write(self, directory: Path) -> Path:
        """Write every file under ``directory`` (which must exist) and return the path of the top recipe."""
        for name, text in self.files:
            (directory / name).write_text(text, encoding="utf-8")
        return directory / self.top


def _quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar (JSON's ASCII escapes are valid YAML escapes)."""
    return json.dumps(text, ensure_ascii=True)


def _nested(path: tuple[str, ...], value: str) -> str:
    """Block YAML setting the dotted ``path`` (keys already quoted when needed) to the flow scalar ``value``."""
    lines = [f"{'  ' * depth}{key}:" for depth, key in enumerate(path[:-1])]
    lines.append(f"{'  ' * (len(path) - 1)}{path[-1]}: {value}")
    return "\n".join(lines) + "\n"


def _recipe(kind: HostileKind, body: str, description: str) -> HostileRecipe:
    return HostileRecipe(
        kind, ((_BASE, BASE_RECIPE), (_TOP, f"defaults: {_BASE}\n{body}")), description=description
    )


_PLACES: Final[tuple[tuple[str, ...], ...]] = (
    ("policy", "generation"),
    ("policy", "generation", "vllm_cfg"),
    ("policy", "generation", "vllm_kwargs"),
    ("grpo",),
    ("cluster",),
    ("extra",),
)
"""Mappings a hostile key or value is placed in: the validated section, preflight's sections, a free one."""


@st.composite
def deep_recipes(draw: st.DrawFn, *, min_depth: int = 100, max_depth: int = 30_000) -> HostileRecipe:
    """A recipe holding a list (``[[[...]]]``) or mapping (``{a: {a: ...}}``) nested ``min_depth`` to
    ``max_depth`` levels, in flow style (text linear in the depth), at a key of a random section."""
    depth = draw(st.integers(min_depth, max_depth))
    shape = draw(st.sampled_from(["list", "map"]))
    value = "[" * depth + "1" + "]" * depth if shape == "list" else "{a: " * depth + "1" + "}" * depth
    place = draw(st.sampled_from(_PLACES))
    return _recipe("depth", _nested((*place, "deep"), value), f"{shape} nested {depth} levels at {place}")


_NUMERIC_PATHS: Final[tuple[tuple[str, ...], ...]] = (
    ("cluster", "num_nodes"),
    ("cluster", "gpus_per_node"),
    ("grpo", "num_prompts_per_step"),
    ("grpo", "num_generations_per_prompt"),
    ("grpo", "batch_multiplier"),
    ("grpo", "val_period"),
    ("policy", "train_global_batch_size"),
    ("policy", "max_total_sequence_length"),
    ("policy", "dtensor_cfg", "tensor_parallel_size"),
    ("policy", "dtensor_cfg", "context_parallel_size"),
    ("policy", "generation", "max_new_tokens"),
    ("policy", "generation", "temperature"),
    ("policy", "generation", "top_k"),
    ("policy", "generation", "top_p"),
    ("policy", "generation", "colocated", "resources", "num_nodes"),
    ("policy", "generation", "vllm_cfg", "tensor_parallel_size"),
    ("policy", "generation", "vllm_cfg", "pipeline_parallel_size"),
    ("policy", "generation", "vllm_cfg", "gpu_memory_utilization"),
    ("policy", "generation", "vllm_cfg", "max_model_len"),
    ("env", "reward_model", "resources", "num_nodes"),
    ("loss_fn", "ratio_clip_c"),
    ("loss_fn", "truncated_importance_sampling_ratio"),
    ("loss_fn", "truncated_importance_sampling_ratio_min"),
)
"""Sizes, counts and factors the schema and the preflight rules read."""


def _extreme_scalars() -> st.SearchStrategy[str]:
    """YAML scalars for extreme numbers: infinities, NaN, hex and decimal ints of thousands of digits, negative
    and zero sizes, the float and int64 edges."""
    return st.one_of(
        st.sampled_from(
            [
                *(".inf", "-.inf", ".nan", ".NaN", "+.inf", "-1", "0", "-0", "1e308", "-1e308", "5e-324"),
                *(str(2**63), str(-(2**63) - 1), str(2**64)),
            ]
        ),
        st.integers(1, 20_000).map(lambda n: "0x" + "f" * n),
        st.integers(1, 4_000).map(lambda n: "-" + "9" * n),
        st.integers(-(2**70), 2**70).map(str),
    )


@st.composite
def extreme_number_recipes(draw: st.DrawFn, *, max_values: int = 3) -> HostileRecipe:
    """A recipe with 1 to ``max_values`` sizes, counts or factors set to extreme numbers (dynamic sampling and a
    reward model switched on or off, so the arithmetic that reads them runs)."""
    paths = draw(st.lists(st.sampled_from(_NUMERIC_PATHS), min_size=1, max_size=max_values, unique=True))
    body = ""
    shown = []
    for path in paths:
        scalar = draw(_extreme_scalars())
        body += _nested(path, scalar)
        shown.append(f"{'.'.join(path)}={scalar[:12]}")
    if draw(st.booleans()):
        body += "grpo:\n  use_dynamic_sampling: true\n" if ("grpo",) not in [p[:1] for p in paths] else ""
    if draw(st.booleans()):
        body += _nested(("data", "train", "env_name"), "reward_model")
    return _recipe("numbers", body, ", ".join(shown))


_HOSTILE_FRAGMENTS: Final[tuple[str, ...]] = (
    "\n::error file=pwned.yaml,line=1::injected",
    "\r",
    "\x1b[31m",
    "\x1b]0;title\x07",
    "\x07",
    "\x85",
    "\u2028",
    "\u202e",
    "\x00",
    "²",
    "٣",
    "..",
    ".",
    "[0]",
    "[",
    "${",
    "%0A",
    "",
)
"""Pieces of hostile keys and values: a workflow command after a newline, CR, ANSI and OSC sequences, BEL, NEL,
LINE SEPARATOR, a bidi override, NUL, Unicode digits (``"²".isdigit()`` but ``int("²")`` fails), empty
segments, dots, index brackets, an interpolation opener and GitHub's own escape."""


_WHOLE_KEYS: Final[tuple[str, ...]] = (
    "²",
    "١٢",
    "0",
    "-1",
    "1" * 5000,
    "",
    " ",
    "a.b",
    "[0]",
    "${x}",
    "_override_",
)
"""Whole keys that look like list indices, numbers, paths or markers: Unicode digits, a 1,000-digit ASCII int (YAML keys are at most 1,024 characters),
the empty key, a dotted key, an index, an interpolation and the merge marker."""


def _hostile_text() -> st.SearchStrategy[str]:
    """Text mixing :data:`_HOSTILE_FRAGMENTS` with arbitrary characters."""
    return st.lists(
        st.one_of(st.sampled_from(_HOSTILE_FRAGMENTS), st.text(max_size=4)), min_size=1, max_size=5
    ).map("".join)


@st.composite
def control_key_recipes(draw: st.DrawFn) -> HostileRecipe:
    """A recipe with hostile keys (and string values) in the validated section, preflight's sections or a free
    one: Unicode digits, empty segments, dots, brackets, control characters, ANSI sequences, workflow commands."""
    body = ""
    for _ in range(draw(st.integers(1, 3))):
        place = draw(st.sampled_from(_PLACES))
        key = draw(st.one_of(_hostile_text(), st.sampled_from(_WHOLE_KEYS)))
        value = draw(st.one_of(st.integers(-3, 3).map(str), _hostile_text().map(_quoted)))
        body += _nested((*place, _quoted(key)), value)
    return _recipe("keys", body, "hostile keys")


@st.composite
def interpolation_recipes(draw: st.DrawFn, *, max_levels: int = 40) -> HostileRecipe:
    """A recipe whose leaves interpolate: a chain of ``levels`` keys, each ``${.prev}`` repeated 2 to 4 times
    (the text grows exponentially), or a resolver product such as ``${mul:ab,500000000}``, at a random section."""
    place = draw(st.sampled_from(_PLACES))
    if draw(st.booleans()):
        levels, fan = draw(st.integers(2, max_levels)), draw(st.integers(2, 4))
        lines = {"l0": _quoted("ab")}
        for level in range(1, levels):
            lines[f"l{level}"] = _quoted(f"${{.l{level - 1}}}" * fan)
        head = "\n".join(f"{'  ' * depth}{key}:" for depth, key in enumerate(place))
        indent = "  " * len(place)
        body = head + "\n" + "".join(f"{indent}{key}: {value}\n" for key, value in lines.items())
        return _recipe("interpolation", body, f"{levels} levels of x{fan} interpolation at {place}")
    factor = draw(st.sampled_from(["500000000", str(2**62), "1e308", "-1", "0"]))
    operator = draw(st.sampled_from(["mul", "add", "div", "max"]))
    operand = draw(st.sampled_from(["ab", "1", "[1]", "${policy.max_total_sequence_length}"]))
    value = _quoted(f"${{{operator}:{operand},{factor}}}")
    return _recipe("interpolation", _nested((*place, "product"), value), f"{value} at {place}")


@st.composite
def diamond_recipes(draw: st.DrawFn, *, max_levels: int = 30) -> HostileRecipe:
    """A ``defaults`` chain of ``levels`` files (2 to ``max_levels``) where every file lists its parent twice
    (``defaults: [f0.yaml, f0.yaml]``), so naive composition reads the base ``2**levels`` times."""
    levels = draw(st.integers(2, max_levels))
    files: list[tuple[str, str]] = [(_BASE, BASE_RECIPE)]
    parent = _BASE
    for level in range(levels):
        name = f"f{level}.yaml"
        files.append((name, f"defaults: [{parent}, {parent}]\nlevel{level}: {level}\n"))
        parent = name
    files.append((_TOP, f"defaults: [{parent}, {parent}]\n"))
    return HostileRecipe("diamond", tuple(files), description=f"diamond of {levels} levels")


_BY_KIND: Final[dict[str, Callable[[], st.SearchStrategy[HostileRecipe]]]] = {
    "depth": deep_recipes,
    "numbers": extreme_number_recipes,
    "keys": control_key_recipes,
    "interpolation": interpolation_recipes,
    "diamond": diamond_recipes,
}


def hostile_recipes(kinds: tuple[HostileKind, ...] = HOSTILE_KINDS) -> st.SearchStrategy[HostileRecipe]:
    """A hostile recipe of one of ``kinds`` (every class of :data:`HOSTILE_KINDS` by default).

    Raises ValueError for an empty ``kinds`` or a kind not in :data:`HOSTILE_KINDS` (a strategy-construction
    error, as Hypothesis' own strategies raise).
    """
    unknown = [kind for kind in kinds if kind not in _BY_KIND]
    if not kinds or unknown:
        raise ValueError(f"kinds must be a non-empty tuple of {HOSTILE_KINDS}, got {kinds!r}")
    return st.one_of(*(_BY_KIND[kind]() for kind in kinds))
