"""The package's version and the generator name stamped into every document.

A leaf module (no imports) so that every layer may read it without importing the rest. The
version is written here only: pyproject.toml reads it (setuptools' dynamic version).
"""

__version__ = "0.1.0"
# What `pip install` calls it ("activity-frames" on PyPI is another project; see pyproject.toml).
DISTRIBUTION = "af-pipeline"
GENERATOR = f"activity-frames {__version__}"
