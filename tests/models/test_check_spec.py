"""One spec check (`registry.check_spec`) for scorers, generators and the generation pipeline's clients."""

from __future__ import annotations

import pytest

from crossknow.adaxeval import clients
from crossknow.errors import CrossknowError, ModelSpecError
from crossknow.models.registry import GENERATOR_SPEC_FORMS, SPEC_FORMS, check_spec, load_generator, load_scorer


@pytest.mark.parametrize(
    ("spec", "backend"),
    [("default", "default"), ("hf:org/model@main", "hf"), ("gguf:/m.gguf", "gguf"), ("openai:m", "openai")],
)
def test_valid_specs_name_their_backend(spec, backend):
    assert check_spec(spec, "http://127.0.0.1:9/v1") == backend


@pytest.mark.parametrize("spec", ["gemma-270m", "hf:", "openai:", "vllm:m", ""])
def test_unknown_specs_list_the_valid_forms_of_their_role(spec):
    with pytest.raises(ModelSpecError) as scorer_error:
        check_spec(spec, None)
    assert f"unknown model spec {spec!r}" in str(scorer_error.value)
    assert all(form in str(scorer_error.value) for form in SPEC_FORMS)
    with pytest.raises(ModelSpecError) as generator_error:
        check_spec(spec, None, "generator")
    assert all(form in str(generator_error.value) for form in GENERATOR_SPEC_FORMS)


def test_the_loaders_and_the_generation_clients_share_the_check():
    """The loaders and the generation clients refuse a spec with the same error, before any model is loaded."""
    for check in (lambda: load_scorer("hf:"), lambda: load_generator("hf:"), lambda: clients.check_spec("hf:", None)):
        with pytest.raises(ModelSpecError, match="unknown (model|generator) spec 'hf:'"):
            check()


def test_openai_without_a_server_says_how_to_give_one():
    with pytest.raises(CrossknowError, match=r"'openai:m' needs --base-url \(e.g. http://127.0.0.1:8000/v1\)"):
        load_scorer("openai:m")
    own_server = "'openai:m' needs a server: pass --base-url URL, or write the spec as openai:MODEL@URL"
    with pytest.raises(CrossknowError, match=own_server):
        clients.check_spec("openai:m", None)
    clients.check_spec("openai:m@http://127.0.0.1:9/v1", None)  # its own server: accepted
