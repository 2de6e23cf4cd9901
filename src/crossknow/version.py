"""crossknow's version, as installed (a source tree that was not installed: 0.0.0+source)."""

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("crossknow")
except PackageNotFoundError:
    VERSION = "0.0.0+source"
