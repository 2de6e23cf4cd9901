"""`crossknow pitfalls expand` (seed pairs translated into the other languages: `expansion.py`) and
`crossknow pitfalls affinity` (the Relative Affinity Score and the embedding analysis: `run.py`)."""
