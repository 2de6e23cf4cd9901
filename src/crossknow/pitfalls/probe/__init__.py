"""`crossknow pitfalls probe`: sources drawn and prefiltered, then a recipe's beam search over perturbed pairs
(objective, transformations, constraints, recipes, e5 and LLM-judge similarity); `run.py` is the command."""
