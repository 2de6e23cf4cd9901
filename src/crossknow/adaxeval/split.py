"""Stage 'split': documents into sentences (`crossknow.data.sentences`, pysbd, Japanese-aware)."""

from __future__ import annotations

from crossknow.adaxeval.records import SentenceRecord
from crossknow.data.corpus import Document
from crossknow.data.sentences import split_sentences


def split_document(document: Document) -> list[SentenceRecord]:
    """The sentences of one paired document as records with ids '{doc_id}#{index}'."""
    pair_id = document.pair_id or ""
    return [
        SentenceRecord(
            id=f"{document.id}#{index}", doc_id=document.id, pair_id=pair_id, lang=document.lang, index=index,
            text=sentence,
        )
        for index, sentence in enumerate(split_sentences(document.text, document.lang))
    ]
