"""AdaXEval dataset generation: multiple-choice sets (cloze, paraphrased question, cross-lingual) from a
bilingual corpus with LLMs, as resumable stages (split, NER filter, fact detection, query crafting,
distractors, quality filters, assembly). Entry point: `crossknow.adaxeval.pipeline.run_generate`."""
