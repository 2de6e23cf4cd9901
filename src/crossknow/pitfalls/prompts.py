# ruff: noqa: E501  (the paper's templates are verbatim, one paragraph a line)
"""The probe's prompts. The two perturbation templates and the four translation templates (into French, German,
Italian and Spanish) are the paper's Appendix E, verbatim, filled by `fill` (which leaves every other brace alone);
the prompt that translates inserted text alone is crossknow's (the paper used Google Translate there).

For base models the probe asks with crossknow's few-shot completion prompts, one short field per call
(`translation_completion`, `perturbation_completion`); their examples are invented, so a repeated one is an echo.
"""

from __future__ import annotations

from crossknow.generation.ask import one_line

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

TRANSLATION_TEMPLATES: dict[str, str] = {
    "fr": """[Instruction]
Vous êtes un traducteur professionnel. Votre tâche consiste à traduire le texte, les choix et la réponse ci-dessous de manière précise et naturelle en français, tout en conservant le sens original des questions et des choix. Veuillez respecter strictement les règles suivantes :
- La traduction des réponses et des choix doit refléter fidèlement le sens original, sans aucune altération, omission ou ajout.
- Toutes les phrases comportant un point d’interrogation doivent rester sous forme de question après traduction, sans changer le ton ou la structure de la phrase.
- Le contenu traduit doit respecter les normes et usages de la langue française, être fluide et naturel, en évitant les traductions littérales ou maladroites.
[The Start of the Text]
{question}
[The End of the Text]
[The Start of the Choices]
{choices}
[The End of the Choices]
[The Start of the Answer]
{ground_truth}
[The End of the Answer]
[Output Format]
{"text": "<Texte traduit en français>", "choices": ["<Choix traduit en français 1>", "<Choix traduit en français 2>", …], "answer": "<Réponse traduite en français>"}""",
    "de": """[Instruction]
Sie sind ein professioneller Übersetzungsexperte. Ihre Aufgabe besteht darin, den folgenden Text, die Auswahlmöglichkeiten und die Antwort präzise und natürlich ins Deutsche zu übersetzen, wobei der ursprüngliche Sinn der Frage und der Auswahlmöglichkeiten erhalten bleiben muss. Halten Sie sich strikt an die folgenden Regeln:
- Die Übersetzung der Antworten und Auswahlmöglichkeiten muss den ursprünglichen Sinn vollständig bewahren, ohne jegliche Abweichungen, Hinzufügungen oder Kürzungen.
- Alle Sätze mit einem Fragezeichen müssen auch nach der Übersetzung die Form einer Frage beibehalten, ohne den Ton oder die Struktur des Satzes zu verändern.
- Der übersetzte Inhalt muss den sprachlichen Gepflogenheiten des Deutschen entsprechen, natürlich und flüssig formuliert sein und wörtliche, ungeschmeidige Übersetzungen vermeiden.
[The Start of the Text]
{question}
[The End of the Text]
[The Start of the Choices]
{choices}
[The End of the Choices]
[The Start of the Answer]
{ground_truth}
[The End of the Answer]
[Output Format]
{"text": "<Übersetzter Text>", "choices": ["<Übersetzte Auswahl1>", "<Übersetzte Auswahl2>", …], "answer": "<Übersetzte Antwort>"}""",
    "it": """[Instruction]
Sei un traduttore professionista. Il tuo compito è tradurre il seguente testo, le opzioni e la risposta in italiano in modo accurato e naturale, assicurandoti di preservare il significato originale della domanda e delle opzioni. Segui rigorosamente le seguenti regole:
- La traduzione delle risposte e delle opzioni deve mantenere completamente il significato originale, senza alcuna deviazione, aggiunta o omissione.
- Tutte le frasi con un punto interrogativo devono mantenere la forma interrogativa dopo la traduzione, senza alterare il tono o la struttura della frase.
- Il contenuto tradotto deve rispettare le abitudini linguistiche dell’italiano, essere naturale e fluido, evitando traduzioni letterali e rigide.
[The Start of the Text]
{question}
[The End of the Text]
[The Start of the Choices]
{choices}
[The End of the Choices]
[The Start of the Answer]
{ground_truth}
[The End of the Answer]
[Output Format]
{"text": "<Testo tradotto>", "choices": ["<Opzione tradotta 1>", "<Opzione tradotta 2>", …], "answer": "<Risposta tradotta>"}""",
    "es": """[Instruction]
Eres un experto en traducción profesional. Tu tarea es traducir el siguiente texto, opciones y respuestas de manera precisa y natural al español, asegurándote de conservar el significado original de las preguntas y opciones. Por favor, cumple estrictamente con las siguientes reglas:
- La traducción de las respuestas y opciones debe conservar completamente el significado original, sin desviaciones ni adiciones.
- Todas las oraciones que contengan un signo de interrogación deben mantener la forma de pregunta en la traducción, sin cambiar el tono ni la estructura de la oración.
- El contenido traducido debe ajustarse a las costumbres del idioma español, expresándose de manera natural y fluida, evitando traducciones literales.
[The Start of the Text]
{question}
[The End of the Text]
[The Start of the Choices]
{choices}
[The End of the Choices]
[The Start of the Answer]
{ground_truth}
[The End of the Answer]
[Output Format]
{"text": "<texto traducido>", "choices": ["<opción traducida 1>", "<opción traducida 2>", …], "answer": "<respuesta traducida>"}""",
}
"""Appendix E, "Template for English-to-French / -German / -Italian / -Spanish Translation", by language code:
the question, its choices and its correct answer translated as one JSON output ({"text", "choices",
"answer"}); slots {question}, {choices} and {ground_truth} (the correct choice's text). The paper prints
these four only; `crossknow.pitfalls.pair_translation` uses them for these languages."""

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


# ---- crossknow's few-shot completion prompts, for base models ------------------------------------------------------

TRANSLATION_SHOTS: dict[str, tuple[tuple[str, str], ...]] = {
    "fr": (("Which animal sleeps through the winter?", "Quel animal dort pendant tout l'hiver ?"),
           ("a small wooden boat", "un petit bateau en bois"),
           ("Old maps often show rivers that have since moved.", "Les vieilles cartes montrent souvent des rivières qui ont changé de cours depuis."),
           ("the boiling point of water", "le point d'ébullition de l'eau")),
    "de": (("Which animal sleeps through the winter?", "Welches Tier schläft den ganzen Winter über?"),
           ("a small wooden boat", "ein kleines Holzboot"),
           ("Old maps often show rivers that have since moved.", "Alte Karten zeigen oft Flüsse, die seitdem ihren Lauf verändert haben."),
           ("the boiling point of water", "der Siedepunkt von Wasser")),
    "it": (("Which animal sleeps through the winter?", "Quale animale dorme per tutto l'inverno?"),
           ("a small wooden boat", "una piccola barca di legno"),
           ("Old maps often show rivers that have since moved.", "Le vecchie mappe mostrano spesso fiumi che da allora hanno cambiato corso."),
           ("the boiling point of water", "il punto di ebollizione dell'acqua")),
    "es": (("Which animal sleeps through the winter?", "¿Qué animal duerme durante todo el invierno?"),
           ("a small wooden boat", "un pequeño barco de madera"),
           ("Old maps often show rivers that have since moved.", "Los mapas antiguos suelen mostrar ríos que desde entonces han cambiado de curso."),
           ("the boiling point of water", "el punto de ebullición del agua")),
    "ja": (("Which animal sleeps through the winter?", "冬の間ずっと眠る動物はどれですか？"),
           ("a small wooden boat", "小さな木の船"),
           ("Old maps often show rivers that have since moved.", "古い地図には、その後流れが変わった川がよく描かれている。"),
           ("the boiling point of water", "水の沸点")),
    "zh": (("Which animal sleeps through the winter?", "哪种动物会睡过整个冬天？"),
           ("a small wooden boat", "一艘小木船"),
           ("Old maps often show rivers that have since moved.", "旧地图上常常画着后来改道的河流。"),
           ("the boiling point of water", "水的沸点")),
}
"""crossknow's few-shot examples for translating one field (a question, a choice or an inserted text) by completion,
as (English, translation), per target language code: invented content (a question, a short choice, a sentence and a
noun phrase), so that an output repeating one is recognised as an echo. A language without an entry is asked with the
same labels and no examples (`translation_completion`)."""

TRANSLATION_SHOT = "English: {english}\n{language}: {target}"
"""One example of `translation_completion`: the English text and its translation, labelled by language name."""

PERTURBATION_SHOTS: tuple[tuple[str, str, str], ...] = (
    ("Which gas do plants take in to make their food?", "oxygen",
     "Every living cell in a leaf also needs air to stay alive."),
    ("What causes the seasons on Earth?", "the distance from the Sun",
     "In some months the Earth's orbit brings it a little closer to the Sun."),
    ("Which tool is best for measuring the mass of a rock?", "a ruler",
     "Geologists usually record the size of every rock they collect."),
)
"""crossknow's few-shot examples of a distraction written from an incorrect option (question, incorrect option,
distraction; invented content), for `perturbation_completion`."""

PERTURBATION_SHOT = "Question: {question}\nWrong option: {wrong_answer}\nDistraction: {distraction}"
"""One example of `perturbation_completion`."""

PERTURBATION_OUTPUTS: tuple[str, ...] = tuple(distraction for _, _, distraction in PERTURBATION_SHOTS)
"""The outputs of `perturbation_completion`'s examples, which a distraction may not repeat (its examples' questions
and wrong options are inputs, which it may)."""


def translation_completion(text: str, lang: str, language: str, source: str = "English") -> str:
    """crossknow's few-shot completion prompt that translates one field, `text`, from `source` (a language name)
    into `language` (code `lang`): the examples of `TRANSLATION_SHOTS[lang]` when the source is English (none for
    a language without an entry, or from another source: `expand` translates seeds of every language), then the
    text under its language's label and the target's label, which a base model continues with one line."""
    examples = TRANSLATION_SHOTS.get(lang, ()) if source == "English" else ()
    shots = [TRANSLATION_SHOT.format(english=e, language=language, target=t) for e, t in examples]
    return "\n\n".join([*shots, f"{source}: {one_line(text)}\n{language}:"])


def perturbation_completion(question: str, wrong_answer: str) -> str:
    """crossknow's few-shot completion prompt for a distraction written from `wrong_answer`, an incorrect option of
    `question` (the completion form of Appendix E's "Template for Generating Perturbation"): one line follows."""
    shots = [PERTURBATION_SHOT.format(question=q, wrong_answer=w, distraction=d) for q, w, d in PERTURBATION_SHOTS]
    return "\n\n".join([*shots, f"Question: {one_line(question)}\nWrong option: {one_line(wrong_answer)}\nDistraction:"])


DIRECT_SHOTS: tuple[tuple[str, str, str], ...] = (
    ("Which gas do plants take in to make their food?",
     "Plants grow in almost every part of the world, from deserts to rainforests.",
     "Gardeners use this knowledge when they grow vegetables in greenhouses."),
    ("What is the boiling point of water at sea level?",
     "Water covers most of the Earth's surface and is used in every kitchen.",
     "Cooks rely on this when they boil pasta or make tea."),
    ("Which organ pumps blood through the human body?",
     "The human body has many organs that work together every second of the day.",
     "Doctors listen to it with a stethoscope during a check-up."),
)
"""crossknow's few-shot examples of the DP baseline's two inserted texts (question, background before it, an
application after it; invented content), for `direct_completion`."""

DIRECT_OUTPUTS: dict[str, tuple[str, ...]] = {"before": tuple(before for _, before, _ in DIRECT_SHOTS),
                                              "after": tuple(after for _, _, after in DIRECT_SHOTS)}
"""The outputs of `direct_completion`'s examples by side, which an inserted text may not repeat."""

DIRECT_FIELDS = {"before": "Background", "after": "Application"}
"""The label of each inserted text in `direct_completion`: background sentences before the question (the
template's requirement 1) and a practical application after it (requirement 2)."""


def direct_completion(question: str, side: str) -> str:
    """crossknow's few-shot completion form of Appendix E's "Template for Adding Direct Perturbation", for base
    models: one call per inserted text (`side` 'before' or 'after'), each one line, so that the original question
    is kept verbatim by construction (the template's requirement 4) instead of asked of the model."""
    label = DIRECT_FIELDS[side]
    shots = [f"Question: {q}\n{label}: {before if side == 'before' else after}" for q, before, after in DIRECT_SHOTS]
    return "\n\n".join([*shots, f"Question: {one_line(question)}\n{label}:"])
