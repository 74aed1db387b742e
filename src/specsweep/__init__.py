"""specsweep: reproducible benchmarks of LLM inference-server configurations."""

__version__ = "0.1.0"
