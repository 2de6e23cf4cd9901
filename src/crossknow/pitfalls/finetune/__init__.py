"""`crossknow pitfalls finetune`: targeted fine-tuning (SFT or DPO) on one language's pairs, evaluated before and
after; `run.py` is the command."""
