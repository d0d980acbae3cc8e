"""Where each encoder's index lives, and the pointer that says which one serves.

A new encoder means a new index, built beside the serving one and switched to at once
(app/sync/switch.py). Each engine has its own atomic pointer:

- Qdrant server: the index of model M is the collection `<QDRANT_COLLECTION>__<M>`; the
  alias QDRANT_COLLECTION names the serving one, and a switch moves it in one
  `update_collection_aliases` request (delete + create, applied together by the server).
  A collection made before any switch is called QDRANT_COLLECTION itself and serves until
  the first switch, which drops it and then creates the alias in its place: readers that
  go by the name see it missing between those two requests (this service's own readers
  hold the concrete name, app/api/services.py). A syncer that dies between them finds no
  alias and no such collection, and finishes the switch on its next start.
- Embedded edge: the shard folder `QDRANT_PATH/shards/<M>`; the pointer is
  `QDRANT_PATH/serving.json`, replaced by rename (readers see the old or the new file).
  Without a pointer the shard in QDRANT_PATH itself serves (made before any switch); the
  first switch removes its files and keeps `shards/` and the pointer.
- `:memory:`: the collection `<QDRANT_COLLECTION>__<M>` in a new in-process client; the
  pointer is the process's own (nothing outlives it).

An index is named by its location: a collection name (server, memory) or a folder (edge),
as `open_store(settings, index=...)` takes it.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from app.core.config import Settings
from app.store.base import StoreError
from app.store.edge_store import STATE_FILE, write_atomically

if TYPE_CHECKING:
    from app.store.qdrant_nodes import QdrantNodes

logger = logging.getLogger(__name__)

POINTER_FILE = "serving.json"
SHARDS_DIR = "shards"
# What a shard made before any switch keeps in QDRANT_PATH itself (the engine's and ours).
_ROOT_SHARD_FILES = ("wal", "segments", "edge_config.json", STATE_FILE)
_LEASE_SUFFIX = "__sync_lease"

SlotKind = Literal["server", "edge", "memory"]


def model_slug(model_id: str) -> str:
    """A model id as a collection / folder name part (`all-MiniLM-L6-v2+int8` -> `...-int8`)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", model_id).strip("-.").lower()[:80] or "model"


class IndexSlots:
    """The serving pointer of the store the settings name (see the module docstring).

    Raises (every method): StoreError when the server or the folder cannot be read/written.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.base = settings.qdrant_collection
        self.kind: SlotKind = (
            "server"
            if settings.qdrant_url
            else "memory"
            if settings.qdrant_path == ":memory:"
            else "edge"
        )
        self._root = Path(settings.qdrant_path)
        self._nodes: QdrantNodes | None = None

    # --- where ------------------------------------------------------------------------
    def serving(self, next_model: str | None = None) -> str:
        """The serving index's location. `next_model`: the model a switch may have been
        interrupted for (a server only: its collection serves when the switch had dropped
        the old one but not yet made the alias)."""
        if self.kind == "memory":
            return self.base
        if self.kind == "edge":
            pointer = self._read_pointer()
            return str(self._root / pointer) if pointer else str(self._root)
        target = self._alias_target()
        if target is not None:
            return target
        if next_model is not None and not self._exists(self.base):
            half = self.beside(next_model)
            if self._exists(half):
                logger.warning("finishing an interrupted switch: alias %s -> %s", self.base, half)
                self._move_alias(half)
                return half
        return self.base

    def beside(self, model_id: str) -> str:
        """Where the index of `model_id` is built beside the serving one."""
        if self.kind == "edge":
            return str(self._root / SHARDS_DIR / model_slug(model_id))
        return f"{self.base}__{model_slug(model_id)}"

    def describe(self, location: str) -> str:
        return f"shard {location}" if self.kind == "edge" else f"collection {location}"

    # --- the switch ---------------------------------------------------------------------
    def promote(self, location: str) -> None:
        """Make `location` the serving index (atomic for every reader that resolves the
        pointer from now on)."""
        if self.kind == "memory":
            return
        if self.kind == "edge":
            relative = Path(location).relative_to(self._root)
            text = json.dumps({"shard": str(relative)}, sort_keys=True)
            try:
                write_atomically(self._root / POINTER_FILE, text)
            except OSError as e:
                raise StoreError(f"cannot write {POINTER_FILE}: {e}", backend="qdrant-edge") from e
            return
        if self._alias_target() is None and self._exists(self.base):
            # Made before any switch: an alias cannot share a collection's name.
            logger.info("dropping collection %s (served before aliases) for the alias", self.base)
            self._server("delete_collection", self.base)
        self._move_alias(location)

    def drop(self, location: str) -> None:
        """Delete an index that no longer serves (its store must be closed already)."""
        if self.kind == "memory":
            return  # closing its client dropped it
        if self.kind == "server":
            if location != self.base or self._alias_target() is None:
                self._server("delete_collection", location)
            return
        folder = Path(location)
        if folder == self._root:
            for name in _ROOT_SHARD_FILES:
                path = folder / name
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)
        logger.info("dropped %s", self.describe(location))

    def leftovers(self, keep: set[str]) -> list[str]:
        """Indexes of this store that neither serve nor are in `keep`: what a switch that
        died before its drop left (edge and server; dropped under the sync's hold)."""
        found: list[str] = []
        if self.kind == "edge":
            shards = self._root / SHARDS_DIR
            if shards.is_dir():
                found = [str(p) for p in sorted(shards.iterdir()) if p.is_dir()]
            if self._read_pointer() and (self._root / "edge_config.json").exists():
                found.append(str(self._root))
        elif self.kind == "server":
            prefix = f"{self.base}__"
            found = sorted(
                name
                for name in self.collections()
                if name.startswith(prefix) and not name.endswith(_LEASE_SUFFIX)
            )
        serving = self.serving()
        return [f for f in found if f != serving and f not in keep]

    def close(self) -> None:
        if self._nodes is not None:
            self._nodes.close()
            self._nodes = None

    # --- engine calls -------------------------------------------------------------------
    def _read_pointer(self) -> str | None:
        path = self._root / POINTER_FILE
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise StoreError(f"unreadable {path}: {e}", backend="qdrant-edge") from e
        shard = raw.get("shard") if isinstance(raw, dict) else None
        if not isinstance(shard, str) or not shard:
            raise StoreError(f"{path} names no shard", backend="qdrant-edge")
        return shard

    def _server(self, what: str, *args: Any, **kwargs: Any) -> Any:
        """A call of qdrant-client's `what`, sent to the next node while one is unreachable
        (QDRANT_URL's nodes, app/store/qdrant_nodes.py)."""
        if self._nodes is None:
            from app.store import server_nodes

            self._nodes = server_nodes(self.settings)
        try:
            return self._nodes.call(getattr(self._nodes.current, what), *args, **kwargs)
        except Exception as e:
            raise StoreError(
                f"{what} failed: {e}", backend="qdrant-remote", collection=self.base
            ) from e

    def _alias_target(self) -> str | None:
        for alias in self._server("get_aliases").aliases:
            if alias.alias_name == self.base:
                return str(alias.collection_name)
        return None

    def _exists(self, name: str) -> bool:
        """A collection or an alias of that name (the server resolves aliases here)."""
        return bool(self._server("collection_exists", name))

    def collections(self) -> set[str]:
        """The server's collection names (aliases not included); empty for other stores."""
        if self.kind != "server":
            return set()
        return {c.name for c in self._server("get_collections").collections}

    def _move_alias(self, location: str) -> None:
        from qdrant_client import models

        actions: list[Any] = []
        if self._alias_target() is not None:
            actions.append(
                models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=self.base))
            )
        actions.append(
            models.CreateAliasOperation(
                create_alias=models.CreateAlias(collection_name=location, alias_name=self.base)
            )
        )
        # One request: the server applies both or neither, so the name never dangles.
        self._server("update_collection_aliases", change_aliases_operations=actions)
        logger.info("alias %s -> %s", self.base, location)
