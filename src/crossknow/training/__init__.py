"""Continual pretraining with the AdaXEval paper's data recipes (section 6.1, Appendix A.4)."""
