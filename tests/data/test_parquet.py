
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from crossknow.data.parquet import read_parquet, write_parquet
from crossknow.data.pitfalls import read_pitfalls
from crossknow.data.schemas import MCItem, QAItem
from crossknow.errors import InputError

from ..conftest import SHARED_DATA as SHARED

needs_shared = pytest.mark.skipif(not SHARED.exists(), reason=f"{SHARED} is not present")

MC_ITEMS = [
    MCItem(
        id="cloze:1",
        lang="ja",
        kind="cloze",
        prompt="胆道癌は [BLANK] などに分類される。",
        options=["甲", "乙", "丙"],
        answer=2,
        metadata={"nested": {"a": [1, 2.5, None, True]}, "text": 'ü\n"q"', "big": 2**53 + 1},
    ),
    MCItem(
        id="question:1",
        lang="en",
        kind="question",
        prompt="Q?",
        options=["a", "b"],
        answer=0,
        source_lang="en",
        pair_id="p",
    ),
]


def test_mc_round_trip_is_exact(tmp_path):
    path = write_parquet(tmp_path / "mc.parquet", MC_ITEMS)
    item_set = read_parquet(path)
    assert item_set.items == MC_ITEMS
    assert item_set.format == "parquet" and item_set.name == "mc"
    table = pq.read_table(path)
    assert table.schema.field("options").type == pa.list_(pa.string())
    assert table.schema.field("metadata").type == pa.string()


def test_qa_round_trip_is_exact(tmp_path):
    items = [
        QAItem(
            id="1:en",
            lang="en",
            question="Who?",
            answer="Ann",
            context="ctx",
            source_lang="de",
            pair_id="1",
            metadata={"title": "T", "url": None},
        ),
        QAItem(id="1:de", lang="de", question="Wer?", answer="Anna"),
    ]
    assert read_parquet(write_parquet(tmp_path / "qa.parquet", items)).items == items


def test_limit_and_empty(tmp_path):
    assert (
        read_parquet(write_parquet(tmp_path / "mc.parquet", MC_ITEMS), limit=1).items
        == MC_ITEMS[:1]
    )
    assert read_parquet(write_parquet(tmp_path / "empty.parquet", [])).items == []


def test_mixed_item_types_are_refused(tmp_path):
    with pytest.raises(ValueError, match="one item type"):
        write_parquet(
            tmp_path / "x.parquet",
            [MC_ITEMS[0], QAItem(id="a", lang="en", question="q", answer="a")],
        )
    assert not (tmp_path / "x.parquet").exists()


def test_not_parquet_or_foreign_table_is_an_input_error(tmp_path):
    text = tmp_path / "text.parquet"
    text.write_text("hello")
    with pytest.raises(InputError, match="cannot read as Parquet"):
        read_parquet(text)
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"id": ["a"]}), foreign)
    with pytest.raises(InputError, match="not a crossknow item table"):
        read_parquet(foreign)


def test_bad_row_names_row_and_field(tmp_path):
    path = write_parquet(tmp_path / "mc.parquet", MC_ITEMS)
    table = pq.read_table(path)
    answers = pa.array([2, 5], pa.int64())
    pq.write_table(
        table.set_column(table.schema.get_field_index("answer"), "answer", answers), path
    )
    with pytest.raises(InputError) as info:
        read_parquet(path)
    assert (info.value.line, info.value.field) == (2, "answer")


@needs_shared
def test_real_items_round_trip(tmp_path):
    items = read_pitfalls(SHARED / "cross-lingual-pitfalls" / "Japanese.json").items
    assert read_parquet(write_parquet(tmp_path / "ja.parquet", items)).items == items
