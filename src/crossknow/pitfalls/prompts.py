# ruff: noqa: E501  (the paper's templates are verbatim, one paragraph a line)
"""The probe's prompts. The two perturbation templates are the paper's Appendix E, verbatim (the line
breaks as the paper's text gives them, with "[Instruction]" on a line of its own); the translation
prompts are crossknow's (the paper translated perturbations with Google Translate, Appendix B).

The Appendix E templates are filled by `fill`, which replaces `{name}` and leaves every other brace
alone (their output formats hold literal braces); crossknow's translation prompts are `str.format`
templates.
"""

from __future__ import annotations

PERTURBATION_TEMPLATE = """[Instruction]
You are an expert at subtly embedding distractions based on the incorrect option provided. Your task is to generate a distraction that aligns with the incorrect option without altering the original question’s quality or meaning. Follow these specific rules:
1. The distraction should naturally integrate with the context of the question but must not explicitly introduce incorrect information or contradict the correct answer. 2. The distraction must be subtle and should not make it obvious that it is related to the incorrect option.
[The Start of the Question]
{question}
[The End of the Question]
[The Start of the Model’s Answer]
{answer}
[The End of the Model’s Answer]
[The Start of the Incorrect Option]
{wrong_answer}
[The End of the Incorrect Option]
[Output Format]
{Generated Distraction: <Provide a subtle, contextually relevant distraction based on the incorrect option >}"""
"""Appendix E, "Template for Generating Perturbation": {question}, {answer} (the correct answer:
crossknow's reading of "the Model's Answer", which the paper does not define) and {wrong_answer}."""

DIRECT_PERTURBATION_TEMPLATE = """[Instruction]
You are perturbation design expert. Add contextually relevant but non-essential information related to the topic in the question. The added content must NOT affect the problem’s answerability or the validity of choices. Maintain original question structure verbatim.
[The Start of the Question]
{question}
[The End of the Question]
[Requirements]
1. Add 2-3 background sentences before the original question.
2. Include 1-2 practical application examples after the question.
3. Keep all technical terms but expand their explanations.
4. Preserve original question wording.
5. NEVER mention or include any answer choices.
6. Omit any reference to multiple-choice options.
[Output Format]
New question: <Your modified question WITHOUT ANY CHOICES>
"""
"""Appendix E, "Template for Adding Direct Perturbation" (the DP baseline): {question}."""

TRANSLATE_TEXT_TEMPLATE = """Translate the text below into {language}. Translate it faithfully and completely, \
without adding, removing or explaining anything, and keep it in the same form (a sentence stays a sentence, a question stays a question).
[The Start of the Text]
{text}
[The End of the Text]
Return a JSON object with one key, "text": your {language} translation."""
"""crossknow's prompt for translating inserted text only (δq^E -> δq^T), at temperature 0.001 (the output's
key is described, not shown filled in: see `crossknow.pitfalls.pair_translation`)."""


def fill(template: str, **values: str) -> str:
    """`template` with each `{name}` replaced by its value; other braces are kept."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template
