"""Prompts to validated, structured answers: JSON-schema outputs, retries, the request cache,
yes/no confidence from top log-probabilities, and what the calls cost."""
