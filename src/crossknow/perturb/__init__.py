"""Perturbation analysis of training sequences (AdaXEval full paper, section 5.1; Appendix A.3).

`crossknow perturb` samples training sequences from a corpus and writes each original and its perturbations to
variants.jsonl, which `crossknow trace-sequences` scores at every checkpoint: token-level methods (`token_level`,
through `edits` and `synonyms`) and sentence-level ones (`sentence_level`, `rewrites`), run by `pipeline`.
"""
