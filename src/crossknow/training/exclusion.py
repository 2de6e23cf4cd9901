"""The documents of the transfer corpus C_T: those in --transfer-langs, minus the evaluation documents.

Section 6.1(2) filters "any documents included in the AdaXEval evaluation dataset" out of C_T. Each --exclude-eval
set names its items' source documents (`metadata.docid`), which leave C_T with their translations (same
`pair_id`: crossknow's choice, since a translation carries the knowledge that section 6.1(1) keeps out of C_T).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from crossknow.data.adaxeval import source_documents
from crossknow.data.corpus import Document
from crossknow.data.hub_data import data_file
from crossknow.data.schemas import Record
from crossknow.errors import CrossknowError, InputError
from crossknow.training.records import TrainConfig

EXCLUDED_FILE = "transfer_excluded.json"
"""The run directory's record of the C_T documents left out (a TransferExclusion)."""


class TransferExclusion(Record):
    """transfer_excluded.json: the C_T documents left out because an evaluation set was generated from them."""

    eval_sets: dict[str, int] = Field(
        description="Each --exclude-eval file -> the distinct source documents (metadata.docid) its items name."
    )
    source_documents: int = Field(description="Distinct source documents the sets name, all together.")
    pairs: list[str] = Field(
        description="Pair ids of those documents, sorted: every C_T document of these pairs is left out."
    )
    excluded: list[str] = Field(description="Ids of the C_T documents left out, in C_T's order.")
    kept: int = Field(description="C_T documents kept (those in --transfer-langs, less the excluded).")


def _named_sources(paths: Sequence[str]) -> tuple[dict[str, tuple[str, int]], dict[str, int]]:
    """(document id -> (file, line) first naming it, file -> distinct documents it names)."""
    named: dict[str, tuple[str, int]] = {}
    per_set: dict[str, int] = {}
    for path in paths:
        documents = source_documents(data_file(path))
        per_set[path] = len(documents)
        for doc_id, line in documents.items():
            named.setdefault(doc_id, (path, line))
    return named, per_set


def transfer_documents(
    config: TrainConfig, knowledge_docs: Sequence[Document], transfer_docs: Sequence[Document]
) -> tuple[list[Document], TransferExclusion | None]:
    """C_T's documents in corpus order: those in `config.transfer_langs` (all when unset), less the source
    documents of the `config.exclude_eval` sets and their translations; and the record of what was left out
    (None without --exclude-eval).

    A source document is looked up in both corpora (`knowledge_docs` is the whole --corpus, every language),
    so an English item of a pair whose English side is only in C_K still takes the Japanese side out of C_T.
    A document that neither corpus holds raises InputError (file, line, field): the set was generated from
    another corpus, and leaving nothing out would let its knowledge into C_T unnoticed.
    """
    langs = config.transfer_langs
    chosen = [doc for doc in transfer_docs if langs is None or doc.lang in langs]
    if not chosen:
        raise CrossknowError(f"{config.transfer_corpus}: no documents in {', '.join(langs or [])}")
    if not config.exclude_eval:
        return chosen, None
    named, per_set = _named_sources(config.exclude_eval)
    corpora = [*knowledge_docs, *transfer_docs]
    known = {doc.id for doc in corpora}
    for doc_id, (path, line) in named.items():
        if doc_id not in known:
            raise InputError(path, f"document {doc_id!r} is in neither --corpus nor --transfer-corpus (was the "
                             "set generated from another corpus?)", line=line, field="metadata.docid")
    pairs = {doc.pair_id for doc in corpora if doc.id in named and doc.pair_id is not None}
    excluded = [doc.id for doc in chosen if doc.id in named or doc.pair_id in pairs]
    left_out = set(excluded)
    kept = [doc for doc in chosen if doc.id not in left_out]
    if not kept:
        raise CrossknowError(f"{config.transfer_corpus}: every document is an evaluation document or a "
                             "translation of one; nothing is left for C_T")
    record = TransferExclusion(eval_sets=per_set, source_documents=len(named), pairs=sorted(pairs),
                               excluded=excluded, kept=len(kept))
    return kept, record
