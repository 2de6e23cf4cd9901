"""Appendix A.3.1's POS filter on a sentence checked by hand, the two dictionary formats (a tiny Japanese WordNet
built here with its real tables), and monosyn / mltsyn on a real abstract with the real tokenizer."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from crossknow.data.sequence_variants import SequenceVariant
from crossknow.data.sudachi import morphemes
from crossknow.errors import InputError
from crossknow.perturb.records import PerturbationFailure
from crossknow.perturb.sampling import Source
from crossknow.perturb.synonym_dictionary import SynonymDictionary, load_synonyms
from crossknow.perturb.synonyms import STOP_WORDS_JA, candidate_words, kept_tag, read_stop_words
from crossknow.perturb.token_level import TokenSettings, token_variants

from .test_edits import plain_levenshtein
from .test_token_level import expected_target

SENTENCE = "静かな東京で新しい酵素を発見し、研究チームは山道を走ることができた。"


def test_pos_filter_keeps_the_papers_tags_on_a_sentence_checked_by_hand() -> None:
    tags = {w.surface: kept_tag(w.pos) for w in morphemes(SENTENCE)}
    assert tags == {
        "静か": "形容動詞語幹",  # 形状詞-一般, IPADIC's 形容動詞語幹
        "な": None, "で": None, "を": None, "は": None, "が": None,  # particles and the copula
        "東京": "固有名詞",
        "新しい": None,  # 形容詞: not among the five
        "酵素": "普通名詞", "チーム": "普通名詞", "山道": "普通名詞", "こと": "普通名詞",
        "発見": "サ変接続", "研究": "サ変接続",  # 名詞-普通名詞-サ変可能
        "し": None, "でき": None,  # する and できる are 動詞-非自立可能, not 動詞-一般
        "走る": "動詞一般",
        "、": None, "た": None, "。": None,
    }
    kept = [w.surface for w in candidate_words(SENTENCE, STOP_WORDS_JA)]
    assert kept == ["静か", "東京", "酵素", "発見", "研究", "チーム", "山道", "走る"]  # こと is a stop word


def test_stop_words_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "stop.txt"
    path.write_text("# mine\n酵素\n\n 山道 \n", encoding="utf-8")
    stop = read_stop_words(path)
    assert stop == frozenset({"酵素", "山道"})
    kept = [w.surface for w in candidate_words(SENTENCE, stop)]
    assert kept == ["静か", "東京", "発見", "研究", "チーム", "走る", "こと"]


def write_wordnet(path: Path, synsets: dict[str, list[tuple[str, str]]]) -> Path:
    """A wnjpn.db with the real file's word, sense and synset tables, holding `synsets` (synset -> (lang, lemma))."""
    connection = sqlite3.connect(path)
    connection.executescript(
        "CREATE TABLE word (wordid integer primary key, lang text, lemma text, pron text, pos text);"
        "CREATE TABLE sense (synset text, wordid integer, lang text, rank text, lexid integer, freq integer, src text);"
        "CREATE TABLE synset (synset text, pos text, name text, src text);"
    )
    ids: dict[tuple[str, str], int] = {}
    for synset, words in synsets.items():
        connection.execute("INSERT INTO synset VALUES (?, 'n', ?, 'test')", (synset, synset))
        for lang, lemma in words:
            if (lang, lemma) not in ids:
                ids[(lang, lemma)] = connection.execute(
                    "INSERT INTO word (lang, lemma, pos) VALUES (?, ?, 'n')", (lang, lemma)).lastrowid
            connection.execute("INSERT INTO sense (synset, wordid, lang) VALUES (?, ?, ?)",
                                (synset, ids[(lang, lemma)], lang))
    connection.commit()
    connection.close()
    return path


WORDNET = {
    "03000001-n": [("jpn", "酵素"), ("jpn", "エンザイム"), ("eng", "enzyme")],
    "03000002-n": [("jpn", "阻害"), ("jpn", "抑制"), ("eng", "inhibition")],
    "03000003-n": [("jpn", "阻害"), ("jpn", "妨害"), ("eng", "interference")],
    "03000004-n": [("jpn", "血糖"), ("eng", "blood_sugar")],
}


def test_wordnet_synonyms_share_a_synset(tmp_path: Path) -> None:
    dictionary = load_synonyms(write_wordnet(tmp_path / "wnjpn.db", WORDNET))
    assert dictionary.synonyms("酵素", "ja", "ja") == ("エンザイム",)
    assert dictionary.synonyms("酵素", "ja", "en") == ("enzyme",)
    assert dictionary.synonyms("阻害", "ja", "ja") == ("妨害", "抑制")  # two synsets, sorted
    assert dictionary.synonyms("阻害", "ja", "en") == ("inhibition", "interference")
    assert dictionary.synonyms("血糖", "ja", "en") == ("blood sugar",)  # '_' read as a space
    assert dictionary.synonyms("細胞", "ja", "en") == ()


def test_a_wordnet_file_without_its_tables_is_named(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    connection = sqlite3.connect(path)
    connection.executescript("CREATE TABLE word (wordid integer, lang text, lemma text); CREATE TABLE x (y text);")
    connection.close()
    with pytest.raises(InputError, match="no table 'sense'") as caught:
        load_synonyms(path)
    assert caught.value.field == "sense"


@pytest.mark.parametrize(("column", "value"), [("lemma", b"\xe9\x85"), ("lemma", 7), ("lang", 3)])
def test_a_wordnet_word_that_is_not_text_is_named(tmp_path: Path, column: str, value: object) -> None:
    path = tmp_path / "wnjpn.db"
    connection = sqlite3.connect(path)
    connection.executescript("CREATE TABLE word (wordid integer primary key, lang, lemma);"
                             "CREATE TABLE sense (synset, wordid);")
    word = {"lang": "jpn", "lemma": "酵素"} | {column: value}
    connection.execute("INSERT INTO word VALUES (1, 'jpn', 'エンザイム'), (2, ?, ?)", (word["lang"], word["lemma"]))
    connection.execute("INSERT INTO sense VALUES ('s', 1), ('s', 2)")
    connection.commit()
    connection.close()
    with pytest.raises(InputError, match="wordid 2: expected text") as caught:
        load_synonyms(path)
    assert caught.value.field == f"word.{column}"


def test_tsv_dictionary_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "syn.tsv"
    good.write_text("lemma_lang\tlemma\tsynonym_lang\tsynonym\n# comment\nja\t酵素\tja\tエンザイム\n"
                    "ja\t酵素\ten\tenzyme\n", encoding="utf-8")
    dictionary = load_synonyms(good)
    assert dictionary.synonyms("酵素", "ja", "en") == ("enzyme",)
    assert dictionary.synonyms("enzyme", "en", "ja") == ()  # a line is one-way
    cases = [
        ("ja\t酵素\tenzyme\n", 1, None, "expected 4 tab-separated fields"),
        ("ja\t酵素\tja\tエンザイム\nja\t\tja\tx\n", 2, "lemma", "empty"),
        ("ja\t酵素\tJapanese!\tエンザイム\n", 1, "synonym_lang", "not a language tag"),
        ("# only a comment\n", None, None, "holds no entry"),
    ]
    for text, line, field, message in cases:
        bad = tmp_path / "bad.tsv"
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(InputError, match=message) as caught:
            load_synonyms(bad)
        assert (caught.value.line, caught.value.field) == (line, field)


SYNONYMS = {  # lemma -> (Japanese synonym, English synonym); each synonym belongs to one lemma only
    "酵素": ("エンザイム", "enzyme"), "阻害": ("抑制", "inhibition"), "植物": ("草木", "plant"),
    "細胞": ("セル", "cell"), "投与": ("投薬", "administration"), "関節": ("ジョイント", "joint"),
    "濃度": ("密度", "concentration"), "樹皮": ("木皮", "bark"), "選択的": ("選好的", "selective"),
}


@pytest.fixture
def tsv_dictionary(tmp_path: Path) -> SynonymDictionary:
    path = tmp_path / "syn.tsv"
    path.write_text("".join(f"ja\t{lemma}\tja\t{ja}\nja\t{lemma}\ten\t{en}\n" for lemma, (ja, en) in SYNONYMS.items()),
                    encoding="utf-8")
    return load_synonyms(path)


def normalised(text: str) -> str:
    """`text` with every dictionary word and each of its synonyms written as the lemma, longest first."""
    spellings = [(s, lemma) for lemma, pair in SYNONYMS.items() for s in (lemma, *pair)]
    spellings.sort(key=lambda p: -len(p[0]))
    pattern = re.compile("|".join(re.escape(s) for s, _ in spellings))
    names = dict(spellings)
    return pattern.sub(lambda m: f"<{names[m.group(0)]}>", text)


@pytest.mark.parametrize("method", ["monosyn", "mltsyn"])
def test_synonym_variants_on_a_real_abstract(method: str, ja_source: Source, tsv_dictionary: SynonymDictionary) -> None:
    config = TokenSettings(seed=0, x=[2, 4, 8, 16, 32], y=[1], vocabulary=None, dictionary=tsv_dictionary,
                           stop_words=STOP_WORDS_JA, cross_lang="en")
    lines = list(token_variants(ja_source, [method], config))
    n = len(ja_source.ids)
    variants = [v for v in lines if isinstance(v, SequenceVariant)]
    assert [v.x for v in variants] == [2, 4, 8, 16]  # 9 dictionary words cannot change 24 of 76 tokens
    for variant in variants:
        t = expected_target(n, variant.x)
        assert variant.edit_distance == plain_levenshtein(ja_source.ids, variant.token_ids)
        assert t <= variant.edit_distance <= t + 1
        # only dictionary words changed, each into its own synonym; their neighbours (を of を選択) unchanged
        assert normalised(variant.text) == normalised(ja_source.doc.text)
        latin = re.findall(r"[a-z]+", variant.text)
        assert bool(latin) == (method == "mltsyn")
        assert set(latin) <= {en for _, en in SYNONYMS.values()}
    [failure] = [f for f in lines if isinstance(f, PerturbationFailure)]
    assert failure.x == 32 and failure.reason.startswith("too few words with synonyms")


def test_synonym_variants_from_wordnet(tmp_path: Path, ja_source: Source) -> None:
    dictionary = load_synonyms(write_wordnet(tmp_path / "wnjpn.db", WORDNET))
    config = TokenSettings(seed=1, x=[2], y=[1], vocabulary=None, dictionary=dictionary, stop_words=STOP_WORDS_JA,
                           cross_lang="en")
    [variant] = token_variants(ja_source, ["mltsyn"], config)
    assert isinstance(variant, SequenceVariant)
    # f01-ja holds 酵素 and 阻害 once each; seed 1 draws 阻害 and its synonym "interference". 阻害 is two tokens
    # (阻, 害) and "interference" after に one, so the edit is one substitution and one deletion: distance 2, which
    # is also t = round-half-up(76 tokens x 2%).
    replaced = [(word, en) for word, en in (("酵素", "enzyme"), ("阻害", "inhibition"), ("阻害", "interference"))
                if en in variant.text and word not in variant.text]
    assert replaced == [("阻害", "interference")]
    assert len(ja_source.ids) == 76
    assert variant.edit_distance == plain_levenshtein(ja_source.ids, variant.token_ids) == 2
