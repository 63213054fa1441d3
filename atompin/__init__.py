"""atompin: keep a ROCm inference stack's pins honest (ATOM <-> vLLM <-> aiter)."""

__version__ = "0.1.0"
