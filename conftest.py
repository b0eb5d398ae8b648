"""The test suite sets the plugin switches itself: the tests that exercise CORETORCH_PLUGINS, strict mode,
autoload and fallback set them explicitly (often in subprocesses), so a developer's shell settings must not
leak into the other tests or into the subprocesses they start."""
import os
import sys

for _var in ("CORETORCH_PLUGINS", "CORETORCH_DISABLE_PLUGIN_AUTOLOAD", "CORETORCH_STRICT_PLUGINS",
             "CORETORCH_FALLBACK"):
    os.environ.pop(_var, None)

# Bytecode is cached (__pycache__, git-ignored) even where the shell sets PYTHONDONTWRITEBYTECODE: otherwise each
# xdist worker rewrites every test module's asserts and compiles coretorch's sources again, and so does each of
# the ~150 Python subprocesses the suite starts (about a second of CPU per process, a tenth of the suite's time).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
