"""What shoppers were shown and what they did, on its way into the lakehouse.

- `ids`: the `recommendation_id` every answer carries, signed so any replica can tell an id
  this service minted from a forged or mistyped one without a shared store.
- `records`: one JSON line per event (impressions, clicks, add-to-carts, purchases), the
  shape `spark_jobs.ingest_events` reads into the `interactions` Hudi table.
- `log`: the per-process segment writer under EVENTS_DIR (group commit, atomic close,
  orphans of killed processes closed by the next live writer).
"""
