"""The training sequences to perturb: a seeded sample of a corpus's documents of one language.

A training sequence is one corpus document; the sample is drawn without replacement by
`random.Random(f"{seed}:perturb-sample:{lang}")` and kept in corpus order. With `min_sentences` (4 for partial-a
by sentences: the authors' code asserts it, the paper says only "four segments"), only documents with that many
sentences are drawn.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from crossknow.data.corpus import Document, read_corpus
from crossknow.data.sentences import split_sentences
from crossknow.errors import InputError
from crossknow.perturb.tokenizers import ModelTokens


def sample_documents(corpus: str | Path, lang: str, n: int, seed: int, min_sentences: int = 0) -> list[Document]:
    """Up to `n` documents of language `lang` with at least `min_sentences` sentences, drawn with `seed`, in
    corpus order (module docstring); InputError when there is none."""
    documents = [doc for doc in read_corpus(corpus) if doc.lang == lang]
    if not documents:
        raise InputError(corpus, f"no document in language {lang!r} (field lang)", field="lang")
    rng = random.Random(f"{seed}:perturb-sample:{lang}")
    if min_sentences <= 1:
        chosen = sorted(rng.sample(range(len(documents)), min(n, len(documents))))
        return [documents[k] for k in chosen]
    chosen = []
    for k in rng.sample(range(len(documents)), len(documents)):
        if len(split_sentences(documents[k].text, lang)) >= min_sentences:
            chosen.append(k)
            if len(chosen) == n:
                break
    if not chosen:
        raise InputError(corpus, f"no document in language {lang!r} has {min_sentences} sentences or more, as "
                         "partial-a by sentences needs (--partial-unit tokens takes shorter ones)", field="text")
    return [documents[k] for k in sorted(chosen)]


@dataclass
class Source:
    """One sampled training sequence and its tokens."""

    doc: Document
    model: ModelTokens

    @cached_property
    def ids(self) -> list[int]:
        """The sequence's token ids after BOS, as scored."""
        return self.model.sequence_ids(self.doc.text)

    @cached_property
    def offsets(self) -> list[tuple[int, int]]:
        """The character span of the text each token of `ids` covers."""
        return self.model.offsets(self.doc.text, self.ids)
