"""The `hf:DIR` NER backend on tiny token-classification models built and saved here, offline.

Each model is a BERT token classifier with no encoder layer whose weights are set by hand: a word's
embedding is the pattern of the tag this test gives it, and the classifier's row of each label is
that label's pattern, so the model tags every word as the test says. The expected entities follow
from those tags alone (B- starts an entity, I- of the same type continues it, O is outside).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from crossknow.adaxeval.ner import make_ner, ner_rows  # noqa: E402
from crossknow.adaxeval.prompts import PromptTable  # noqa: E402
from crossknow.adaxeval.records import SentenceRecord  # noqa: E402
from crossknow.errors import CrossknowError  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LABELS = ["O", "B-Chem", "I-Chem"]
PATTERNS = {"O": [1.0, -1.0, 0.0, 0.0], "B-Chem": [0.0, 0.0, 1.0, -1.0], "I-Chem": [-1.0, 1.0, 0.0, 0.0]}
"""Zero-mean, so the embedding LayerNorm keeps each pattern's direction; the classifier picks the
label whose pattern matches."""


def _model(words: list[str], tags: dict[str, str], labels: list[str] = LABELS):
    """A BertForTokenClassification that tags each word of `words` with `tags.get(word, 'O')`."""
    config = transformers.BertConfig(
        vocab_size=len(words), hidden_size=4, num_hidden_layers=0, num_attention_heads=1, intermediate_size=4,
        max_position_embeddings=64, id2label=dict(enumerate(labels)), label2id={n: i for i, n in enumerate(labels)},
    )
    model = transformers.BertForTokenClassification(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.bert.embeddings.LayerNorm.weight.fill_(1.0)
        for index, word in enumerate(words):
            model.bert.embeddings.word_embeddings.weight[index] = torch.tensor(PATTERNS[tags.get(word, "O")])
        for index, label in enumerate(labels):
            model.classifier.weight[index] = torch.tensor(PATTERNS.get(label, PATTERNS["O"]))
    return model


def _english_model(directory: Path, labels: list[str] = LABELS) -> Path:
    """A lower-casing WordPiece tokenizer built with `tokenizers` (a fast tokenizer: offsets) and its model."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    words = [*SPECIALS, "insulin", "lowers", "blood", "glucose", "in", "diabetic", "patients", "."]
    vocab = {word: index for index, word in enumerate(words)}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
        mask_token="[MASK]",
    )
    tags = {"insulin": "B-Chem", "blood": "B-Chem", "glucose": "I-Chem"}
    _model(words, tags, labels).save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


def _sentence(text: str, lang: str = "en", index: int = 0) -> SentenceRecord:
    return SentenceRecord(id=f"d#{index}", doc_id="d", pair_id="p", lang=lang, index=index, text=text)


def _no_client(spec: str):
    pytest.fail("an hf: backend needs no generator")


def test_hf_backend_groups_tagged_tokens_into_the_sentences_own_text(tmp_path):
    backend = make_ner(f"hf:{_english_model(tmp_path / 'en')}", _no_client, PromptTable.load())
    sentences = [
        _sentence("Insulin lowers blood glucose in diabetic patients."),  # B | B I: two entities
        _sentence("Insulin lowers insulin.", index=1),  # one entity, twice
        _sentence("Diabetic patients.", index=2),  # no entity
    ]
    rows = ner_rows(backend, sentences)
    # the text comes from the sentence (capital I), not from the lower-cased tokens
    assert rows[0].record.entities == ["Insulin", "blood glucose"]
    assert [(r.status, r.note) for r in rows] == [
        ("kept", "2 entities"), ("dropped", "1 entities"), ("dropped", "0 entities")
    ]
    assert rows[0].record.ner == f"hf:{tmp_path / 'en'}"


def test_hf_backend_with_a_slow_japanese_tokenizer_joins_the_words_of_an_entity(tmp_path):
    """MedNERN-CR-JA's form: BertJapaneseTokenizer (MeCab words, then WordPiece), which gives no offsets."""
    pytest.importorskip("fugashi")
    pytest.importorskip("unidic_lite")
    directory = tmp_path / "ja"
    directory.mkdir()
    words = [*SPECIALS, "インスリン", "は", "血糖", "値", "を", "下げる", "。"]
    (directory / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    tokenizer = transformers.BertJapaneseTokenizer(
        str(directory / "vocab.txt"), word_tokenizer_type="mecab", subword_tokenizer_type="wordpiece",
        mecab_kwargs={"mecab_dic": "unidic_lite"},
    )
    assert tokenizer.tokenize("インスリンは血糖値を下げる。") == words[len(SPECIALS):]
    _model(words, {"インスリン": "B-Chem", "血糖": "B-Chem", "値": "I-Chem"}).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    backend = make_ner(f"hf:{directory}", _no_client, PromptTable.load())
    rows = ner_rows(backend, [_sentence("インスリンは血糖値を下げる。", lang="ja")])
    assert rows[0].record.entities == ["インスリン", "血糖値"] and rows[0].status == "kept"


def test_generic_or_outside_less_labels_are_refused_with_the_field_named(tmp_path):
    directory = _english_model(tmp_path / "generic", labels=["LABEL_0", "LABEL_1", "LABEL_2"])
    with pytest.raises(CrossknowError, match=r"config\.json: field 'id2label' names no labels"):
        make_ner(f"hf:{directory}", _no_client, PromptTable.load())
    config = json.loads((directory / "config.json").read_text())
    config["id2label"] = {"0": "Outside", "1": "B-Chem", "2": "I-Chem"}
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(CrossknowError, match="has no 'O' label"):
        make_ner(f"hf:{directory}", _no_client, PromptTable.load())


def test_a_missing_directory_or_model_is_a_clear_error(tmp_path):
    with pytest.raises(CrossknowError, match="is not a directory"):
        make_ner(f"hf:{tmp_path / 'absent'}", _no_client, PromptTable.load())
    with pytest.raises(CrossknowError, match="config.json not found"):
        make_ner(f"hf:{tmp_path}", _no_client, PromptTable.load())
