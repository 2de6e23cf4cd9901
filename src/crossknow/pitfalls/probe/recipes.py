"""Named recipes: the settings of the paper's probe and its two baselines (section 3.2).

`paper`: beam search with Appendix B.1's settings and Appendix E's perturbation from an incorrect option; `np`:
the translated pairs only (depth 0); `dp`: one direct perturbation per pair. A pair qualifies in every recipe by
one rule, V > θ_inc and the constraints (crossknow's reading of the baselines), so conversion rates compare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from crossknow.errors import CrossknowError
from crossknow.pitfalls.probe.constraints import Constraint, EnglishAccuracy, SemanticSimilarity, Similarity
from crossknow.pitfalls.probe.e5 import THETA, THETA_CHOICES, THETA_CROSS, THETA_ROOT
from crossknow.pitfalls.probe.judge_similarity import JUDGE_THRESHOLD
from crossknow.pitfalls.probe.search import BeamSettings
from crossknow.pitfalls.probe.transformation import DirectPerturbation, ProxyPerturbation, Transformation
from crossknow.pitfalls.proxy import ProxyLLM


@dataclass(frozen=True)
class Recipe:
    """A named probe configuration."""

    name: str
    settings: BeamSettings
    perturbation: Literal["appendix_e", "direct", "none"]
    """Which transformation makes children: the Appendix E perturbation, the direct one, or none."""

    def transformation(self, proxy: ProxyLLM, language: str) -> Transformation | None:
        """The recipe's transformation over `proxy`, translating into `language` (a language name)."""
        if self.perturbation == "appendix_e":
            return ProxyPerturbation(proxy, language)
        if self.perturbation == "direct":
            return DirectPerturbation(proxy, language)
        return None


RECIPES: dict[str, Recipe] = {
    "paper": Recipe("paper", BeamSettings(), "appendix_e"),
    "np": Recipe("np", BeamSettings(depth=0, extended_depth=0), "none"),
    "dp": Recipe("dp", BeamSettings(depth=1, extended_depth=1), "direct"),
}
"""The recipes by name."""


def get_recipe(name: str) -> Recipe:
    """The recipe called `name`; a CrossknowError listing the known ones otherwise."""
    if name not in RECIPES:
        raise CrossknowError(f"unknown recipe {name!r}; known: {', '.join(RECIPES)}")
    return RECIPES[name]


def default_constraints(
    epsilon: float = 0.2, similarity: Similarity | None = None, theta: float = THETA,
    cross_similarity: Similarity | None = None, theta_cross: float = THETA_CROSS, judge: Similarity | None = None,
    choice_similarity: Similarity | None = None, theta_choices: float = THETA_CHOICES,
    theta_root: float = THETA_ROOT,
) -> list[Constraint]:
    """The constraints of equation 4: English accuracy >= 1 − ε always; S(q^E, q^E') >= θ when
    `similarity` is given, S(q^E', q^T') >= θ' when `cross_similarity` is (a multilingual one such as
    `E5Similarity`: chrF compares within one language only; `theta_root` in place of θ' for an
    unperturbed pair), and S(English choices, target choices) >= `theta_choices` when `choice_similarity`
    is (crossknow's addition). The defaults θ, `theta_root`, θ' and `theta_choices` are crossknow's
    thresholds for e5, measured on the release (`crossknow.pitfalls.probe.e5`); the paper prints none. `judge` (an
    LLM judge, `crossknow.pitfalls.probe.judge_similarity`: the paper's kind of check, section 4) checks θ and θ'
    with its verdict at 0.5. A check without its similarity is off, and the run's config says so."""
    constraints: list[Constraint] = [EnglishAccuracy(epsilon)]
    if similarity is not None:
        constraints.append(SemanticSimilarity(similarity, theta, "original"))
    if cross_similarity is not None:
        constraints.append(SemanticSimilarity(cross_similarity, theta_cross, "cross", theta_root))
    if choice_similarity is not None:
        constraints.append(SemanticSimilarity(choice_similarity, theta_choices, "choices"))
    if judge is not None:
        constraints += [SemanticSimilarity(judge, JUDGE_THRESHOLD, "original"),
                        SemanticSimilarity(judge, JUDGE_THRESHOLD, "cross")]
    return constraints
