"""The query-understanding step in front of retrieval, built once per process from settings."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Sequence
from typing import Any

from app.core.config import Settings
from app.query.category import BrandVocabulary, CategoryVocabulary
from app.query.followup import FollowUpReader
from app.query.kind import KindReader, Lacked, product_kind
from app.query.llm import LLMQueryParser
from app.query.metrics import record_parse
from app.query.offline import OfflineQueryParser
from app.query.phrasebook import load_phrasebook
from app.query.spelling import CatalogWords, Speller
from app.query.store_view import StoreView
from app.query.turn import ConversationState, Turn
from app.query.types import ParsedQuery
from app.retrieval.types import RetrievedProduct
from app.store import VectorStore

logger = logging.getLogger(__name__)


class QueryUnderstanding:
    """Args:
    vocabulary: the catalog's categories.
    offline: the rule parser; always runs, and is the answer unless `llm` gives a valid one.
    llm: the optional model parse (QUERY_PARSER=llm).
    currency_symbol: the catalog's, for the labels of the filters applied.
    catalog_currency: the catalog's currency code; a price said in another is compared as
        it is (no rates here), and the answer says so (`foreign_prices`).
    brands: the catalog's brands, for a negation that names one ("not Samsung").
    words: the catalog's words, to mend misspellings (None: QUERY_SPELLING=false). No
        request waits for them: `build_query_understanding` reads them first.
    """

    def __init__(
        self,
        vocabulary: CategoryVocabulary,
        offline: OfflineQueryParser,
        llm: LLMQueryParser | None = None,
        currency_symbol: str = "$",
        brands: CategoryVocabulary | None = None,
        words: CatalogWords | None = None,
        catalog_currency: str = "USD",
    ) -> None:
        self.vocabulary = vocabulary
        self.offline = offline
        self.llm = llm
        self.currency_symbol = currency_symbol
        self.catalog_currency = catalog_currency
        self.brands = brands
        self.words = words
        self.followups = FollowUpReader(offline.book)
        self.kinds = KindReader(offline.book)

    async def parse(self, query: str) -> ParsedQuery:
        # Only the first call blocks on a store read (later refreshes run in the
        # background): after it, no thread hop per request.
        categories = self.vocabulary.peek()
        if categories is None:
            categories = await asyncio.to_thread(self.vocabulary.get)
        speller = self._speller()
        brands = await _vocabulary(self.brands) if self.brands is not None else frozenset()
        parsed = self.offline.parse(query, categories, speller, brands)
        if self.llm is None:
            record_parse("offline")
            return parsed
        return await self.llm.parse(query, categories, fallback=parsed)

    async def follow_up(self, parsed: ParsedQuery, state: ConversationState | None) -> Turn:
        """`parsed` read in its conversation (app/query/followup.py).

        Raises:
            FollowUpError: it points at a product the last turn did not show.
        """
        if state is None:
            return Turn(parsed)
        categories = await _vocabulary(self.vocabulary)
        brands = await _vocabulary(self.brands) if self.brands is not None else frozenset()
        speller = self._speller()
        return self.followups.read(parsed, state, brands, categories, speller)

    def categories(self) -> frozenset[str]:
        """The catalog's categories as last read (empty until the first read is done)."""
        return self.vocabulary.peek() or frozenset()

    def not_carried(self, text: str, shown: Sequence[RetrievedProduct]) -> Lacked | None:
        """The kind of product `text` asks for when the shop has nothing called that, judged
        on the catalog's words and the products `shown` (app/query/kind.py), and whether
        it asked for a kind the shop carries beside it."""
        speller = self._speller()
        return self.kinds.lacking(text, speller, shown, self.vocabulary.peek() or ())

    def foreign_prices(self, parsed: ParsedQuery) -> tuple[str, ...]:
        """The shopper's words of each price said in a currency not the catalog's ("under
        150 euros"): read in the catalog's currency, which the answer says."""
        return tuple(
            c.text
            for c in parsed.constraints
            if c.currency is not None and c.currency != self.catalog_currency
        )

    def kind_of(self, name: str) -> str | None:
        """The kind of product `name` names, by the catalog's words (app/query/kind.py)."""
        return product_kind(name, self._speller())

    def _speller(self) -> Speller | None:
        # Never waits: None (or an empty speller) until the first background read is done.
        return self.words.warm() if self.words is not None else None

    def views(self) -> list[StoreView[Any]]:
        """What it reads from the store (a model switch points them at the new index)."""
        return [v for v in (self.vocabulary, self.brands, self.words) if v is not None]

    async def aclose(self) -> None:
        if self.llm is not None:
            await self.llm.aclose()


async def _vocabulary(vocabulary: CategoryVocabulary) -> frozenset[str]:
    # Only the first read blocks on the store, off the event loop.
    found = vocabulary.peek()
    return found if found is not None else await asyncio.to_thread(vocabulary.get)


def build_query_understanding(
    settings: Settings, store: VectorStore, dictionary: Collection[str] = ()
) -> QueryUnderstanding:
    """Args:
    dictionary: words that are words though the catalog lacks them (the encoder's
        whole-word vocabulary, `dictionary_words`): never mended.
    """
    book = load_phrasebook()
    symbol = book.currency_display.get(settings.catalog_currency, f"{settings.catalog_currency} ")
    llm = None
    if settings.query_parser == "llm":
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
        if key:
            llm = LLMQueryParser(
                api_key=key,
                model=settings.openai_model,
                base_url=settings.openai_base_url or None,
                timeout_seconds=settings.query_parse_timeout_seconds,
                book=book,
            )
        else:
            logger.warning("QUERY_PARSER=llm needs OPENAI_API_KEY; parsing queries offline")
    words = CatalogWords(store, dictionary) if settings.query_spelling else None
    if words is not None:
        # Read now: the process listens only after start-up (app/api/serve.py), so no answer
        # goes unmended while its peers mend it. Later reads run in the background.
        words.get()
    return QueryUnderstanding(
        CategoryVocabulary(store, settings.category_refresh_seconds),
        OfflineQueryParser(book),
        llm,
        symbol,
        BrandVocabulary(store, settings.category_refresh_seconds),
        words,
        settings.catalog_currency,
    )
