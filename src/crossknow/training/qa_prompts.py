"""The prompts that ask for the instruction recipe's question-answer pairs (crossknow's wording: Appendix
A.4.1(2) gives none), one set per document language.

chat: one request per document asks for `n` pairs as JSON (`QA_PROMPTS`); fields (base models): few-shot prompts
of one short field per call, a question (`question_prompt`), then its answer (`answer_prompt`), with invented
examples (`FEW_SHOT`) that an output must not repeat (`echoes_example`). Both ask for what `qa_checks` checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crossknow.errors import CrossknowError
from crossknow.generation.ask import ChatPrompt, CompletionPrompt

QA_PROMPTS: dict[str, str] = {
    "en": (
        "Read the document below and write {n} question-answer pairs that teach the knowledge it states. Each "
        "question must make sense on its own to a reader who has never seen the document: name the disease, drug, "
        "method, place or people it asks about, and never refer to the document itself (no \"the study\", \"this "
        "paper\", \"the text\", \"the authors\"). Each answer must be a complete sentence that states the fact in "
        "your own words, not a few words copied from the document. Reply with JSON only: an object whose key "
        '"pairs" holds a list of objects, each with the keys "question" and "answer".\n\nDocument:\n{document}'
    ),
    "ja": (
        "次の文書を読み、そこに書かれている知識を学ぶための質問と回答の組を{n}個作成してください。どの質問も、文書を"
        "読んだことのない人にそれだけで意味が通じるものにし、尋ねている病気、薬、方法、場所、人物などを名前で示して"
        "ください。「本研究」「この論文」「本文」「著者」のように文書そのものを指す言葉は使わないでください。回答は、"
        "文書から数語を抜き出すのではなく、事実を自分の言葉で述べた完全な文にしてください。"
        'JSONだけを返してください。キー "pairs" に、キー "question" と "answer" を持つオブジェクトのリストを入れます。'
        "\n\n文書：\n{document}"
    ),
}
"""The chat prompt per document language; {n} pairs, {document} the text."""

QA_LINES: dict[str, tuple[str, str]] = {"en": ("Question: ", "Answer: "), "ja": ("質問：", "回答：")}
"""What starts a question and an answer, in the training texts and the few-shot prompts, per document language."""


@dataclass(frozen=True)
class FewShot:
    """The few-shot prompts' wording in one language."""

    document_label: str
    """What starts a document."""
    question_heading: str
    """The first line of a question prompt."""
    answer_heading: str
    """The first line of an answer prompt."""
    examples: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    """(invented document, its (question, answer) pairs)."""


FEW_SHOT: dict[str, FewShot] = {
    "en": FewShot(
        document_label="Document: ",
        question_heading="Knowledge questions written from documents. Each question makes sense without its document: "
        "it names what it asks about.",
        answer_heading="Knowledge questions answered from documents. Each answer is a complete sentence that states "
        "the fact in its own words.",
        examples=(
            ("The Varenne bridge over the Ossel river was finished in 1912. Its engineer, Lise Marnot, built it of "
             "reinforced concrete, which was new in the region at the time.", (
                 ("Who built the Varenne bridge over the Ossel river, and from what material?",
                  "The engineer Lise Marnot built the Varenne bridge of reinforced concrete, a material then new in "
                  "the region."),
                 ("When was the Varenne bridge over the Ossel river finished?",
                  "Work on the Varenne bridge across the Ossel river ended in 1912."))),
            ("In the Tolland valley, marsh fever is treated with an infusion of willow bark. In a survey of 40 "
             "patients, the fever fell within two days in 31 of them.", (
                 ("How is marsh fever treated in the Tolland valley?",
                  "Marsh fever in the Tolland valley is treated with a willow-bark infusion, which brought the fever "
                  "down within two days in 31 of 40 surveyed patients."),
                 ("How quickly does a willow-bark infusion bring down marsh fever?",
                  "A willow-bark infusion lowered marsh fever within two days for 31 of 40 patients surveyed in the "
                  "Tolland valley."))),
        ),
    ),
    "ja": FewShot(
        document_label="文書：",
        question_heading="文書から作った知識の質問。どの質問も文書なしで意味が通じるように、尋ねる対象を名前で示している。",
        answer_heading="文書にもとづいて答えた知識の質問。どの回答も、事実を自分の言葉で述べた完全な文である。",
        examples=(
            ("ヴァレンヌ橋はオセル川に架かる橋で、1912年に完成した。技師のリーズ・マルノが、当時この地域では新しかった"
             "鉄筋コンクリートで建設した。", (
                 ("オセル川のヴァレンヌ橋は、誰が何を用いて建設したか。",
                  "オセル川のヴァレンヌ橋は、技師リーズ・マルノが、当時その地域で新しい材料だった鉄筋コンクリートを用いて"
                  "建設した。"),
                 ("オセル川に架かるヴァレンヌ橋が完成したのはいつか。",
                  "オセル川に架かるヴァレンヌ橋は1912年に完成した。"))),
            ("トーランド渓谷では、湿地熱の治療に柳の樹皮の煎じ薬が用いられる。患者40人の調査では、31人で2日以内に熱が"
             "下がった。", (
                 ("トーランド渓谷では、湿地熱をどのように治療するか。",
                  "トーランド渓谷では湿地熱の治療に柳の樹皮の煎じ薬を用い、調査した患者40人中31人で2日以内に熱が"
                  "下がった。"),
                 ("柳の樹皮の煎じ薬で、湿地熱はどのくらいで下がるか。",
                  "トーランド渓谷の調査では、柳の樹皮の煎じ薬で患者40人中31人の湿地熱が2日以内に下がった。"))),
        ),
    ),
}
"""The few-shot wording and examples per document language (the examples are invented, to be recognised if echoed)."""


def language_entry(table: dict[str, Any], lang: str, what: str) -> Any:
    """`table[lang]`, or an error that names the table to extend."""
    if lang not in table:
        raise CrossknowError(f"no question-answer {what} for language {lang!r} (has: {', '.join(table)}); add one "
                             f"to crossknow.training.qa_prompts to extend the recipe to {lang!r}")
    return table[lang]


def qa_prompt(doc: Any, n: int) -> ChatPrompt:
    """The chat prompt that asks for `n` pairs about `doc`, in its language (no system message)."""
    return ChatPrompt(None, language_entry(QA_PROMPTS, doc.lang, "prompt").format(n=n, document=doc.text))


def field_stops(lang: str) -> tuple[str, ...]:
    """Where a few-shot field ends: a blank line, or a new line that starts the next question or document."""
    shot = language_entry(FEW_SHOT, lang, "few-shot prompt")
    return ("\n\n", "\n" + QA_LINES[lang][0].strip(), "\n" + shot.document_label.strip())


def question_prompt(doc: Any, asked: Sequence[str]) -> CompletionPrompt:
    """The few-shot prompt for one more question about `doc`, after the questions already `asked` about it."""
    shot = language_entry(FEW_SHOT, doc.lang, "few-shot prompt")
    question = QA_LINES[doc.lang][0]
    blocks = [shot.question_heading]
    for document, pairs in shot.examples:
        blocks.append("\n".join([shot.document_label + document, *(question + q for q, _ in pairs)]))
    blocks.append("\n".join([shot.document_label + doc.text, *(question + q for q in asked), question.rstrip()]))
    return CompletionPrompt("\n\n".join(blocks), field_stops(doc.lang))


def answer_prompt(doc: Any, question_text: str) -> CompletionPrompt:
    """The few-shot prompt for the answer to `question_text` about `doc`."""
    shot = language_entry(FEW_SHOT, doc.lang, "few-shot prompt")
    question, answer = QA_LINES[doc.lang]
    blocks = [shot.answer_heading]
    for document, pairs in shot.examples:
        q, a = pairs[0]
        blocks.append(f"{shot.document_label}{document}\n{question}{q}\n{answer}{a}")
    blocks.append(f"{shot.document_label}{doc.text}\n{question}{question_text}\n{answer.rstrip()}")
    return CompletionPrompt("\n\n".join(blocks), field_stops(doc.lang))


def example_texts(lang: str) -> set[str]:
    """Every question and answer of `lang`'s few-shot examples."""
    shot = language_entry(FEW_SHOT, lang, "few-shot prompt")
    return {text for _, pairs in shot.examples for pair in pairs for text in pair}


def field_text(output: str, lang: str, field: str) -> str:
    """The `field` ('question' or 'answer') a few-shot output holds: its first non-empty line, without the field's
    label if the model wrote it, skipping lines that start with an earlier label the model repeated (the document's,
    or the question's before an answer)."""
    shot = language_entry(FEW_SHOT, lang, "few-shot prompt")
    question, answer = (label.strip() for label in QA_LINES[lang])
    label = question if field == "question" else answer
    earlier = (shot.document_label.strip(),) + ((question,) if field == "answer" else ())
    for line in output.splitlines():
        line = line.strip()
        if line.startswith(earlier):
            continue
        if line.startswith(label):
            line = line[len(label):].strip()
        if line:
            return line
    return ""
