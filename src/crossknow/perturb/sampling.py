"""The training sequences to perturb: a seeded sample of a corpus's documents of one language.

A training sequence is one corpus document (`crossknow.data.corpus`: id, lang, text), its tokens being what
the scorer scores for it (the model's tokens after BOS). The sample is drawn without replacement by
`random.Random(f"{seed}:perturb-sample:{lang}")` and kept in corpus order; asking for more sequences than
the corpus has of that language takes them all (the summary says how many there were).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from crossknow.data.corpus import Document, read_corpus
from crossknow.errors import InputError
from crossknow.perturb.tokenizers import ModelTokens


def sample_documents(corpus: str | Path, lang: str, n: int, seed: int) -> list[Document]:
    """Up to `n` documents of language `lang` drawn with `seed`, in corpus order; InputError when there is none."""
    documents = [doc for doc in read_corpus(corpus) if doc.lang == lang]
    if not documents:
        raise InputError(corpus, f"no document in language {lang!r} (field lang)", field="lang")
    rng = random.Random(f"{seed}:perturb-sample:{lang}")
    chosen = sorted(rng.sample(range(len(documents)), min(n, len(documents))))
    return [documents[k] for k in chosen]


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
