# Stand-in for torch (tests/e2e/pyfw/README.md).
__version__ = "0.0.0+stand-in"
from . import optim  # noqa: E402,F401  (torch imports torch.optim as it loads)
from . import cuda  # noqa: E402,F401  (and much more after it)
