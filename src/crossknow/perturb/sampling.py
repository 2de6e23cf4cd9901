"""The training sequences to perturb: a seeded sample of a corpus's documents of one language.

A training sequence is one corpus document (`crossknow.data.corpus`: id, lang, text), its tokens being what
the scorer scores for it (the model's tokens after BOS). The sample is drawn without replacement by
`random.Random(f"{seed}:perturb-sample:{lang}")` and kept in corpus order; asking for more sequences than
the corpus has of that language takes them all (the summary says how many there were).

With a minimum number of sentences (`min_sentences`, `crossknow.data.sentences.split_sentences`' sentences),
only documents that have that many are drawn: the seeded generator shuffles the documents and the first `n`
that qualify are taken, so that only as many documents are split as it takes. partial-a by sentences asks
for 4 (`PerturbConfig.min_sentences`): the paper only says it splits "each training sequence into four
segments" (full paper, section 5.1.2); the authors' code asserts at least 4 sentences for every sequence of
its sample.
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
