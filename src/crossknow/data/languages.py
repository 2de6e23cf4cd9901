"""The one table of language names: ISO 639-1 code -> English name, as prompts, reports and release file names
write them. A code it lacks is an error naming the table, never a silent fallback to the code itself."""

from __future__ import annotations

from crossknow.errors import CrossknowError

LANGUAGE_NAMES: dict[str, str] = {
    "am": "Amharic",
    "ar": "Arabic",
    "bn": "Bengali",
    "de": "German",
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "pt": "Portuguese",
    "sw": "Swahili",
    "uk": "Ukrainian",
    "yo": "Yoruba",
    "zh": "Chinese",
    "zu": "Zulu",
}
"""The English name of every language a method of crossknow names (the three papers' languages)."""


def language_name(code: str, among: tuple[str, ...] | None = None, what: str = "crossknow") -> str:
    """The English name of `code`; a CrossknowError when the table lacks it or, with `among`, when `code` is not
    one of `among` (the languages of `what`: a release, a set of prompts)."""
    if among is not None and code not in among:
        raise CrossknowError(f"no language name for {code!r} in {what}: its languages are {', '.join(among)}")
    if code not in LANGUAGE_NAMES:
        raise CrossknowError(f"no language name for {code!r}: add it to crossknow.data.languages.LANGUAGE_NAMES "
                             f"(has: {', '.join(sorted(LANGUAGE_NAMES))})")
    return LANGUAGE_NAMES[code]


def language_code(name: str) -> str:
    """The code of the language whose English name is `name` (the inverse of `language_name`); a CrossknowError
    for a name the table lacks."""
    for code, known in LANGUAGE_NAMES.items():
        if known == name:
            return code
    raise CrossknowError(f"no language named {name!r} in crossknow.data.languages.LANGUAGE_NAMES")
