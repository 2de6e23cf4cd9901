"""Targeted fine-tuning's data and settings: training texts, rejected answers, the validation split, Table 2 rows."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from crossknow.errors import CrossknowError
from crossknow.pitfalls.eval_records import PairRow
from crossknow.pitfalls.finetune.examples import preference_examples, sft_examples, validation_indices
from crossknow.pitfalls.finetune.records import PitfallsFinetuneConfig
from crossknow.pitfalls.finetune.run import language_row
from crossknow.pitfalls.flaws import BilingualPair
from crossknow.pitfalls.simulate import MCQuestion


def _pair(k: int, question: str, choices: tuple[str, ...], answer: int) -> BilingualPair:
    english = MCQuestion(f"English question {k}?", tuple(f"option {c}" for c in range(len(choices))), answer, "en")
    return BilingualPair(f"French:{k}", english, MCQuestion(question, choices, answer, "fr"), origin=None)


PAIRS = [
    _pair(0, "Quelle est la capitale de la France ?", ("Lyon", "Paris", "Nice"), 1),
    _pair(1, "Combien de pattes a une araignée ?", ("six", "huit", "dix", "quatre"), 1),
    _pair(2, "Quel gaz les plantes absorbent-elles ?", ("dioxyde de carbone", "azote"), 0),
    _pair(3, "Quelle planète est la plus proche du Soleil ?", ("Vénus", "Mars", "Mercure"), 2),
]


def _row(pair: BilingualPair, target_choice: int | None) -> PairRow:
    correct = None if target_choice is None else target_choice == pair.target.answer
    return PairRow(pair_id=pair.pair_id, model="default", lang="fr", source=None, category=None,
                   answer=pair.target.answer, en_choice=pair.english.answer, target_choice=target_choice,
                   en_correct=True, target_correct=correct, cell=None if correct is None else
                   f"right_{'right' if correct else 'wrong'}", en_error=None,
                   target_error="unparseable" if target_choice is None else None, en_raw=None, target_raw=None)


def test_sft_loss_format_is_the_lm_eval_context_and_the_correct_choice():
    examples = sft_examples(PAIRS, "loss", "lm-eval", str, 0.0, 0)
    # lm-evaluation-harness's multiple-choice convention: 'Question: {q}\nAnswer:' then ' ' + choice
    assert examples[0].prompt == "Question: Quelle est la capitale de la France ?\nAnswer:"
    assert [e.target for e in examples] == [" Paris", " huit", " dioxyde de carbone", " Mercure"]
    assert [e.lang for e in examples] == ["fr"] * 4 and {e.split for e in examples} == {"train"}


def test_sft_generative_format_is_the_papers_template_and_output_format():
    def turn(message: str) -> str:
        return f"<start_of_turn>user\n{message}<end_of_turn>\n<start_of_turn>model\n"

    example = sft_examples(PAIRS[:1], "generative", "lm-eval", turn, 0.0, 0)[0]
    assert example.target == '{"final_answer": "Paris"}'  # Appendix E's [Output Format], the correct choice
    # the paper's French template (Appendix E), the question and the choices, in a Gemma user turn
    assert example.prompt.startswith("<start_of_turn>user\nVeuillez lire attentivement la question ci-dessous")
    assert "[Début de la question]\nQuelle est la capitale de la France ?\n[Fin de la question]" in example.prompt
    assert '["Lyon", "Paris", "Nice"]' in example.prompt
    assert example.prompt.endswith("<end_of_turn>\n<start_of_turn>model\n")


def test_dpo_rejected_answer_is_the_base_models_wrong_choice_and_other_pairs_are_counted():
    rows = {PAIRS[0].pair_id: _row(PAIRS[0], 0),      # wrong: chose Lyon
            PAIRS[1].pair_id: _row(PAIRS[1], 1),      # right: no rejected answer
            PAIRS[2].pair_id: _row(PAIRS[2], None),   # invalid: no rejected answer
            PAIRS[3].pair_id: _row(PAIRS[3], 1)}      # wrong: chose Mars
    examples, counts = preference_examples(PAIRS, rows, "loss", "lm-eval", str, 0.0, 0)
    assert (counts.pairs, counts.with_rejected, counts.right, counts.invalid) == (4, 2, 1, 1)
    assert [(e.pair_id, e.chosen, e.rejected, e.rejected_choice) for e in examples] == [
        ("French:0", " Paris", " Lyon", 0), ("French:3", " Mercure", " Mars", 1)]
    assert examples[1].prompt == "Question: Quelle planète est la plus proche du Soleil ?\nAnswer:"
    generative, _ = preference_examples(PAIRS, rows, "generative", "lm-eval", str, 0.0, 0)
    assert (generative[0].chosen, generative[0].rejected) == ('{"final_answer": "Paris"}', '{"final_answer": "Lyon"}')


def test_dpo_needs_the_base_models_answer_for_every_pair():
    with pytest.raises(CrossknowError, match="no answer for 3 training pairs"):
        preference_examples(PAIRS, {PAIRS[0].pair_id: _row(PAIRS[0], 0)}, "loss", "lm-eval", str, 0.1, 0)


@pytest.mark.parametrize(("n", "held_out"), [(10, 1), (20, 2), (8, 1), (25, 3), (4, 0), (1, 0), (0, 0)])
def test_validation_split_holds_out_ten_percent_rounded(n, held_out):
    # 10% of n, rounded half up (0.8 -> 1, 2.5 -> 3, 0.4 -> 0), and never every example
    chosen = validation_indices(n, 0.1, seed=7)
    assert len(chosen) == held_out and chosen <= set(range(n))
    assert validation_indices(n, 0.1, seed=7) == chosen  # the recorded seed reproduces it


def test_validation_split_depends_on_the_seed_and_marks_the_examples():
    draws = {frozenset(validation_indices(100, 0.1, seed)) for seed in range(5)}
    assert len(draws) > 1
    examples = sft_examples(PAIRS * 5, "loss", "lm-eval", str, 0.1, 3)  # 20 examples: 2 held out
    held = [k for k, e in enumerate(examples) if e.split == "validation"]
    assert set(held) == validation_indices(20, 0.1, 3) and len(held) == 2


def test_config_defaults_are_the_papers_settings():
    config = PitfallsFinetuneConfig(train_pairs="French.json")
    # Appendix B.1: 4 epochs, lr 2.0e-4, warm-up 0.1, per-device batch 1 x accumulation 8, 10% validation every 200
    assert (config.epochs, config.learning_rate, config.warmup_ratio) == (4, 2.0e-4, 0.1)
    assert (config.micro_batch_size, config.batch_size // config.micro_batch_size) == (1, 8)
    assert (config.validation_fraction, config.eval_every_steps) == (0.1, 200)
    assert config.method == "sft" and config.beta == 0.1


def test_config_refuses_models_that_cannot_be_trained_and_unknown_fields():
    for spec in ("openai:gpt-4o", "gguf:model.gguf", "hf:"):
        with pytest.raises(ValidationError, match="fine-tuning takes default or hf"):
            PitfallsFinetuneConfig(train_pairs="French.json", model=spec)
    with pytest.raises(ValidationError, match="multiple of"):
        PitfallsFinetuneConfig(train_pairs="French.json", batch_size=8, micro_batch_size=3)
    with pytest.raises(ValidationError, match="Extra inputs"):
        PitfallsFinetuneConfig(train_pairs="French.json", epoch=4)


def test_training_arguments_carry_the_papers_schedule(tmp_path):
    pytest.importorskip("transformers")
    from crossknow.pitfalls.finetune.train import training_arguments

    args = training_arguments(PitfallsFinetuneConfig(train_pairs="French.json", device="cpu"), tmp_path, True)
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.num_train_epochs) == (1, 8, 4)
    assert (args.learning_rate, args.warmup_steps, args.lr_scheduler_kwargs) == (2.0e-4, 0.1, {"min_lr": 0.0})
    assert str(args.lr_scheduler_type.value).startswith("cosine")
    assert (args.eval_strategy.value, args.eval_steps, args.per_device_eval_batch_size) == ("steps", 200, 1)


def test_prompt_tokens_are_out_of_the_sft_loss():
    torch = pytest.importorskip("torch")
    from crossknow.pitfalls.finetune.train import PromptTargetCollator

    rows = [{"input_ids": [2, 10, 11, 12, 13, 1], "position_ids": list(range(6)), "prompt_length": 4},
            {"input_ids": [2, 20, 21, 1], "position_ids": list(range(4)), "prompt_length": 2}]
    batch = PromptTargetCollator(pad_token_id=0)(rows)
    assert batch["labels"].tolist() == [[-100, -100, -100, -100, 13, 1], [-100, -100, 21, 1, -100, -100]]
    assert torch.equal(batch["input_ids"][1], torch.tensor([2, 20, 21, 1, 0, 0]))


def test_table_row_compares_the_same_pairs_before_and_after():
    before = [_row(p, c) for p, c in zip(PAIRS, (1, 0, None, 2), strict=True)]  # right, wrong, invalid, right
    after = [_row(p, c) for p, c in zip(PAIRS, (1, 1, 0, 0), strict=True)]      # right, right, right, wrong
    row = language_row("French.json", "evaluation", before, after)
    # compared: pairs 0, 1 and 3 (pair 2 invalid before); Orig = 2/3, Enh = 2/3 - by hand
    assert (row.n_pairs, row.n_compared, row.n_invalid) == (4, 3, 1)
    assert row.original == pytest.approx(2 / 3) and row.enhanced == pytest.approx(2 / 3) and row.diff == 0
    after[3] = _row(PAIRS[3], 2)
    assert language_row("French.json", "evaluation", before, after).diff == pytest.approx(1 / 3)
    with pytest.raises(CrossknowError, match="different pairs"):
        language_row("French.json", "evaluation", before, after[:3])
