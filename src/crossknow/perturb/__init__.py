"""Perturbation analysis of training sequences (AdaXEval full paper, section 5.1; Appendix A.3).

`crossknow perturb` samples training sequences from a corpus and writes, for each, the original and its
perturbations as `SequenceVariant` lines of variants.jsonl (`crossknow.data.sequence_variants`), which
`crossknow trace-sequences` scores at every checkpoint. Modules:
- records: the config, failure and summary records;
- sampling: the seeded sample of sequences;
- tokenizers: the model's tokenizer (which makes and measures every variant) and random-X's vocabulary;
- edits: token edits applied until a target token edit distance, the distance measured (Levenshtein);
- token_level: mask-X, random-X, delete-X, reorder-X@Y, monosyn-X, mltsyn-X (section 5.1.1);
- synonyms, synonym_dictionary: Appendix A.3.1's Sudachi POS filter and the TSV / Japanese WordNet dictionaries;
- sentence_level, rewrites, prompts: partial-a and the syntax/lexicon/semantic/translation rewrites (5.1.2);
- completion_prompts: the rewrites asked of a base model (crossknow's few-shot form, English and Japanese);
- pipeline: `run_perturb`, the command's run directory.
"""
