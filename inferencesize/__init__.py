"""infersize: size LLM inference deployments from analytic physics and published measurements."""

__version__ = "0.1.0"
