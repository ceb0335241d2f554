"""Every finding code, each :class:`~.rule.Rule` record beside the check that raises it, collected by
:mod:`.registry`: loading (V, :mod:`.loading`), the section's cross-field rules (C, :mod:`.section` and
:mod:`.refit_transport`), reload refit (R, :mod:`.refit_support`), unknown keys (K, P28, W2,
:mod:`.unknown_keys`) and preflight's cross-section rules (P, W, N, :mod:`.preflight`).

This package imports nothing itself, so that the section models can import their rule modules without loading
the registry."""

__all__: list[str] = []
