"""The package's version and the generator name stamped into every document.

A leaf module (no imports) so that every layer may read it without importing the rest."""

__version__ = "0.1.0"
GENERATOR = f"activity-frames {__version__}"
