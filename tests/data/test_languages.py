"""The one language table: every language a method names, a loud error for any other code, and the Pitfalls
release's file stems derived from it."""

from __future__ import annotations

import pytest

from crossknow.data.eclektic import LANGUAGES as ECLEKTIC_LANGUAGES
from crossknow.data.languages import LANGUAGE_NAMES, language_code, language_name
from crossknow.data.pitfalls import LANGUAGE_CODES, RELEASE_LANGUAGES
from crossknow.errors import CrossknowError
from crossknow.perturb.prompts import LANGUAGES as PERTURB_LANGUAGES
from tests.conftest import SHARED_DATA


def test_every_methods_languages_are_named_and_names_are_unique():
    assert set(ECLEKTIC_LANGUAGES) | set(RELEASE_LANGUAGES) | set(PERTURB_LANGUAGES) <= set(LANGUAGE_NAMES)
    assert len(set(LANGUAGE_NAMES.values())) == len(LANGUAGE_NAMES)
    assert all(language_code(language_name(code)) == code for code in LANGUAGE_NAMES)


def test_an_unknown_code_or_name_is_an_error_not_a_fallback():
    with pytest.raises(CrossknowError, match="no language name for 'vi'.*crossknow.data.languages"):
        language_name("vi")
    with pytest.raises(CrossknowError, match="no language name for 'en' in the release: its languages are am"):
        language_name("en", RELEASE_LANGUAGES, "the release")
    with pytest.raises(CrossknowError, match="no language named 'Klingon'"):
        language_code("Klingon")


def test_the_release_file_stems_are_the_table_names_of_its_languages():
    """The release names its pair files by language (`Japanese.json`); the stems must be the table's names."""
    stems = {path.stem for path in (SHARED_DATA / "cross-lingual-pitfalls").glob("*.json")}
    stems = {stem for stem in stems if not stem.endswith("_results")}
    assert stems == set(LANGUAGE_CODES)
    assert LANGUAGE_CODES["Japanese"] == "ja" and LANGUAGE_CODES["Zulu"] == "zu"
