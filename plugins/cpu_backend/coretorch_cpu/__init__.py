"""coretorch-cpu: the numpy backend for device 'cpu'."""
import coretorch  # noqa: F401  (first: coretorch loads this plugin through its entry point; see docs/plugins.md)
import warnings as _warnings

from .backend import CPUBackend

__all__ = ["CPUBackend"]

# PyTorch computes IEEE results (inf - inf is nan, an overflowing sum is inf) without a word; numpy warns.  The
# warnings numpy raises inside this package's kernels are ignored by one filter on this package's modules, set once:
# nothing on the hot path (numpy's error state is left alone, so a user's own numpy code warns as it is set to).
_warnings.filterwarnings("ignore", r"(invalid value|overflow|divide by zero|underflow) encountered",
                         RuntimeWarning, r"coretorch_cpu(\.|$)")
