"""What a generation section is: ``GenerationConfig``/``VllmConfig`` (:mod:`.generation`), the ``vllm_cfg`` block
(:mod:`.vllm_cfg`), the ``refit_cfg`` settings (:mod:`.refit_cfg`) and the JSON Schemas (:mod:`.json_schema`)."""

__all__: list[str] = []
