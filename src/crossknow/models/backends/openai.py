"""OpenAI-compatible servers (`openai:MODEL[@URL]`): vLLM, llama.cpp's server, hosted APIs."""

from __future__ import annotations

from crossknow.models.generator import Generator
from crossknow.models.protocol import Scorer
from crossknow.models.specs import ModelOptions, ModelSpec, register_backend


@register_backend("openai", rank=4, server=True, usage="openai:MODEL[@URL]",
                  form="an OpenAI-compatible server at URL (without @URL: the role's --base-url)",
                  generator_form="an OpenAI-compatible server's /v1/chat/completions (without @URL: --base-url)")
class OpenAI:
    """`openai:MODEL[@URL]`: a server's /v1/completions (scores) and /v1/chat/completions (generation)."""

    @staticmethod
    def scorer(parsed: ModelSpec, options: ModelOptions) -> Scorer:
        from crossknow.models.openai_scorer import OpenAIScorer

        return OpenAIScorer(parsed.model.partition(":")[2], base_url=parsed.base_url,
                            api_key_env=options.api_key_env, concurrency=options.concurrency,
                            timeout_s=options.timeout_s, max_retries=options.max_retries)

    @staticmethod
    def generator(parsed: ModelSpec, options: ModelOptions) -> Generator:
        from crossknow.models.openai_generator import OpenAIGenerator

        return OpenAIGenerator(
            parsed.model.partition(":")[2], base_url=parsed.base_url, api_key_env=options.api_key_env,
            concurrency=options.concurrency, timeout_s=options.timeout_s, max_retries=options.max_retries,
            json_mode=options.json_mode, fold_system=options.fold_system,  # type: ignore[arg-type]
            prompt_format=parsed.prompt_format,
        )
