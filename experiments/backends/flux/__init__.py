"""The flux backend: cells on real flux-core, in a test instance, an allocation or a box."""
