"""The completion form of the sentence rewrites (syntax-X, lexicon-X, semantic-X, translation-X) for base models:
crossknow's design, since the paper gives no prompts (a chat model gets `crossknow.perturb.prompts`).

A prompt is an intro line, three invented worked examples and the sentence on one line, ending where the rewrite
starts; English and Japanese only (`COMPLETION_LANGUAGES`). `rewrite_parser` reads the first line and rejects,
with the reason, an empty line, a prompt echo, the sentence unchanged or a translation in the wrong script.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from crossknow.errors import CrossknowError
from crossknow.generation.ask import CompletionPrompt, TextParser, one_line
from crossknow.generation.echo import echoed_example
from crossknow.perturb.prompts import language_name

UNCHANGED = "the rewrite repeats the sentence unchanged"
"""Why a rewrite identical to its sentence is invalid (both prompt forms)."""
COMPLETION_MAX_TOKENS = 256
"""The most tokens of one completion-form rewrite (the run's max_tokens when lower): one sentence, one line."""

SENTENCES: dict[str, tuple[str, str, str]] = {
    "en": ("The enzyme breaks down starch in the small intestine.",
           "Doctors observed a rapid rise in blood pressure after the injection.",
           "Because the soil was dry, the seeds did not germinate."),
    "ja": ("その酵素は小腸でデンプンを分解する。",
           "注射の後、医師は血圧の急激な上昇を観察した。",
           "土が乾いていたので、種子は発芽しなかった。"),
}
"""crossknow's three invented example sentences, the same meaning in every language (translation's examples)."""


@dataclass(frozen=True)
class Pattern:
    """One rewrite pattern's examples in one language."""

    intro: str
    """The prompt's first line: what the examples show."""
    source_label: str
    target_label: str
    rewrites: tuple[str, str, str]
    """The rewrites of the language's three `SENTENCES`, in order."""


PATTERNS: dict[str, dict[str, Pattern]] = {
    "en": {
        "syntax": Pattern(
            "Sentences rewritten with another word order or voice, keeping their words and meaning.",
            "Sentence", "Restructured",
            ("In the small intestine, starch is broken down by the enzyme.",
             "After the injection, a rapid rise in blood pressure was observed by doctors.",
             "The seeds did not germinate because the soil was dry.")),
        "lexicon": Pattern(
            "Sentences rewritten with synonyms, keeping their structure and meaning.",
            "Sentence", "Reworded",
            ("The enzyme decomposes starch in the small bowel.",
             "Physicians noticed a quick increase in blood pressure following the shot.",
             "Since the earth was arid, the seeds did not sprout.")),
        "semantic": Pattern(
            "Sentences paraphrased freely, keeping their meaning and every fact.",
            "Sentence", "Paraphrased",
            ("Starch is digested in the small intestine with the help of this enzyme.",
             "The doctors saw blood pressure climb quickly once the injection had been given.",
             "The dry soil kept the seeds from sprouting.")),
    },
    "ja": {
        "syntax": Pattern(
            "文を、同じ語のまま語順や態を変えて書き換えたもの。",
            "文", "語順を変えた文",
            ("小腸でデンプンはその酵素によって分解される。",
             "注射の後、血圧の急激な上昇が医師によって観察された。",
             "種子は、土が乾いていたので発芽しなかった。")),
        "lexicon": Pattern(
            "文を、構造と語順はそのままに、語を類義語に置き換えて書き換えたもの。",
            "文", "類義語に置き換えた文",
            ("当該の酵素は小腸でデンプンを消化する。",
             "注射の後、医者は血圧の急速な上昇を確認した。",
             "土壌が乾燥していたため、種は芽を出さなかった。")),
        "semantic": Pattern(
            "文を、意味と事実はそのままに、構造も語も自由に変えて言い換えたもの。",
            "文", "言い換えた文",
            ("デンプンは小腸の中で、この酵素の働きによって分解される。",
             "注射をしたあと血圧が急に上がるのを、医師は目にした。",
             "乾いた土のせいで、種子は芽を出せなかった。")),
    },
}
"""language -> pattern -> its examples (crossknow's, invented; each a rewrite of the language's `SENTENCES`)."""
COMPLETION_LANGUAGES: tuple[str, ...] = tuple(PATTERNS)
"""The languages the completion form has examples in."""

SCRIPT_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    "latin": ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x24F), (0xFF21, 0xFF3A),
              (0xFF41, 0xFF5A)),
    "kana": ((0x3040, 0x309F), (0x30A0, 0x30FF), (0x31F0, 0x31FF), (0xFF66, 0xFF9F)),
    "kanji": ((0x3005, 0x3005), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x323AF)),
    "hangul": ((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF)),
}
"""The letters of each script the translation check knows (first and last code point of each range)."""
LANGUAGE_SCRIPTS: dict[str, frozenset[str]] = {
    "en": frozenset({"latin"}), "de": frozenset({"latin"}), "fr": frozenset({"latin"}), "es": frozenset({"latin"}),
    "ja": frozenset({"kana", "kanji"}), "zh": frozenset({"kanji"}), "ko": frozenset({"hangul"}),
}
"""The scripts each language of `crossknow.perturb.prompts.LANGUAGES` is written in."""


def completion_problem(lang: str, target_lang: str | None = None) -> str | None:
    """Why the completion form cannot ask about a `lang` sentence (and `target_lang`, translation's): it has no
    examples in that language; None when it can."""
    for code in (lang, target_lang):
        if code is not None and code not in PATTERNS:
            return (f"the completion form of the rewrite prompts (crossknow's few-shot prompts for base models) has "
                    f"examples in {' and '.join(f'{language_name(c)} ({c})' for c in COMPLETION_LANGUAGES)} only, not "
                    f"in {language_name(code)} ({code}); ask a chat model (a generator spec ending in #chat) for "
                    f"{language_name(code)} rewrites and translations")
    return None


def check_completion_languages(lang: str, target_lang: str | None = None) -> None:
    """CrossknowError unless the completion form has examples in `lang` (and `target_lang`, translation's)."""
    problem = completion_problem(lang, target_lang)
    if problem is not None:
        raise CrossknowError(problem)


def _block(source_label: str, target_label: str, sentence: str, rewrite: str | None = None) -> str:
    """Two labelled lines; without `rewrite` the second ends where the rewrite starts."""
    return f"{source_label}: {one_line(sentence)}\n{target_label}:" + (f" {rewrite}" if rewrite is not None else "")


@dataclass(frozen=True)
class RewriteCompletion:
    """A completion-form rewrite prompt and what its parser needs to know of it."""

    prompt: CompletionPrompt
    labels: tuple[str, ...]
    """The prompt's two labels."""
    examples: frozenset[str]
    """Every example text the prompt shows (both lines of each example), the asked sentence left out."""


def rewrite_completion(style: str, sentence: str, lang: str, target_lang: str) -> RewriteCompletion:
    """The completion prompt that rewrites `sentence` (in `lang`) in `style`; `target_lang` is translation's
    target. CrossknowError for a language the completion form has no examples in."""
    check_completion_languages(lang, target_lang if style == "translation" else None)
    if style == "translation":
        intro = f"{language_name(lang)} sentences translated into {language_name(target_lang)}."
        labels = (language_name(lang), language_name(target_lang))
        pairs = list(zip(SENTENCES[lang], SENTENCES[target_lang], strict=True))
    else:
        pattern = PATTERNS[lang][style]
        intro, labels = pattern.intro, (pattern.source_label, pattern.target_label)
        pairs = list(zip(SENTENCES[lang], pattern.rewrites, strict=True))
    blocks = [_block(*labels, a, b) for a, b in pairs]
    text = "\n\n".join([intro, *blocks, _block(*labels, sentence)])
    examples = frozenset(t for pair in pairs for t in pair) - {one_line(sentence)}
    return RewriteCompletion(CompletionPrompt(text), labels, examples)


def _script(char: str) -> str | None:
    code = ord(char)
    return next((name for name, ranges in SCRIPT_RANGES.items() if any(a <= code <= b for a, b in ranges)), None)


def script_problem(text: str, lang: str, target_lang: str) -> str | None:
    """Why `text` is no translation of a `lang` sentence into `target_lang` by its script, else None. Where the two
    languages are written in different scripts: it holds no letter of the target's script, or it still holds letters
    of a script the source uses and the target does not (Latin letters excepted: terms, names and units stay Latin in
    any language). Where they share their scripts, None."""
    target, source = LANGUAGE_SCRIPTS[target_lang], LANGUAGE_SCRIPTS[lang]
    if target == source:
        return None
    found = {script for char in text if (script := _script(char))}
    name = language_name(target_lang)
    if not found & target:
        return f"wrong_script: the {name} translation holds no {' or '.join(sorted(target))} letter: {text[:80]!r}"
    left = sorted((found & source) - target - {"latin"})
    if left:
        return f"wrong_script: the {name} translation still holds {' and '.join(left)} letters: {text[:80]!r}"
    return None


def rewrite_parser(asked: RewriteCompletion, style: str, sentence: str, lang: str, target_lang: str) -> TextParser:
    """The parser of the output of `asked` (see the module docstring): (the rewrite, None) or (None, why not)."""
    labels = re.compile(r"^(?:" + "|".join(re.escape(label) for label in asked.labels) + r")\s*[:：]")
    unchanged = {sentence.strip(), one_line(sentence)}

    def parse(output: str) -> tuple[str | None, str | None]:
        value = output.split("\n", 1)[0].strip()
        if not value:
            return None, "empty: the output holds no rewrite"
        if labels.match(value):
            return None, f"prompt_echo: the output starts with a label of the prompt: {value[:80]!r}"
        if echoed_example(value, asked.examples, (sentence,), span=None):
            return None, f"prompt_echo: the output repeats an example of the prompt: {value[:80]!r}"
        if value in unchanged:
            return None, UNCHANGED
        if style == "translation":
            problem = script_problem(value, lang, target_lang)
            if problem:
                return None, problem
        return value, None

    return parse
