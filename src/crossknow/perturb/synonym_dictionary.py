"""Synonym dictionaries for monosyn-X and mltsyn-X: a TSV the user writes (`lemma_lang`, `lemma`, `synonym_lang`,
`synonym`; one-way), or Japanese WordNet's SQLite file (wnjpn.db, the paper's "Japanese WordNet 2.0"), in which two
words are synonyms when a synset holds both. The formats in full: docs/adaxeval.md.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from pathlib import Path

from crossknow.data.guarded import iter_text_lines, read_head
from crossknow.data.schemas import LANGUAGE_TAG
from crossknow.errors import InputError

TSV_COLUMNS = ("lemma_lang", "lemma", "synonym_lang", "synonym")
"""The columns of a TSV dictionary."""
WORDNET_TABLES = {"word": ("wordid", "lang", "lemma"), "sense": ("synset", "wordid")}
"""The tables and columns read from a WordNet SQLite file."""
WORDNET_LANGS = {"jpn": "ja", "eng": "en"}
"""wnjpn's language codes -> the codes crossknow uses (others are kept as they are)."""
SQLITE_MAGIC = b"SQLite format 3\x00"


class SynonymDictionary:
    """Synonyms by (language, lemma): groups of words that are synonyms of the words that index them."""

    def __init__(self, source: str, index: dict[tuple[str, str], list[str]], members: dict[str, list[tuple[str, str]]]):
        self.source = source
        self._index = index
        """(language, lemma) -> the groups it belongs to (WordNet synsets; for a TSV, the lemma's own group)."""
        self._members = members
        """group -> its (language, word) members."""
        self._found: dict[tuple[str, str, str], tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self._index)

    def synonyms(self, lemma: str, lang: str, synonym_lang: str) -> tuple[str, ...]:
        """The distinct synonyms of `lemma` (in `lang`) in language `synonym_lang`, sorted; never `lemma` itself."""
        key = (lemma, lang, synonym_lang)
        if key not in self._found:
            self._found[key] = tuple(sorted({
                word for group in self._index.get((lang, lemma), ()) for word_lang, word in self._members[group]
                if word_lang == synonym_lang and word != lemma
            }))
        return self._found[key]


def load_synonyms(path: str | Path) -> SynonymDictionary:
    """The dictionary in `path`: a Japanese WordNet SQLite file (recognised by its header) or a TSV."""
    path = Path(path)
    dictionary = _read_wordnet(path) if read_head(path, len(SQLITE_MAGIC)) == SQLITE_MAGIC else _read_tsv(path)
    if not len(dictionary):
        raise InputError(path, "the synonym dictionary holds no entry")
    return dictionary


def _read_tsv(path: Path) -> SynonymDictionary:
    groups: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    seen_data = False
    for number, text in iter_text_lines(path):
        line = text.rstrip("\r\n")
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if not seen_data and tuple(f.strip() for f in fields) == TSV_COLUMNS:
            seen_data = True
            continue
        seen_data = True
        if len(fields) != len(TSV_COLUMNS):
            raise InputError(path, f"expected {len(TSV_COLUMNS)} tab-separated fields ({', '.join(TSV_COLUMNS)}), "
                             f"found {len(fields)}", line=number)
        values = dict(zip(TSV_COLUMNS, (f.strip() for f in fields), strict=True))
        for column, value in values.items():
            if not value:
                raise InputError(path, "empty", line=number, field=column)
            if column.endswith("_lang") and not LANGUAGE_TAG.match(value):
                raise InputError(path, f"{value!r} is not a language tag (like 'ja' or 'en')", line=number,
                                 field=column)
        groups[(values["lemma_lang"], values["lemma"])].append((values["synonym_lang"], values["synonym"]))
    index = {key: [f"{key[0]}:{key[1]}"] for key in groups}
    return SynonymDictionary(str(path), index, {f"{key[0]}:{key[1]}": words for key, words in groups.items()})


def _read_wordnet(path: Path) -> SynonymDictionary:
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise InputError(path, f"cannot open the WordNet file: {error}") from error
    try:
        for table, columns in WORDNET_TABLES.items():
            present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
            if not present:
                raise InputError(path, f"not a Japanese WordNet file: it has no table {table!r}", field=table)
            for column in columns:
                if column not in present:
                    raise InputError(path, f"not a Japanese WordNet file: table {table!r} has no column {column!r}",
                                     field=f"{table}.{column}")
        words = {
            wordid: (WORDNET_LANGS.get(lang, lang), lemma.replace("_", " ") if lang == "eng" else lemma)
            for wordid, lang, lemma in connection.execute("SELECT wordid, lang, lemma FROM word")
            if _text_word(path, wordid, lang, lemma)
        }
        index: dict[tuple[str, str], list[str]] = defaultdict(list)
        members: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for synset, wordid in connection.execute("SELECT synset, wordid FROM sense"):
            word = words.get(wordid)
            if word is not None and synset is not None:
                index[word].append(synset)
                members[synset].append(word)
    except sqlite3.Error as error:
        raise InputError(path, f"cannot read the WordNet file: {error}") from error
    finally:
        connection.close()
    return SynonymDictionary(str(path), dict(index), dict(members))


def _text_word(path: Path, wordid: object, lang: object, lemma: object) -> bool:
    """Whether a row of WordNet's `word` table holds a word (a NULL or empty one is skipped); InputError
    naming the column when it holds something other than text (a BLOB, a number)."""
    for column, value in (("lang", lang), ("lemma", lemma)):
        if value is not None and not isinstance(value, str):
            found = "a BLOB" if isinstance(value, bytes) else f"a number ({value})"
            raise InputError(path, f"the row of wordid {wordid}: expected text, found {found}",
                             field=f"word.{column}")
    return lang is not None and bool(lemma)
