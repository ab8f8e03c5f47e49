"""Job plugins (Volcano's `spec.plugins` of a Job): env, svc, ssh, pytorch, registered by name.

`build(name, args)` gives a plugin instance, or None for a name no plugin has (admission rejects such jobs;
the controller skips the plugin with a PluginError event). See base.py for the hooks.
"""

from __future__ import annotations

from . import env, pytorch, ssh, svc  # noqa: F401  (importing registers them)
from .base import JobPlugin, PluginContext, build, parse_flags, plugin_class, register, registered

__all__ = ["JobPlugin", "PluginContext", "build", "parse_flags", "plugin_class", "register", "registered"]
