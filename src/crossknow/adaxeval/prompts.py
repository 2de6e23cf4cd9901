"""The prompts of AdaXEval generation, kept as data: one YAML file per language, `LANG.yaml` (packaged in
`crossknow/adaxeval/prompts/`; --prompts adds languages or replaces packaged files whole).

Tasks ending in `_fields`, and the `judge_*` and `facts_*` tasks but `facts_reasoning_first`, are crossknow's
completion prompts for base models (`render_completion`); the others are chat prompts (`render`). Templates use
`$name` placeholders (string.Template), and every lookup fails loudly. The file format: docs/adaxeval.md.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from crossknow.data.guarded import load_yaml
from crossknow.errors import CrossknowError, InputError
from crossknow.generation.ask import ChatPrompt, CompletionPrompt, one_line
from crossknow.generation.confidence import CONTENT_FREE_INPUTS

TASKS: dict[str, frozenset[str]] = {
    "ner": frozenset({"sentence"}),
    "facts": frozenset({"sentence"}),
    "facts_reasoning_first": frozenset({"sentence"}),
    "triple": frozenset({"sentence", "subject", "relation", "object"}),
    "triple_again": frozenset({"object"}),
    "cloze": frozenset({"sentence", "subject", "relation", "object"}),
    "cloze_again": frozenset({"object", "cloze"}),
    "paraphrase": frozenset({"cloze", "answer"}),
    "paraphrase_again": frozenset({"answer", "question"}),
    "distractors": frozenset({"sentence", "cloze", "question", "answer"}),
    "distractors_again": frozenset({"answer", "rejected", "kept"}),
    "quality_in_language": frozenset(
        {"sentence", "subject", "relation", "object", "cloze", "question", "answer", "distractors"}
    ),
    "quality_cross_language": frozenset({"other_language", "document", "question", "answer"}),
    "paraphrase_fields": frozenset({"cloze", "answer"}),
    "distractors_fields": frozenset({"cloze", "answer"}),
    "judge_cloze": frozenset({"sentence", "statement"}),
    "judge_paraphrase": frozenset({"cloze", "answer", "question"}),
    "judge_options_cloze": frozenset({"cloze", "answer", "distractors"}),
    "judge_options_question": frozenset({"question", "answer", "distractors"}),
    "judge_cross_language": frozenset({"other_language", "document", "question", "answer"}),
    "facts_judge": frozenset({"sentence"}),
    "facts_subject": frozenset({"sentence"}),
    "facts_relation": frozenset({"sentence", "subject"}),
    "facts_object": frozenset({"sentence", "subject", "relation"}),
    "ner_fields": frozenset({"sentence"}),
}
"""Task name -> the placeholders its template may use."""

PACKAGED = "prompts"
"""Directory of the packaged prompt files inside crossknow.adaxeval."""


class PromptTable:
    """Templates per language and task; see the module docstring."""

    def __init__(self, files: dict[str, dict[str, Any]], sources: dict[str, str]):
        self._files = files
        self._sources = sources

    @classmethod
    def load(cls, extra_dir: str | Path | None = None) -> PromptTable:
        """The packaged prompt files, extended or replaced per language by those in `extra_dir`."""
        paths = sorted(Path(str(resources.files("crossknow.adaxeval") / PACKAGED)).glob("*.yaml"))
        if extra_dir is not None:
            extra = Path(extra_dir)
            if not extra.is_dir():
                raise CrossknowError(f"prompt directory not found: {extra}")
            paths += sorted(extra.glob("*.yaml"))
        files: dict[str, dict[str, Any]] = {}
        sources: dict[str, str] = {}
        for path in paths:
            data = _read(path)
            files[data["language"]] = data
            sources[data["language"]] = str(path)
        return cls(files, sources)

    @property
    def languages(self) -> list[str]:
        """Languages with a prompt file."""
        return sorted(self._files)

    def _file(self, lang: str) -> dict[str, Any]:
        if lang not in self._files:
            raise CrossknowError(
                f"no AdaXEval prompts for language {lang!r} (there are: {', '.join(self.languages)}); "
                f"copy crossknow/adaxeval/prompts/en.yaml to {lang}.yaml, translate it, and pass its directory "
                "with --prompts"
            )
        return self._files[lang]

    def template(self, task: str, lang: str) -> str:
        """The raw template of `task` in `lang`."""
        if task not in TASKS:
            raise CrossknowError(f"unknown prompt task {task!r} (tasks: {', '.join(TASKS)})")
        tasks = self._file(lang)["tasks"]
        if task not in tasks:
            raise CrossknowError(f"{self._sources[lang]}: no prompt for task {task!r}; add it under 'tasks'")
        return tasks[task]

    def language_name(self, lang: str, name_of: str) -> str:
        """How prompts in `lang` name the language `name_of`."""
        names = self._file(lang)["names"]
        if name_of not in names:
            raise CrossknowError(f"{self._sources[lang]}: no name for language {name_of!r}; add it under 'names'")
        return names[name_of]

    def render(self, task: str, lang: str, **values: str) -> ChatPrompt:
        """The prompt of `task` in `lang` with its placeholders filled (all must be given)."""
        return ChatPrompt(system=None, user=self._filled(task, lang, values).strip())

    def render_completion(self, task: str, lang: str, **values: str) -> CompletionPrompt:
        """The completion prompt of `task` in `lang`, its placeholders filled, ending where the model's field starts
        (trailing spaces and newlines cut); stopped at the end of the line. Inputs are put on one line each."""
        flat = {name: one_line(value) for name, value in values.items()}
        return CompletionPrompt(self._filled(task, lang, flat).rstrip())

    def render_content_free(self, task: str, lang: str, **kept: str) -> list[CompletionPrompt]:
        """The completion prompt of `task` in `lang` once per content-free input (`CONTENT_FREE_INPUTS`), every
        placeholder but those in `kept` holding it: what `StructuredClient.yes_no_baseline` calibrates against."""
        slots = TASKS.get(task, frozenset()) - kept.keys()
        return [self.render_completion(task, lang, **kept, **dict.fromkeys(slots, empty))
                for empty in CONTENT_FREE_INPUTS]

    def _filled(self, task: str, lang: str, values: dict[str, str]) -> str:
        missing = TASKS.get(task, frozenset()) - values.keys()
        if missing:
            raise CrossknowError(f"prompt {task!r} needs values for: {', '.join(sorted(missing))}")
        return string.Template(self.template(task, lang)).substitute(values)

    def check(self, langs: Iterable[str], tasks: Iterable[str] = TASKS) -> None:
        """Fail now, before any model call, on anything a run over `langs` would miss."""
        langs = list(langs)
        for lang in langs:
            self._file(lang)
        for lang in langs:
            for task in tasks:
                self.template(task, lang)
            for other in langs:
                self.language_name(lang, other)

    def digest(self, langs: Iterable[str]) -> str:
        """SHA-256 (16 hex digits) of the files of `langs`: a changed prompt is a changed config."""
        data = {lang: self._file(lang) for lang in sorted(langs)}
        text = json.dumps(data, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _read(path: Path) -> dict[str, Any]:
    """One prompt file, checked: language, names, and tasks whose placeholders are known."""
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping with language, names and tasks")
    language = data.get("language")
    if not isinstance(language, str) or not language:
        raise InputError(path, "missing (required)", field="language")
    if language != path.stem:
        raise InputError(path, f"the file of language {language!r} must be named {language}.yaml", field="language")
    for key in ("names", "tasks"):
        if not isinstance(data.get(key), dict) or not all(isinstance(v, str) for v in data[key].values()):
            raise InputError(path, "expected a mapping of strings", field=key)
    for task, template in data["tasks"].items():
        if task not in TASKS:
            raise InputError(path, f"unknown task (tasks: {', '.join(TASKS)})", field=f"tasks.{task}")
        parsed = string.Template(template)
        if not parsed.is_valid():
            raise InputError(path, "a lone '$' (write $$ for a dollar sign)", field=f"tasks.{task}")
        unknown = set(parsed.get_identifiers()) - TASKS[task]
        if unknown:
            names, known = ", $".join(sorted(unknown)), ", $".join(sorted(TASKS[task]))
            raise InputError(path, f"unknown placeholder(s) ${names}; this task has: ${known}", field=f"tasks.{task}")
    return {"language": language, "names": data["names"], "tasks": data["tasks"]}
