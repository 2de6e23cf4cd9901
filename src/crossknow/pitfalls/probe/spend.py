"""What a probe spends, as `account.json` and `sources.json` record it: the `Spend` record, and the spend of
each part of a run read from its spend ledger (`crossknow.store.spend_ledger`).

The parts are labelled in the ledger: the stage ('prefilter' while the English prefilter asks, 'search' while
the batches run) and the client's label ('proxy' and 'judge' for the proxy's clients and the LLM judge's,
'simulation' for generative simulators).
"""

from __future__ import annotations

from pydantic import Field

from crossknow.data.schemas import Record
from crossknow.store.spend_ledger import SpendLedger, SpendTotal

PREFILTER = "prefilter"
"""The ledger stage of the English prefilter."""
SEARCH = "search"
"""The ledger stage of the search (translation, perturbation, judging, simulation of the batches)."""
PROXY_LABELS = ("proxy", "judge")
"""The ledger labels of the proxy's spend: its two clients, and the judge's (counted with the proxy)."""
SIMULATION = "simulation"
"""The ledger label of generative simulators."""


class Spend(Record):
    """Model calls, tokens, seconds and cost."""

    calls: float = Field(description="Requests sent to a backend (cache hits excluded); questions for simulators.")
    prompt_tokens: float = Field(description="Prompt tokens of those requests (0 where the backend reports none).")
    completion_tokens: float = Field(description="Completion tokens of those requests.")
    seconds: float = Field(description="Wall-clock seconds spent.")
    cost_usd: float = Field(description="Cost at the price table (local models cost 0).")


def spend_of(total: SpendTotal, seconds: float, calls: float | None = None) -> Spend:
    """A ledger total as a Spend, with `seconds`; `calls` replaces the total's requests (questions for
    simulators)."""
    return Spend(calls=total.calls if calls is None else calls, prompt_tokens=total.prompt_tokens,
                 completion_tokens=total.completion_tokens, seconds=seconds, cost_usd=total.cost_usd)


def total_spend(spends: list[Spend]) -> Spend:
    """The field-wise sum of `spends`."""
    return Spend(**{k: sum(getattr(s, k) for s in spends) for k in Spend.model_fields})


def prefilter_spend(ledger: SpendLedger, questions: int, seconds: float) -> Spend:
    """What the English prefilter spent over the whole run: `questions` answered in English, the generative
    simulators' tokens and cost as the ledger counts them, `seconds` of the invocation that finished it."""
    return spend_of(ledger.total(PREFILTER), seconds, calls=questions)
