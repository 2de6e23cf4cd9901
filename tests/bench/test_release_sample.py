"""bench/release_sample.py: a seeded sample of release files, ids made unique across files."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from release_sample import sample_release  # noqa: E402

from crossknow.data.formats import load_item_set  # noqa: E402
from crossknow.data.jsonl import write_jsonl  # noqa: E402


def _release_file(path: Path, n: int, lang: str) -> Path:
    """n release records, ids shared between the languages as in the real release."""
    question = "Xは[BLANK]である。" if lang == "ja" else "X is [BLANK]."
    lines = [json.dumps({"id": f"doc@@{i}_sentid:0", "question": question.replace("X", f"X{i}"),
                         "options": [f"a{i}", f"b{i}", f"c{i}", f"d{i}"], "answer_idx": i % 4,
                         "metadata": {"docid": f"doc@@{i}"}}, ensure_ascii=False) for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_seeded_sample_of_each_file_with_unique_ids(tmp_path):
    files = [_release_file(tmp_path / "en_knowledge_memorization.jsonl", 30, "en"),
             _release_file(tmp_path / "ja_knowledge_memorization.jsonl", 3, "ja")]
    sample = sample_release(files, 5, seed=0)
    assert [item.id.split(":")[0] for item in sample] == ["en_knowledge_memorization"] * 5 + [
        "ja_knowledge_memorization"] * 3  # all of the smaller file
    assert len({item.id for item in sample}) == 8
    assert [item.lang for item in sample] == ["en"] * 5 + ["ja"] * 3
    again, other = sample_release(files, 5, seed=0), sample_release(files, 5, seed=1)
    assert again == sample and [i.id for i in other] != [i.id for i in sample]
    # an item keeps its text, options and answer; the written file reads back as the same items
    first = sample[0]
    number = int(first.id.split("@@")[1].split("_")[0])
    assert (first.prompt, first.options[first.answer]) == (f"X{number} is [BLANK].", f"{'abcd'[number % 4]}{number}")
    assert load_item_set(write_jsonl(tmp_path / "sample.jsonl", sample)).items == sample
