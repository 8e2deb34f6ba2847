"""schedmate: semantic signals (code, logs, history) for GPU-cluster schedulers."""

__version__ = "0.1.0"
__all__ = ["__version__"]
