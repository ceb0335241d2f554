"""Every finding code, each :class:`~.rule.Rule` record beside the check that raises it, collected by
:mod:`.registry`.  This package imports nothing itself, so that the section models can import their rule modules
without loading the registry."""

__all__: list[str] = []
