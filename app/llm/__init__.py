"""Generation: turn the shopper's query and the retrieved products into a short answer.

`build_generator(settings)` gives an LLM-backed generator when OPENAI_API_KEY is set and
the offline extractive one otherwise; both answer with a `Recommendation`.
"""

from app.llm.extractive import ExtractiveGenerator
from app.llm.generator import Generator, build_generator
from app.llm.openai_generator import OpenAIGenerator
from app.llm.types import GeneratorName, Question, Recommendation
from app.retrieval.types import RetrievedProduct

__all__ = [
    "ExtractiveGenerator",
    "Generator",
    "GeneratorName",
    "OpenAIGenerator",
    "Question",
    "Recommendation",
    "RetrievedProduct",
    "build_generator",
]
