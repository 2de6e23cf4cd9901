"""The per-language prompt table: complete for en and ja, loud about anything missing, easy to extend."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossknow.adaxeval.prompts import TASKS, PromptTable
from crossknow.errors import CrossknowError, InputError

PACKAGED = Path(__file__).resolve().parents[2] / "src" / "crossknow" / "adaxeval" / "prompts"


def test_english_and_japanese_have_every_task():
    table = PromptTable.load()
    assert {"en", "ja"} <= set(table.languages)
    table.check(["en", "ja"])
    prompt = table.render("facts", "ja", sentence="インスリンは血糖値を下げる。")
    assert prompt.system is None and prompt.user.endswith("文: インスリンは血糖値を下げる。")
    assert '{"factuality": "yes"' in prompt.user and '"reasoning": "' in prompt.user  # JSON needs no escaping
    assert table.language_name("ja", "en") == "英語"


def test_content_free_prompts_empty_every_input_but_the_kept_ones():
    table = PromptTable.load()
    prompts = table.render_content_free("judge_cross_language", "en", other_language="Japanese")
    asked = [p.text.rsplit("\n\n", 1)[-1] for p in prompts]  # the asked block, after the shots
    assert asked == [f"Japanese document: {e}\nQuestion: {e}\nAnswer: {e}\nStates the fact:"
                     for e in ("N/A", "", "[MASK]")]
    full = table.render_completion("judge_cross_language", "en", other_language="Japanese", document="D",
                                   question="Q", answer="A")
    assert prompts[0].text.rsplit("\n\n", 1)[0] == full.text.rsplit("\n\n", 1)[0]  # the same shots


def test_every_task_renders_with_its_placeholders():
    """Each packaged prompt shows every input its task is given (a prompt that left one out would ask the model
    about a sentence, a cloze or an answer it never sees), and no placeholder is left unfilled."""
    table = PromptTable.load()
    for lang in ("en", "ja"):
        for task, names in TASKS.items():
            values = {name: f"<{name}>" for name in names}
            text = table.render(task, lang, **values).user
            assert "$" not in text, (lang, task)
            assert [name for name in sorted(names) if f"<{name}>" not in text] == [], (lang, task)


def test_missing_language_and_missing_task_fail_loudly(tmp_path):
    table = PromptTable.load()
    with pytest.raises(CrossknowError, match="no AdaXEval prompts for language 'de'.*--prompts"):
        table.check(["en", "de"])
    (tmp_path / "de.yaml").write_text(
        "language: de\nnames: {en: Englisch, de: Deutsch}\ntasks:\n  facts: 'Satz: $sentence'\n", encoding="utf-8"
    )
    extended = PromptTable.load(tmp_path)
    assert extended.render("facts", "de", sentence="X").user == "Satz: X"
    with pytest.raises(CrossknowError, match=r"de\.yaml: no prompt for task 'ner'"):
        extended.check(["de"])
    with pytest.raises(CrossknowError, match="no name for language 'de'"):
        extended.check(["en", "de"])


@pytest.mark.parametrize(
    ("content", "field", "words"),
    [
        ("language: de\nnames: {}\ntasks:\n  facts: 'Satz: $satz'\n", "tasks.facts",
         "unknown placeholder(s) $satz; this task has: $sentence"),
        ("language: de\nnames: {}\ntasks:\n  fakts: 'x'\n", "tasks.fakts", "unknown task (tasks: ner, facts, "),
        ("language: fr\nnames: {}\ntasks: {}\n", "language", "the file of language 'fr' must be named fr.yaml"),
        ("language: de\nnames: {}\ntasks:\n  facts: 'costs $ 5 $sentence'\n", "tasks.facts",
         "a lone '$' (write $$ for a dollar sign)"),
        ("- a list\n", None, "expected a mapping with language, names and tasks"),
    ],
)
def test_malformed_prompt_files_name_the_file_and_field(tmp_path, content, field, words):
    """The file, the field at fault and the problem, each checked on its own: the path alone would match any
    error about this file."""
    path = tmp_path / "de.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        PromptTable.load(tmp_path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), None, field)
    where = f"{path}: " + (f"field '{field}': " if field else "")
    assert str(caught.value).startswith(where + words)


def test_a_replaced_language_changes_the_digest(tmp_path):
    base = PromptTable.load()
    packaged = (PACKAGED / "en.yaml").read_text(encoding="utf-8")
    assert "Decide whether" in packaged  # else the copy below would be unchanged
    (tmp_path / "en.yaml").write_text(packaged.replace("Decide whether", "Judge whether"), encoding="utf-8")
    changed = PromptTable.load(tmp_path)
    assert base.digest(["en", "ja"]) != changed.digest(["en", "ja"])
    assert base.digest(["ja"]) == changed.digest(["ja"])


def test_render_needs_every_value():
    with pytest.raises(CrossknowError, match="needs values for: object, relation"):
        PromptTable.load().render("cloze", "en", sentence="s", subject="x")


def test_the_examples_answer_in_the_field_order_each_prompt_asks_for():
    table = PromptTable.load()
    openings = {"facts": '{"factuality": "', "facts_reasoning_first": '{"reasoning": "', "cloze": '{"reasoning": "',
                "paraphrase": '{"reasoning": "', "triple": '{"subject": "'}  # fact detection: A.1's order by default
    for lang in ("en", "ja"):
        for task, opening in openings.items():
            text = table.template(task, lang)
            examples = [line for line in text.splitlines() if line.startswith("{")]
            assert examples and all(line.startswith(opening) for line in examples), (lang, task)
