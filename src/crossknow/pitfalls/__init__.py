"""Cross-Lingual Pitfalls: probing for questions that models answer in English but not in a target
language, in TextAttack's shape (an objective, a transformation, constraints and a search, each
passed in explicitly, and named recipes), plus evaluation of models on the pairs found.

Grouped by command: a command's code is in one folder, and a command folder imports the shared modules
at this level, never another command's folder (the `pitfalls-commands` contract of pyproject.toml).

- probe/: `pitfalls probe` (run.py): sources, the beam search, objective, transformations, constraints,
  recipes, the e5 and LLM-judge similarity checks.
- affinity/: `pitfalls expand` (expansion.py, expansion_records.py, seeds.py) and `pitfalls affinity`
  (run.py, ras.py: the Relative Affinity Score, embeddings.py).
- finetune/: `pitfalls finetune` (run.py): training examples, records, SFT and DPO training.
- categorize/: `pitfalls categorize` (run.py): reading pair files, the classifier, metrics.
- this level, shared: `pitfalls eval` itself (evaluation.py, eval_records.py: run by eval, probe, affinity
  and finetune), simulators (simulate.py), bilingual pair files and their flaws (flaws.py), the probe's
  pairs and candidate list (pairs.py, candidates.py), the categories stage (categories.py), and the proxy
  LLM with its translation of pairs and prompts (proxy.py, pair_translation.py, prompts.py).
"""
