"""Query understanding: the shopper's words → a search text plus filters the engine supports.

"running shoes under $100" searches for "running shoes" with max_price 100. Offline rules
by default (phrasebook.json); QUERY_PARSER=llm asks the LLM for a validated JSON parse
and falls back to the rules. `plan_filters` merges the parse with the request's explicit
filters (those win) and says where each filter came from; `constrained_retrieve` runs the
search and, when a hard price bound leaves nothing, returns the nearest matches labelled.
In a conversation, `followup` reads the query as a refinement of the last turn ("cheaper",
"in black", "more like the second one", "not Samsung") by the rules of followup_rules.json,
and `search_turn` searches by text or by the product pointed at.
"""

from app.query.offline import OfflineQueryParser
from app.query.ordering import SearchOutcome
from app.query.plan import AppliedFilter, FilterPlan, plan_filters
from app.query.search import constrained_retrieve
from app.query.types import CONSTRAINT_FIELDS, Constraint, ConstraintField, ParsedQuery
from app.query.understanding import QueryUnderstanding, build_query_understanding

__all__ = [
    "CONSTRAINT_FIELDS",
    "AppliedFilter",
    "Constraint",
    "ConstraintField",
    "FilterPlan",
    "OfflineQueryParser",
    "ParsedQuery",
    "QueryUnderstanding",
    "SearchOutcome",
    "build_query_understanding",
    "constrained_retrieve",
    "plan_filters",
]
