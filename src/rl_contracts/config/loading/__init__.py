"""How a recipe file becomes a checked document: composition (:mod:`.compose`), ``--set`` overrides
(:mod:`.overrides`), resolution (:mod:`.resolve`), provenance (:mod:`.provenance`), issues (:mod:`.issues`), the
section check (:mod:`.check_section`), preflight's findings as issues (:mod:`.run_preflight`) and the entry point
:func:`~.load_recipe.load_recipe`."""

__all__: list[str] = []
