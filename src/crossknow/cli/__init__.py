"""The `crossknow` command line."""
