"""Private by folder: the base models, strict scalars, the section view, dotted paths, the absent sentinel and rule
violations that the section models, the loading stage and the rules share.  Nothing here is public API."""

__all__: list[str] = []
