"""Model backends, one module each, by the scheme of the model string: ``openai_compat`` (``openai:``,
``http://``, ``https://``), ``local`` (``local:``), ``replay`` (``replay:``). A backend registers its
factory with ``@register_backend(scheme, …)`` (:mod:`dataclaw.models.backends.base`); built-ins are found
here, others come from entry points in the ``dataclaw.model_backends`` group (name: the scheme)."""
