"""crossknow's invented example texts for the few-shot completion prompts of base models, one entry per ECLEKTIC
language, each a translation of the same English texts (the paper's prompts are chat prompts with no examples).

They are about no real place, so that a shot teaches the prompt's form and no fact: answering prompts fall back on
`questions` when the set has too few other questions in the asked language; translation prompts show `questions`,
`answers` and `sentence` in their two languages.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InventedTexts:
    """The invented texts in one language."""

    questions: tuple[str, str]
    """Two questions about an unnamed town."""
    answers: tuple[str, str]
    """Their answers, in order."""
    sentence: str
    """A sentence of the kind an article's context holds."""


INVENTED: dict[str, InventedTexts] = {
    "de": InventedTexts(
        ("In welchem Jahr wurde die alte Brücke wieder aufgebaut?",
         "Wie viele Brücken überqueren den Fluss in der Stadt?"),
        ("Im Jahr 1925", "Drei"),
        "Das Rathaus steht am Hauptplatz und wurde im 17. Jahrhundert erbaut.",
    ),
    "en": InventedTexts(
        ("In which year was the old bridge rebuilt?",
         "How many bridges cross the river in the town?"),
        ("In 1925", "Three"),
        "The town hall stands on the main square and was built in the 17th century.",
    ),
    "es": InventedTexts(
        ("¿En qué año se reconstruyó el puente viejo?",
         "¿Cuántos puentes cruzan el río en la ciudad?"),
        ("En 1925", "Tres"),
        "El ayuntamiento se encuentra en la plaza principal y fue construido en el siglo XVII.",
    ),
    "fr": InventedTexts(
        ("En quelle année le vieux pont a-t-il été reconstruit ?",
         "Combien de ponts traversent la rivière dans la ville ?"),
        ("En 1925", "Trois"),
        "L'hôtel de ville se trouve sur la place principale et a été construit au XVIIe siècle.",
    ),
    "he": InventedTexts(
        ("באיזו שנה נבנה מחדש הגשר הישן?",
         "כמה גשרים חוצים את הנהר בעיר?"),
        ("בשנת 1925", "שלושה"),
        "בית העירייה עומד בכיכר המרכזית ונבנה במאה ה-17.",
    ),
    "hi": InventedTexts(
        ("पुराने पुल का पुनर्निर्माण किस वर्ष हुआ था?",
         "शहर में नदी पर कितने पुल हैं?"),
        ("1925 में", "तीन"),
        "टाउन हॉल मुख्य चौक पर स्थित है और इसका निर्माण 17वीं शताब्दी में हुआ था।",
    ),
    "id": InventedTexts(
        ("Pada tahun berapa jembatan tua itu dibangun kembali?",
         "Berapa banyak jembatan yang melintasi sungai di kota itu?"),
        ("Pada tahun 1925", "Tiga"),
        "Balai kota berdiri di alun-alun utama dan dibangun pada abad ke-17.",
    ),
    "it": InventedTexts(
        ("In quale anno fu ricostruito il vecchio ponte?",
         "Quanti ponti attraversano il fiume in città?"),
        ("Nel 1925", "Tre"),
        "Il municipio si trova nella piazza principale ed è stato costruito nel XVII secolo.",
    ),
    "ja": InventedTexts(
        ("古い橋は何年に再建されましたか？",
         "町の川にはいくつの橋が架かっていますか？"),
        ("1925年", "三つ"),
        "市庁舎は中央広場にあり、17世紀に建てられた。",
    ),
    "ko": InventedTexts(
        ("옛 다리는 몇 년에 재건되었습니까?",
         "그 도시의 강에는 다리가 몇 개 있습니까?"),
        ("1925년", "세 개"),
        "시청은 중앙 광장에 있으며 17세기에 지어졌다.",
    ),
    "pt": InventedTexts(
        ("Em que ano a ponte velha foi reconstruída?",
         "Quantas pontes atravessam o rio na cidade?"),
        ("Em 1925", "Três"),
        "A câmara municipal fica na praça principal e foi construída no século XVII.",
    ),
    "zh": InventedTexts(
        ("旧桥是在哪一年重建的？",
         "城里有几座桥横跨这条河？"),
        ("1925年", "三座"),
        "市政厅位于主广场，建于17世纪。",
    ),
}
"""Language code -> its invented texts (ECLEKTIC's 12 languages, `crossknow.data.eclektic.LANGUAGES`)."""


def invented(lang: str) -> InventedTexts:
    """The invented texts in `lang`, or in English for a language without them (crossknow's item files may hold
    languages outside ECLEKTIC's 12)."""
    return INVENTED.get(lang, INVENTED["en"])
