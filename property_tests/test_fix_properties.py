"""Properties of ``validate --fix`` (rl_contracts.config.fixes) on generated recipes.

A two-file chain (tests/data/fixes/chain/base.yaml and a child) gets a random set of planted findings: misspelled
optional keys (K1, with one candidate or several), dead keys (W2), a misplaced limit_mm_per_prompt (P28) and a
force_on_policy_ratio batch mismatch (P9), in the child or in the parent.  The plan is written and every recipe
validated again.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rl_contracts.config import load_recipe
from rl_contracts.config.fixes import plan_fixes, write_fixes
from rl_contracts.errors import RecipeError

BASE = Path(__file__).resolve().parents[1] / "tests" / "data" / "fixes" / "chain" / "base.yaml"
TYPOS = (
    "kv_cache_dtyp",
    "enforce_eagr",
    "enable_prefix_cachng",
    "ensor_parallel_size",
    "gpu_memory_utilisation",
)
DEAD = ("enable_thinking", "enforce_monotonicity")
VALUES = st.sampled_from(["true", "false", "null", "1", "auto", "0.5"])

planted = st.fixed_dictionaries(
    {
        "typos": st.lists(st.tuples(st.sampled_from(TYPOS), VALUES), unique_by=lambda t: t[0], max_size=3),
        "dead": st.lists(st.tuples(st.sampled_from(DEAD), VALUES), unique_by=lambda t: t[0], max_size=2),
        "misplaced": st.booleans(),
        "batch": st.sampled_from([None, 48, 64]),
        "in_parent": st.booleans(),
        "unsafe": st.booleans(),
    }
)


def findings(recipe: Path) -> set[tuple[str, str]]:
    """The (code, path) of every finding of a recipe."""
    try:
        issues = load_recipe(recipe).issues
    except RecipeError as exc:
        issues = tuple(exc.issues or ())
    return {(issue.code, issue.path) for issue in issues}


def vllm_cfg_lines(plant: dict[str, object]) -> list[str]:
    """The planted vllm_cfg entries, indented for the child's vllm_cfg."""
    lines = [f"      {key}: {value}" for key, value in plant["typos"]]  # type: ignore[attr-defined]
    lines += [f"      {key}: {value}" for key, value in plant["dead"]]  # type: ignore[attr-defined]
    if plant["misplaced"]:
        lines.append("      limit_mm_per_prompt: {image: 2}")
    return lines


@settings(max_examples=15, deadline=None)
@given(planted)
def test_a_fixed_recipe_never_has_a_finding_the_fix_claims_to_remove(plant: dict[str, object]) -> None:
    """Invariant: after writing a plan, no recipe has a finding (code, path) that one of its applied fixes
    claimed to remove, and a second plan changes nothing."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        shutil.copyfile(BASE, root / "base.yaml")
        lines = ["defaults: base.yaml"]
        if plant["batch"] is not None:
            lines += [
                "grpo:",
                f"  num_prompts_per_step: {plant['batch']}",
                "loss_fn:",
                "  force_on_policy_ratio: true",
            ]
        planted_lines = vllm_cfg_lines(plant)
        if plant["in_parent"] and planted_lines:
            base = (root / "base.yaml").read_text()
            anchor = "      enforce_eager: false\n"
            (root / "base.yaml").write_text(
                base.replace(anchor, anchor + "".join(f"{line}\n" for line in planted_lines))
            )
        elif planted_lines:
            lines += ["policy:", "  generation:", "    vllm_cfg:", *planted_lines]
        child = root / "child.yaml"
        child.write_text("\n".join(lines) + "\n")
        unsafe = bool(plant["unsafe"])
        plan = plan_fixes([str(child)], unsafe_fixes=unsafe)
        write_fixes(plan)
        remaining = findings(child)
        for fix in plan.applied:
            assert (fix.code, fix.path) not in remaining, fix
        again = plan_fixes([str(child)], unsafe_fixes=unsafe)
        assert again.changes == ()
