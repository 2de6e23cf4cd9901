"""Option losses -> predictions and metrics. Every normalisation lives here, never in a backend."""
