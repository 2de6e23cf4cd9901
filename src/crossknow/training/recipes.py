"""Training corpora of section 6.1: the knowledge-injection corpus C_K and the transfer corpus C_T.

C_K holds the target knowledge in the training language(s); C_T holds no new knowledge and only
links the languages. C_T may be built from the corpus C_K comes from: its documents are chosen, and the
evaluation documents left out, by `crossknow.training.exclusion.transfer_documents` before the recipe
runs. The two parts are sampled to their token budgets and mixed by `crossknow.training.budget`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from crossknow.errors import CrossknowError, MissingDependencyError
from crossknow.training.instructions import LANGUAGE_WORDS, reading_comprehension
from crossknow.training.records import Part, TrainConfig, TrainingExample
from crossknow.training.templates import TemplateTable, fill


def pair_id(doc: Any) -> str | None:
    """The id shared by a document and its translations, if any."""
    return doc.metadata.get("pair_id")


@lru_cache(maxsize=1)
def _romaniser() -> Any:
    try:
        import cutlet
    except ImportError as error:
        raise MissingDependencyError("cutlet", "text", "romanisation") from error
    return cutlet.Cutlet()


def romanise(text: str) -> str:
    """Japanese text in Hepburn romaji, as cutlet writes it (the paper's tool)."""
    return _romaniser().romaji(text)


def _partners(docs: Sequence[Any]) -> dict[str, dict[str, Any]]:
    by_pair: dict[str, dict[str, Any]] = {}
    for doc in docs:
        if pair_id(doc):
            by_pair.setdefault(pair_id(doc), {})[doc.lang] = doc
    return by_pair


def _partner(doc: Any, by_pair: dict[str, dict[str, Any]]) -> Any | None:
    others = [d for lang, d in sorted(by_pair.get(pair_id(doc) or "", {}).items()) if lang != doc.lang]
    return others[0] if others else None


def knowledge_examples(config: TrainConfig, docs: Sequence[Any], table: TemplateTable) -> list[TrainingExample]:
    """C_K: the documents in `config.langs`, plus their reading-comprehension instructions under 'instruction'
    (the recipe's question-answer texts, one per pair, are added by `crossknow.training.qa_pairs.qa_examples`).

    A translation instruction is built only when both documents of a pair are in `config.langs`, so
    training on English alone never shows the model the Japanese text.
    """
    chosen = [doc for doc in docs if doc.lang in config.langs]
    if not chosen:
        raise CrossknowError(f"{config.corpus}: no documents in {', '.join(config.langs)}")
    by_pair = _partners(chosen)
    examples = []
    for doc in chosen:
        examples.append(TrainingExample(id=f"{doc.id}:document", part="knowledge", kind="document", doc_id=doc.id,
                                        template_index=None, text=doc.text))
        if config.recipe == "instruction":
            for ins in reading_comprehension(doc, _partner(doc, by_pair), table, config.seed):
                examples.append(TrainingExample(id=f"{doc.id}:{ins.type}", part="knowledge", kind=ins.type,
                                                doc_id=doc.id, template_index=ins.template_index, text=ins.text))
    return examples


def _instruction(kind: str, doc: Any, table: TemplateTable, seed: int, values: dict[str, str]) -> TrainingExample:
    picked = table.pick(kind, doc.lang, random.Random(f"{seed}:{doc.id}:{kind}"))
    return TrainingExample(id=f"{doc.id}:{kind}", part="transfer", kind=kind, doc_id=doc.id,
                           template_index=picked.index, text=fill(picked, values))


def transfer_examples(config: TrainConfig, docs: Sequence[Any], table: TemplateTable) -> list[TrainingExample]:
    """C_T under `config.transfer_recipe`.

    - documents: every document as it is (e.g. the paper's Medical-Japanese baseline);
    - translation: for every pair with English and Japanese, one instruction each way (Medical-Translation);
    - romanisation: every Japanese document in romaji -> in Japanese script (Medical-Roman);
    - roman2en: every pair's Japanese text in romaji -> its English text, and its English text -> the
      Japanese in romaji; the instruction is written in the source text's language;
    - roman2en_native: every pair's Japanese text in romaji -> its English text, and the same romaji -> the
      Japanese script (the romanisation instruction), both from the Japanese document.

    roman2en follows the paper's wording of Medical-Roman2En ("translation instructions between romanized Japanese
    and English", section 6.1(2): no direction, so both); roman2en_native is the other reading (docs/adaxeval.md).
    """
    recipe = config.transfer_recipe
    if recipe == "documents":
        return [TrainingExample(id=f"{d.id}:document", part="transfer", kind="document", doc_id=d.id,
                                template_index=None, text=d.text) for d in docs]
    by_pair = _partners(docs)
    examples = []
    for doc in docs:
        partner = _partner(doc, by_pair)
        if recipe == "translation" and partner is not None:
            names = LANGUAGE_WORDS.get(doc.lang)
            if names is None:
                raise CrossknowError(f"no language names for {doc.lang!r}: add them to LANGUAGE_WORDS")
            examples.append(_instruction("translation", doc, table, config.seed, {
                "source_lang": names[doc.lang], "target_lang": names[partner.lang],
                "source": doc.text, "target": partner.text}))
        elif recipe == "romanisation" and doc.lang == "ja":
            examples.append(_instruction("romanisation", doc, table, config.seed,
                                         {"romaji": romanise(doc.text), "text": doc.text}))
        elif recipe.startswith("roman2en") and partner is not None and {doc.lang, partner.lang} == {"ja", "en"}:
            japanese, english = (doc, partner) if doc.lang == "ja" else (partner, doc)
            if recipe == "roman2en" or doc.lang == "ja":
                romaji = romanise(japanese.text)
                examples.append(_instruction("roman2en", doc, table, config.seed,
                                             {"romaji": romaji, "english": english.text}))
            if recipe == "roman2en_native" and doc.lang == "ja":
                examples.append(_instruction("romanisation", doc, table, config.seed,
                                             {"romaji": romaji, "text": doc.text}))
    if not examples:
        raise CrossknowError(f"{config.transfer_corpus}: the {recipe!r} recipe built no examples from it")
    return examples


def build_parts(
    config: TrainConfig, knowledge_docs: Sequence[Any], transfer_docs: Sequence[Any], table: TemplateTable
) -> dict[Part, list[TrainingExample]]:
    """C_K and C_T (when a transfer recipe is set) as built, in corpus order, by part.

    `transfer_docs` are C_T's documents as `transfer_documents` chose them (the evaluation documents out).
    """
    parts: dict[Part, list[TrainingExample]] = {"knowledge": knowledge_examples(config, knowledge_docs, table)}
    if config.transfer_recipe != "none":
        parts["transfer"] = transfer_examples(config, transfer_docs, table)
    return parts
