"""Pages the docs generate at build time, so they cannot drift from the code.

- ``recipes/rules/``: the rules catalogue, one page per code family, read from the public command line
  (``rl-contracts rules --format json``, run with the interpreter that builds the docs).
- ``divergences.md``'s list: every "Divergence:" paragraph of a public docstring, read from the sources with
  :mod:`ast` (nothing is imported, so the build needs no torch).

Generated files are written before Sphinx reads the sources, only when their text changed, and are git-ignored.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

DOCS = Path(__file__).resolve().parent.parent
SOURCES = DOCS.parent / "src" / "rl_contracts"

FAMILIES = {
    "V": ("Loading (V)", "the recipe file itself: reading, resolving, limits, where parents may come from"),
    "C": ("Cross-field (C)", "combinations of generation settings that cannot work together"),
    "R": ("Reload and refit (R)", "weight reload and refit settings the engine cannot honour"),
    "K": ("Unknown keys (K)", "keys no model declares: typos and unknown keys"),
    "P": ("Preflight (P)", "cross-section start-up rules of the GRPO trainers"),
    "W": ("Warnings (W)", "settings that run, but not as written"),
    "N": ("Runtime-dependent (N)", "rules that need an input the recipe does not hold; skipped without it"),
}


def _rules() -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "rl_contracts.cli", "rules", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if done.returncode != 0:
        raise ExtensionError(f"rl-contracts rules --format json failed:\n{done.stderr}")
    rules: list[dict[str, Any]] = json.loads(done.stdout)
    unknown = sorted({rule["family"] for rule in rules} - set(FAMILIES))
    if unknown:
        raise ExtensionError(f"rules_catalogue: name the new code families {unknown} in FAMILIES")
    return rules


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _options(options: dict[str, Any]) -> str:
    flags = {"vllm_version": "--vllm-version", "gpu_capability": "--gpu-capability"}
    parts = []
    for name, value in options.items():
        if name in flags and isinstance(value, list):
            parts.append(f"`{flags[name]} {'.'.join(str(part) for part in value)}`")
        elif name == "model_config":
            parts.append(f"`--model-config` a `config.json` holding `{json.dumps(value, sort_keys=True)}`")
        else:
            parts.append(f"`{name}={value!r}`")
    return ", ".join(parts)


def _rule_section(rule: dict[str, Any]) -> str:
    safety = {None: "none", "safe": "safe (`--fix`)", "unsafe": "unsafe (`--fix --unsafe-fixes`)"}
    lines = [
        f"({rule['code'].lower()})=",
        f"## {rule['code']} `{rule['name']}`",
        "",
        f"**{rule['summary']}** — severity *{rule['severity']}*, automatic fix: {safety[rule['fix_safety']]}.",
        "",
        f"**What it checks.** {rule['what_it_checks']}",
        "",
        f"**Why it matters.** {rule['why_it_matters']} Reference: {rule['reference']}.",
        "",
        "**Example.** A minimal failing recipe fragment, merged over a recipe that passes every rule"
        + (f" (validated with {_options(rule['example_options'])})" if rule["example_options"] else "")
        + ":",
        "",
        "```yaml",
        rule["example"].rstrip("\n"),
        "```",
        "",
        f"**Fix.** {rule['fix']}",
        "",
    ]
    return "\n".join(lines)


def _family_page(family: str, rules: list[dict[str, Any]]) -> str:
    title, about = FAMILIES[family]
    head = [
        f"# {title}",
        "",
        f"Codes of {about}. Generated from `rl-contracts rules --format json`; "
        f"`rl-contracts rule CODE` prints the same page in a terminal.",
        "",
        "| Code | Severity | Finding |",
        "|---|---|---|",
        *(
            f"| [{r['code']}](#{r['code'].lower()}) | {r['severity']} | {_cell(r['summary'])} |"
            for r in rules
        ),
        "",
    ]
    return "\n".join(head + [_rule_section(rule) for rule in rules])


def _index_page(rules: list[dict[str, Any]]) -> str:
    families = [family for family in FAMILIES if any(rule["family"] == family for rule in rules)]
    lines = [
        "# Rules catalogue",
        "",
        "Every finding `rl-contracts validate` and `load_recipe` report has a stable code, declared once in the "
        "rule table (`rl_contracts.config.rules.registry.RULES`). These pages are generated from it when the docs "
        f"are built: {len(rules)} codes in {len(families)} families.",
        "",
        "```{toctree}",
        ":maxdepth: 1",
        "",
        *(f"family-{family.lower()}" for family in families),
        "```",
        "",
        "| Code | Severity | Finding | Checked by the reference |",
        "|---|---|---|---|",
        *(
            f"| [{r['code']}](family-{r['family'].lower()}.md#{r['code'].lower()}) | {r['severity']} | "
            f"{_cell(r['summary'])} | {_cell(r['reference'])} |"
            for r in rules
        ),
        "",
    ]
    return "\n".join(lines)


def _divergences() -> str:
    """A Markdown list: each public function or class whose docstring holds a "Divergence:" paragraph."""
    items = []
    for path in sorted(SOURCES.rglob("*.py")):
        parts = path.relative_to(SOURCES.parent).with_suffix("").parts
        if any(part.startswith("_") and part != "__init__" for part in parts) or "testing" in parts:
            continue
        module = ".".join(part for part in parts if part != "__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            doc = ast.get_docstring(node) or ""
            for paragraph in doc.split("\n\n"):
                if paragraph.lstrip().startswith("Divergence:"):
                    text = " ".join(paragraph.split())
                    items.append(f"- {{py:obj}}`{module}.{node.name}` — {text}")
    return "\n".join(items) + "\n"


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def generate(app: Sphinx) -> None:
    """Write the generated pages into the source folder before Sphinx reads it."""
    rules = _rules()
    folder = DOCS / "recipes" / "rules"
    _write(folder / "index.md", _index_page(rules))
    for family in FAMILIES:
        members = [rule for rule in rules if rule["family"] == family]
        if members:
            _write(folder / f"family-{family.lower()}.md", _family_page(family, members))
    _write(DOCS / "_generated" / "divergences.md", _divergences())


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}


__all__ = ["generate", "setup"]
