"""Per-token loss dynamics by script and POS (full paper, section 5.2, Figs. 10-11).

Every token of token_loss.parquet gets a script class (japanese, latin, digit or other by most of its characters,
`SCRIPT_RANGES`; space; unaligned) and the POS of the word it overlaps most (`token_pos`): crossknow's choices, the
paper saying only "by the language" and "by their syntactic category". A token covering no character takes the
groups of the token before it. `token_group_table` pools a group's tokens per step and language. docs/adaxeval.md.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Mapping, Sequence

import pandas as pd

from crossknow.dynamics.token_pos import POS_TAGGERS, POS_TAGS, TaggedWord
from crossknow.errors import CrossknowError

JAPANESE, LATIN, DIGIT, OTHER, SPACE, UNALIGNED = "japanese", "latin", "digit", "other", "space", "unaligned"
SCRIPT_CLASSES = (JAPANESE, LATIN, DIGIT, OTHER, SPACE, UNALIGNED)
"""The script classes, in the order figures list them (the first four also break ties of mixed tokens)."""

SCRIPT_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0030, 0x0039, DIGIT),
    (0x0041, 0x005A, LATIN),
    (0x0061, 0x007A, LATIN),
    (0x00C0, 0x00D6, LATIN),  # Latin-1 letters, without × (U+00D7) and ÷ (U+00F7)
    (0x00D8, 0x00F6, LATIN),
    (0x00F8, 0x024F, LATIN),  # ... and Latin Extended-A and -B
    (0x1E00, 0x1EFF, LATIN),  # Latin Extended Additional
    (0x3000, 0x303F, JAPANESE),  # CJK Symbols and Punctuation
    (0x3040, 0x309F, JAPANESE),  # Hiragana
    (0x30A0, 0x30FF, JAPANESE),  # Katakana
    (0x31F0, 0x31FF, JAPANESE),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF, JAPANESE),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF, JAPANESE),  # CJK Unified Ideographs
    (0xF900, 0xFAFF, JAPANESE),  # CJK Compatibility Ideographs
    (0xFF01, 0xFF0F, JAPANESE),  # fullwidth punctuation ！＂＃...／
    (0xFF10, 0xFF19, DIGIT),  # fullwidth digits
    (0xFF1A, 0xFF20, JAPANESE),  # ：；＜＝＞？＠
    (0xFF21, 0xFF3A, LATIN),  # fullwidth capitals
    (0xFF3B, 0xFF40, JAPANESE),  # ［＼］＾＿｀
    (0xFF41, 0xFF5A, LATIN),  # fullwidth small letters
    (0xFF5B, 0xFF9F, JAPANESE),  # ｛｜｝～⦅⦆, halfwidth 。「」、・ and halfwidth katakana
    (0x20000, 0x323AF, JAPANESE),  # CJK Unified Ideographs Extensions B to H, Compatibility Supplement
)
"""(first code point, last code point, class) of every character with a class other than `other`, ascending."""
_FIRSTS = [first for first, _, _ in SCRIPT_RANGES]

GROUP_KINDS = ("script", "pos")
"""The two ways tokens are grouped: the `kind` column of `token_group_table`."""


def char_script(char: str) -> str:
    """The script class of one non-whitespace character (SCRIPT_RANGES; `other` outside them)."""
    code = ord(char)
    index = bisect_right(_FIRSTS, code) - 1
    return SCRIPT_RANGES[index][2] if index >= 0 and code <= SCRIPT_RANGES[index][1] else OTHER


def span_script(covered: str) -> str:
    """The script class of a token covering the characters `covered` (not empty): the class of most of its
    non-whitespace characters, ties to the earlier of japanese, latin, digit, other; `space` when all are
    whitespace."""
    counts = Counter(char_script(char) for char in covered if not char.isspace())
    if not counts:
        return SPACE
    most = max(counts.values())
    return next(script for script in SCRIPT_CLASSES if counts.get(script) == most)


def _word_tag(start: int, end: int, covered: str, words: Sequence[TaggedWord], word_ends: list[int]) -> str:
    """The tag of the word overlapping characters start:end the most (the earlier on a tie)."""
    best, best_overlap = None, 0
    index = bisect_right(word_ends, start)
    while index < len(words) and words[index].start < end:
        overlap = min(end, words[index].end) - max(start, words[index].start)
        if overlap > best_overlap:
            best, best_overlap = words[index].pos, overlap
        index += 1
    if best is None:
        return "SPACE" if covered.isspace() else "X"
    return best


def label_tokens(text: str, spans: Sequence[tuple[int | None, int | None]],
                 words: Sequence[TaggedWord] | None) -> list[tuple[str, str | None]]:
    """(script class, POS) of each token of one sequence, in order, from the tokens' character spans in `text`
    and the words of its tagger (None: no POS). See the module docstring for the rules."""
    word_ends = [word.end for word in words] if words is not None else []
    labels: list[tuple[str, str | None]] = []
    for start, end in spans:
        if start is None or end is None:
            labels.append((UNALIGNED, None if words is None else UNALIGNED))
        elif start == end:
            labels.append(labels[-1] if labels else (UNALIGNED, None if words is None else UNALIGNED))
        else:
            covered = text[start:end]
            tag = None if words is None else _word_tag(start, end, covered, words, word_ends)
            labels.append((span_script(covered), tag))
    return labels


def _span(value: object) -> int | None:
    return None if value is None or pd.isna(value) else int(value)  # type: ignore[arg-type]


def token_groups(token_loss: pd.DataFrame, texts: Mapping[str, str]) -> pd.DataFrame:
    """One row per token of every sequence of `token_loss` (TOKEN_SCHEMA of trace-sequences): variant_id,
    position, lang, script, pos (null for a language without a tagger). `texts` maps each variant id to the
    text the spans refer to; CrossknowError for a variant without one or a span outside its text."""
    columns = ["variant_id", "position", "lang", "char_start", "char_end"]
    tokens = token_loss[columns].drop_duplicates().sort_values(["variant_id", "position"], kind="stable")
    if tokens.duplicated(["variant_id", "position"]).any():
        raise CrossknowError("a token's character span differs between checkpoints: the checkpoints of one "
                             "per-token table must share one tokenizer")
    missing = sorted(set(tokens["variant_id"]) - set(texts))
    if missing:
        raise CrossknowError(f"no text for {len(missing)} scored sequence(s) of the token table, e.g. "
                             f"{', '.join(map(repr, missing[:3]))}")
    rows = []
    for (variant_id, lang), group in tokens.groupby(["variant_id", "lang"], sort=False):
        text = texts[variant_id]
        spans = [(_span(s), _span(e)) for s, e in zip(group["char_start"], group["char_end"], strict=True)]
        outside = [(p, s, e) for p, (s, e) in zip(group["position"], spans, strict=True)
                   if s is not None and e is not None and not 0 <= s <= e <= len(text)]
        if outside:
            position, start, end = outside[0]
            raise CrossknowError(f"variant {variant_id!r}: token {position} covers characters {start}:{end} of a "
                                 f"text of {len(text)} characters: are these the texts the run scored?")
        tagger = POS_TAGGERS.get(str(lang))
        labels = label_tokens(text, spans, tagger(text) if tagger else None)
        rows += [(variant_id, position, lang, script, pos)
                 for position, (script, pos) in zip(group["position"], labels, strict=True)]
    return pd.DataFrame(rows, columns=["variant_id", "position", "lang", "script", "pos"])


def _group_rank(kind: str, group: str) -> int:
    order = SCRIPT_CLASSES if kind == "script" else POS_TAGS
    return order.index(group) if group in order else len(order)


def token_group_table(token_loss: pd.DataFrame, texts: Mapping[str, str]) -> pd.DataFrame:
    """Mean token loss per step, sequence language and group: step, lang, kind ('script' or 'pos'), group,
    mean_loss, n_tokens, n_sequences; ordered by kind, lang, group (SCRIPT_CLASSES, POS_TAGS) and step."""
    groups = token_groups(token_loss, texts).drop(columns="lang")
    merged = token_loss[["step", "variant_id", "lang", "position", "loss"]].merge(
        groups, on=["variant_id", "position"], how="left", validate="many_to_one")
    parts = []
    for kind in GROUP_KINDS:
        frame = merged.dropna(subset=[kind])
        grouped = frame.groupby(["step", "lang", kind]).agg(
            mean_loss=("loss", "mean"), n_tokens=("loss", "size"), n_sequences=("variant_id", "nunique"))
        parts.append(grouped.reset_index().rename(columns={kind: "group"}).assign(kind=kind))
    table = pd.concat(parts, ignore_index=True)
    table["_rank"] = [_group_rank(kind, group) for kind, group in zip(table["kind"], table["group"], strict=True)]
    table = table.sort_values(["kind", "lang", "_rank", "group", "step"], kind="stable").drop(columns="_rank")
    return table[["step", "lang", "kind", "group", "mean_loss", "n_tokens", "n_sequences"]].reset_index(drop=True)


def group_summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (lang, kind, group) of a `token_group_table`: n_tokens (at the first step), first_step,
    first_loss, last_step, last_loss, change (last - first), min_loss, min_step; in the table's order."""
    rows = []
    for (lang, kind, group), curve in table.groupby(["lang", "kind", "group"], sort=False):
        curve = curve.sort_values("step")
        first, last = curve.iloc[0], curve.iloc[-1]
        lowest = curve.loc[curve["mean_loss"].idxmin()]
        rows.append({"lang": lang, "kind": kind, "group": group, "n_tokens": int(first["n_tokens"]),
                     "first_step": int(first["step"]), "first_loss": float(first["mean_loss"]),
                     "last_step": int(last["step"]), "last_loss": float(last["mean_loss"]),
                     "change": float(last["mean_loss"] - first["mean_loss"]),
                     "min_loss": float(lowest["mean_loss"]), "min_step": int(lowest["step"])})
    return pd.DataFrame(rows, columns=["lang", "kind", "group", "n_tokens", "first_step", "first_loss", "last_step",
                                       "last_loss", "change", "min_loss", "min_step"])


def language_curves(sequence_loss: pd.DataFrame) -> pd.DataFrame:
    """Mean sequence loss per step and language of the original sequences of a sequence_loss table (all rows
    when it has no `method` column): step, lang, mean_loss, n_sequences (Fig. 10)."""
    table = sequence_loss[sequence_loss["method"] == "original"] if "method" in sequence_loss else sequence_loss
    grouped = table.groupby(["step", "lang"])["loss"].agg(mean_loss="mean", n_sequences="size").reset_index()
    return grouped.sort_values(["lang", "step"], kind="stable").reset_index(drop=True)
