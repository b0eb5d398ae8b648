"""The test suite sets the plugin switches itself: the tests that exercise CORETORCH_PLUGINS, strict mode,
autoload and fallback set them explicitly (often in subprocesses), so a developer's shell settings must not
leak into the other tests or into the subprocesses they start."""
import os

for _var in ("CORETORCH_PLUGINS", "CORETORCH_DISABLE_PLUGIN_AUTOLOAD", "CORETORCH_STRICT_PLUGINS",
             "CORETORCH_FALLBACK"):
    os.environ.pop(_var, None)
