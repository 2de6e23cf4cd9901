"""The model backends: each module here registers the spec kinds it serves with `registry.register_backend`, and
the registry imports every module of this folder the first time a spec is read. A new backend is a new module."""
