"""Run directories, atomic writes and resumable stage outputs."""
