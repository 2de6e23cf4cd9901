"""One spec reader (`registry.parse_spec`, and `check_spec` on it) for scorers, generators and every role's
clients: the server in the spec (`openai:MODEL@URL`), the role's flag as the default."""

from __future__ import annotations

import pytest

from crossknow.errors import CrossknowError, ModelSpecError
from crossknow.generation.clients import Role
from crossknow.models.registry import (
    ModelOptions,
    ModelSpec,
    check_spec,
    load_generator,
    load_scorer,
    parse_spec,
    spec_forms,
)


@pytest.mark.parametrize(
    ("spec", "backend"),
    [("default", "default"), ("hf:org/model@main", "hf"), ("gguf:/m.gguf", "gguf"), ("openai:m", "openai"),
     ("vllm:org/model", "vllm")],
)
def test_valid_specs_name_their_backend(spec, backend):
    assert check_spec(spec, "http://127.0.0.1:9/v1") == backend


@pytest.mark.parametrize("spec", ["gemma-270m", "hf:", "openai:", "tgi:m", ""])
def test_unknown_specs_list_the_valid_forms_of_their_role(spec):
    with pytest.raises(ModelSpecError) as scorer_error:
        check_spec(spec, None)
    assert f"unknown model spec {spec!r}" in str(scorer_error.value)
    assert all(form in str(scorer_error.value) for form in spec_forms("model"))
    with pytest.raises(ModelSpecError) as generator_error:
        check_spec(spec, None, "generator")
    assert all(form in str(generator_error.value) for form in spec_forms("generator"))


def test_the_loaders_and_the_role_clients_share_the_check():
    """The loaders and every role's clients refuse a spec with the same error, before any model is loaded."""
    # each names the role it reads the spec for: a scorer's model, a generator (a role's default form)
    checks = [(lambda: load_scorer("hf:"), "model"), (lambda: load_generator("hf:"), "generator"),
              (lambda: Role().parse("hf:"), "generator")]
    for check, form in checks:
        with pytest.raises(ModelSpecError, match=f"^unknown {form} spec 'hf:'. Valid forms:"):
            check()


@pytest.mark.parametrize(
    ("spec", "default", "parsed"),
    [
        ("openai:m@http://10.0.0.2:8000/v1", None, ModelSpec("openai", "openai:m", "http://10.0.0.2:8000/v1", "auto")),
        ("openai:m@https://api.example.com/v1", "http://x/v1",  # the spec's own server wins over the flag's
         ModelSpec("openai", "openai:m", "https://api.example.com/v1", "auto")),
        ("openai:m", "http://x/v1", ModelSpec("openai", "openai:m", "http://x/v1", "auto")),  # the flag's default
        ("openai:m@http://h:1/v1#completion", None, ModelSpec("openai", "openai:m", "http://h:1/v1", "completion")),
        ("openai:org/m@v2@http://h:1/v1", None, ModelSpec("openai", "openai:org/m@v2", "http://h:1/v1", "auto")),
        ("hf:org/model@main", "http://x/v1", ModelSpec("hf", "hf:org/model@main", None, "auto")),  # a revision
        ("hf:org/model@main#chat", None, ModelSpec("hf", "hf:org/model@main", None, "chat")),
        ("default", "http://x/v1", ModelSpec("default", "default", None, "auto")),
    ],
)
def test_the_server_is_read_from_the_spec_or_the_roles_default(spec, default, parsed):
    assert parse_spec(spec, default, "generator") == parsed


def test_a_spec_written_out_carries_its_server_and_its_format():
    assert parse_spec("openai:m#completion", "http://x/v1", "generator").written == "openai:m@http://x/v1#completion"
    assert parse_spec("openai:m#completion", "http://x/v1", "generator").bare == "openai:m#completion"
    assert parse_spec("hf:org/model@main", "http://x/v1").written == "hf:org/model@main"


def test_openai_without_a_server_says_both_ways_to_give_one():
    both_ways = (r"'openai:m' needs a server: write it in the spec, openai:m@URL \(e.g. "
                 r"openai:m@http://127.0.0.1:8000/v1\), or pass {} URL")
    with pytest.raises(CrossknowError, match=both_ways.format("--base-url")):
        load_scorer("openai:m")
    with pytest.raises(CrossknowError, match=both_ways.format("--judge-base-url")):
        Role(server_flag="--judge-base-url").parse("openai:m")
    with pytest.raises(CrossknowError, match=r"needs a server \(its URL starts with http:// or https://\)"):
        check_spec("openai:m@127.0.0.1:8000/v1", None)


def test_the_loaders_take_the_server_of_the_spec():
    generator = load_generator("openai:m@http://127.0.0.1:9/v1#completion",
                               ModelOptions(base_url="http://127.0.0.1:8/v1"))
    assert (generator.base_url, generator.model_id, generator.prompt_format) == ("http://127.0.0.1:9/v1", "m",
                                                                                "completion")


def test_vllm_is_refused_off_cuda_before_it_is_imported(monkeypatch):
    """vLLM runs on CUDA only: a role on the CPU is told so, and nothing tries to import vllm (absent here)."""
    import torch

    from crossknow.errors import CrossknowError
    from crossknow.models.registry import ModelOptions, load_generator, load_scorer

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for load in (load_scorer, load_generator):
        for device in ("auto", "cpu"):
            with pytest.raises(CrossknowError, match=f"vLLM runs on CUDA, and this role's device is '{device}'"):
                load("vllm:org/model", ModelOptions(device=device))
