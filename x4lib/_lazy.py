"""Submodules imported on first use, so ``import x4lib as x4; x4.network.collectives`` works without importing
every model (and the measuring modules run where only the standard library and torch are installed)."""
import importlib


def submodules(package: str, names):
    """``__getattr__`` and ``__dir__`` for a package whose ``names`` are imported when first asked for."""
    names = tuple(names)

    def __getattr__(name: str):
        if name in names:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__():
        return sorted(names)
    return __getattr__, __dir__
