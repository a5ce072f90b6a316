"""DynamicResources with structured parameters (docs/dra-plugin.md): the plugin of every minor's
default profile; its claim writes go through a ``ClaimWriter``."""
