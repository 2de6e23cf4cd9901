"""The default NER backend: shallow heuristics, no model (crossknow's, where the paper's NER models may be missing).

Japanese (Sudachi, split mode A): a run of nouns, prefixes and noun-like suffixes that holds a proper noun, is a
compound or looks technical; English and other Latin-script text: technical-looking, capitalised or
domain-suffixed words, adjacent ones joined. Entities count once each, ignoring case. The rules: docs/adaxeval.md.
"""

from __future__ import annotations

import re

from crossknow.data.sudachi import Morpheme, morphemes

_KATAKANA = re.compile(r"^[\u30a0-\u30ffー]{3,}$")
_LATIN = re.compile(r"^[A-Za-z][A-Za-z0-9\-+]*$")
_CONTENT_POS = ("名詞", "接頭辞")
_DEMONSTRATIVE_PREFIXES = frozenset({"本", "当", "同", "各", "両", "全", "諸", "前", "今", "次"})
_JOINERS = frozenset({"-", "・", "‐", "－"})

_WORD = re.compile(r"[A-Za-z0-9\u0370-\u03ff][A-Za-z0-9\u0370-\u03ff'’+\-/]*")
_GREEK = re.compile(r"[\u0370-\u03ff]")
_DOMAIN_SUFFIX = re.compile(
    r"(ases?|itis|omas?|oses|osis|a?emias?|opathy|opathies|ectomy|otomy|ostomy|cytes?|blasts?|genesis|lysis|plasty|"
    r"scopy|graphy|ogens?|oids?|oses?|amines?|amides?|azoles?|mycins?|cillins?|statins?|inibs?|umabs?|"
    r"ulins?|umins?|obins?|teins?|ectins?|oxins?|enzymes?|receptors?|catalysts?|"
    r"(?:ox|diox|chlor|fluor|brom|iod|sulf|pept|nucleot|glycos|sacchar|hydr)ides?)$"
)
_SUFFIX_STOPWORDS = frozenset(
    {"increase", "increases", "decrease", "decreases", "release", "releases", "phase", "phases", "database",
     "purchase", "close", "those", "whose", "purpose", "purposes", "dose", "doses", "choose", "suppose",
     "diagnose", "expose", "propose", "oppose", "compose", "loose", "cause", "causes", "provides", "decides",
     "besides", "insides", "outsides", "sides", "guides", "divides", "avoid", "avoids", "paranoid", "android",
     "basis", "analysis", "diagnosis", "prognosis", "hypothesis", "emphasis", "thesis", "synthesis",
     "diagnoses", "hypotheses", "analyses", "uses", "cases", "bases", "ease", "lease", "please", "chase",
     "horses", "houses", "composes", "decompose", "decomposes",
     "exposes", "proposes", "imposes", "supposes", "dispose", "disposes", "closes", "enclose", "encloses",
     "chooses", "loses", "hoses", "noses", "roses", "poses", "opposes"}
)
_OPENERS = frozenset(
    """the this these that those a an in on at by for from with to of as after before during when while since
    although though however moreover furthermore therefore thus hence here there we our it its their they
    such some several many most all both each every no not only also then finally recently previously
    currently first second third one two three based using among compared because if whereas despite
    what which who how why where patients results methods conclusions background objective objectives
    purpose aim aims study studies data findings further additionally overall similarly conversely
    in-vitro other another new these few more less""".split()
)


def japanese_entities(sentence: str) -> list[str]:
    """Entities of a Japanese sentence: noun compounds, proper nouns and technical words."""
    runs: list[list[Morpheme]] = []
    current: list[Morpheme] = []
    words = morphemes(sentence, mode="A")
    for index, morpheme in enumerate(words):
        pos = morpheme.pos
        content = (pos[0] in _CONTENT_POS and pos[1] != "代名詞") or (pos[0] == "接尾辞" and pos[1] == "名詞的")
        nxt = words[index + 1].pos[0] if index + 1 < len(words) else ""
        if content:
            current.append(morpheme)
        elif current and morpheme.surface in _JOINERS and nxt == "名詞":
            current.append(morpheme)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return distinct_entities(["".join(m.surface for m in run) for run in runs if _is_japanese_entity(run)])


def _is_japanese_entity(run: list[Morpheme]) -> bool:
    parts = [m for m in run if m.surface not in _JOINERS]
    if parts and parts[0].pos[0] == "接頭辞" and parts[0].surface in _DEMONSTRATIVE_PREFIXES:
        parts = parts[1:]
    if not parts:
        return False
    if any(m.pos[1] == "固有名詞" for m in parts):
        return True
    nouns = [m for m in parts if m.pos[0] == "名詞" and m.pos[1] != "数詞"]
    if len(parts) >= 2 and nouns:
        return True
    text = "".join(m.surface for m in parts)
    return len(parts) == 1 and bool(nouns) and bool(_KATAKANA.match(text) or (_LATIN.match(text) and len(text) >= 2))


def latin_entities(sentence: str) -> list[str]:
    """Entities of an English (Latin-script) sentence: capitalised and technical terms."""
    words = list(_WORD.finditer(sentence))
    entities: list[str] = []
    start = end = None
    for index, match in enumerate(words):
        if _is_latin_candidate(match.group(), first=index == 0):
            start = match.start() if start is None else start
            end = match.end()
            continue
        if start is not None:
            entities.append(sentence[start:end])
            start = end = None
    if start is not None:
        entities.append(sentence[start:end])
    return distinct_entities([entity.rstrip("'’-/") for entity in entities])


def _is_latin_candidate(word: str, first: bool) -> bool:
    core = word.rstrip("'’-/").removesuffix("'s").removesuffix("’s")
    letters = [c for c in core if c.isalpha()]
    if not letters:
        return False
    if any(c.isdigit() for c in core) or _GREEK.search(core):
        return True
    if sum(c.isupper() for c in core) >= 2 or any(c.isupper() for c in core[1:]):
        return True
    if core[0].isupper():
        return not (first and core.lower() in _OPENERS)
    lower = core.lower()
    return len(lower) >= 6 and lower not in _SUFFIX_STOPWORDS and bool(_DOMAIN_SUFFIX.search(lower))


def heuristic_entities(sentence: str, lang: str) -> list[str]:
    """Entities by the heuristics of `lang` ('ja' uses Sudachi, any other language the Latin rules)."""
    return japanese_entities(sentence) if lang == "ja" else latin_entities(sentence)


def distinct_entities(entities: list[str]) -> list[str]:
    """`entities` stripped, without empty ones and repeats (ignoring case), each as it first appeared."""
    seen: dict[str, str] = {}
    for entity in entities:
        key = entity.strip().lower()
        if key and key not in seen:
            seen[key] = entity.strip()
    return list(seen.values())
