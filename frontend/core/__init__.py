"""F0, the core floor of the frontend: abstract values (``avals``), axis arguments (``axes``), dtypes and
promotion, config, errors, the IR and its printer, IR-to-IR passes, ``Primitive`` and ``bind``, tracing,
pytrees, the ``jit_call`` primitive and the operator table of arrays and tracers. It imports nothing above
it (see ``frontend/README.md``); higher floors register themselves here (eager execution, array operators)."""
