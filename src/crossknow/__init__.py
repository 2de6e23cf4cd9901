"""crossknow: measure how language models acquire knowledge in one language and carry it to others."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("crossknow")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"
