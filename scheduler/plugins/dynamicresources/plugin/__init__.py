"""DynamicResources with structured parameters, its pure decision path (docs/dra-plugin.md): not yet
in the default profile, which runs the refusing stand-in (``..dynamicresources``)."""
