"""The prompts of the sentence rewrites syntax-X, lexicon-X, semantic-X and translation-X (section 5.1.2).

The paper gives no prompts (it says only that the paraphrasing and translation were done by requesting
GPT-4.1, Appendix A.3.1), so these are crossknow's own wording, written from the paper's one-line
definitions of the four patterns. One sentence is rewritten per request, without its document (crossknow's
choice); the answer is a JSON object {"sentence": "..."}.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator

from crossknow.data import languages
from crossknow.generation.ask import ChatPrompt

LANGUAGES = ("en", "ja", "zh", "ko", "de", "fr", "es")
"""The languages the rewrite prompts can name."""

SYSTEM = "You rewrite single sentences exactly as instructed. Answer with a JSON object {\"sentence\": \"...\"}."

INSTRUCTIONS = {
    "syntax": (
        "Rewrite the following {lang} sentence by changing only its syntax: reorder its phrases, change active to "
        "passive voice or back, or restructure its clauses. Keep every word of it: do not replace any word with "
        "another word. Keep the meaning. Write the result in {lang}."
    ),
    "lexicon": (
        "Rewrite the following {lang} sentence by changing only its vocabulary: replace its words with synonyms or "
        "equivalent expressions, keeping the sentence structure and the order of its phrases unchanged. Keep the "
        "meaning. Write the result in {lang}."
    ),
    "semantic": (
        "Paraphrase the following {lang} sentence: you may change both its structure and its words, but keep its "
        "meaning and every fact it states. Write the result in {lang}."
    ),
    "translation": (
        "Translate the following {lang} sentence into {target}. Keep its meaning and every fact it states."
    ),
}
"""One instruction per rewrite pattern: {lang} is the sentence's language, {target} translation's target."""

USER = "{instruction}\n\nSentence: {sentence}\n\nAnswer with a JSON object whose field \"sentence\" holds the result."


class Rewrite(BaseModel):
    """The generator's answer: the rewritten sentence."""

    sentence: str = Field(description="The rewritten sentence.")

    @field_validator("sentence")
    @classmethod
    def _not_blank(cls, sentence: str) -> str:
        if not sentence.strip():
            raise ValueError("the rewritten sentence is empty")
        return sentence.strip()


def language_name(lang: str) -> str:
    """The English name of `lang`; CrossknowError when the prompts name no such language."""
    return languages.language_name(lang, LANGUAGES, "the rewrite prompts")


def rewrite_prompt(style: str, sentence: str, lang: str, target_lang: str) -> ChatPrompt:
    """The request that rewrites `sentence` (in `lang`) in `style`; `target_lang` is translation's target."""
    instruction = INSTRUCTIONS[style].format(lang=language_name(lang), target=language_name(target_lang))
    return ChatPrompt(SYSTEM, USER.format(instruction=instruction, sentence=sentence))
