"""The sync lease (app/sync/lease.py): taken, held, renewed, expired, lost and released,
its epoch moving on at each takeover, and its write fence checked by the server.

On qdrant-client's local mode (fast, same calls) and on a real Qdrant server, where the
conditional upsert is checked by the engine; a race of many claimants on the server, and
on a three-node cluster through all its nodes, must leave exactly one holder. On a server
with an API key and JWT RBAC, a holder's writes after a takeover are refused by the server.
Real syncer processes sharing one server, one of them stalled by SIGSTOP:
test_sync_two_syncers.py and test_sync_fence.py.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from app.core.config import Settings
from app.store import open_store
from app.store.base import ChunkPoint, StoreFencedError
from app.store.qdrant_client_store import QdrantClientStore
from app.sync.lease import LeaseHeldError, LeaseLostError, SyncLease
from tests.qdrant_cluster import QdrantCluster, qdrant_cluster_fixture  # noqa: F401
from tests.qdrant_server import (
    FENCED_API_KEY,
    qdrant_fenced_server_fixture,  # noqa: F401
    qdrant_server_fixture,  # noqa: F401
)

LEASE = 30.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _open(url: str | None, name: str = "", api_key: str | None = None) -> QdrantClientStore:
    # A collection per test: the server is shared by the session.
    name = name or f"lease_{uuid.uuid4().hex[:12]}"
    settings = Settings(
        qdrant_url=url, qdrant_path=":memory:", qdrant_collection=name, qdrant_api_key=api_key
    )
    store = open_store(settings)
    assert isinstance(store, QdrantClientStore)
    return store


@pytest.fixture(params=["memory", pytest.param("server", marks=pytest.mark.server)])
def store(request: pytest.FixtureRequest) -> Iterator[QdrantClientStore]:
    url = request.getfixturevalue("qdrant_server") if request.param == "server" else None
    s = _open(url)
    yield s
    s.close()


def test_one_holder_until_expiry_then_the_other_takes_over(store: QdrantClientStore) -> None:
    clock = Clock()
    a = SyncLease(store, LEASE, holder="host-a:1:aa", clock=clock, monotonic=clock)
    b = SyncLease(store, LEASE, holder="host-b:2:bb", clock=clock, monotonic=clock)
    assert a.current() is None

    assert a.claim().until == clock.now + LEASE
    assert a.epoch == 1
    with pytest.raises(LeaseHeldError) as held:
        b.claim()
    assert held.value.state.holder == "host-a:1:aa"
    assert held.value.retry_in == LEASE
    assert "host-a:1:aa until" in str(held.value)

    # Renewed before a third has passed: no write; after it, the expiry moves on.
    clock.now += LEASE / 4
    a.renew_if_due()
    assert a.current().until == clock.now - LEASE / 4 + LEASE  # type: ignore[union-attr]
    clock.now += LEASE / 4
    a.renew_if_due()
    assert a.current().until == clock.now + LEASE  # type: ignore[union-attr]

    # A dead holder stops renewing: once its lease ends the other syncer takes it ...
    clock.now += LEASE - 1
    with pytest.raises(LeaseHeldError):
        b.claim()
    clock.now += 2
    assert b.claim().holder == "host-b:2:bb"
    assert (a.epoch, b.epoch, b.current().epoch) == (1, 2, 2)  # type: ignore[union-attr]
    # A release is conditional on holding: the old holder's leaves b's lease alone ...
    a.release()
    assert a.current().holder == "host-b:2:bb"  # type: ignore[union-attr]
    # ... and the old holder, if it was only slow, finds out before its next write.
    with pytest.raises(LeaseLostError):
        a.renew_if_due()
    with pytest.raises(LeaseHeldError):
        a.claim()

    # A clean shutdown ends the lease at once; the other need not wait for the expiry.
    b.release()
    assert a.claim().holder == "host-a:1:aa"
    # Every takeover moves the epoch on, a renewal keeps it.
    clock.now += LEASE / 2
    a.renew_if_due()
    assert (a.epoch, a.current().epoch) == (3, 3)  # type: ignore[union-attr]


def test_renewal_is_timed_on_the_monotonic_clock(store: QdrantClientStore) -> None:
    """A wall clock stepped back an hour neither delays the renewal nor lets it lapse."""
    wall, steady = Clock(), Clock()
    a = SyncLease(store, LEASE, holder="a", clock=wall, monotonic=steady)
    a.claim()
    wall.now -= 3600
    steady.now += LEASE / 3
    a.renew_if_due()
    assert a.current().until == wall.now + LEASE  # type: ignore[union-attr]


def test_a_takeover_that_read_an_old_epoch_does_not_apply(store: QdrantClientStore) -> None:
    """Two claimants read the same expired epoch; the first takeover moves it on, so the
    second's condition (still at the epoch it read) fails: no epoch is written twice."""
    clock = Clock()
    SyncLease(store, LEASE, holder="a", clock=clock, monotonic=clock).claim()
    clock.now += LEASE + 1
    after = clock.now + LEASE
    store.claim_lease("b", after, clock.now, epoch=2, seen=1)
    store.claim_lease("c", after, clock.now, epoch=2, seen=1)
    clock.now += LEASE + 1  # b's lease expired too: c's condition still names epoch 1
    store.claim_lease("c", clock.now + LEASE, clock.now, epoch=2, seen=1)
    assert store.read_lease() == {"holder": "b", "until": after, "epoch": 2}


def test_the_lease_outlives_a_dropped_products_collection(store: QdrantClientStore) -> None:
    clock = Clock()
    a = SyncLease(store, LEASE, holder="a", clock=clock, monotonic=clock)
    a.claim()
    store.ensure_collection(8)
    store._client.delete_collection(store._collection)
    with pytest.raises(LeaseHeldError):
        SyncLease(store, LEASE, holder="b", clock=clock, monotonic=clock).claim()


def race(urls: list[str], replication: int | None = None) -> None:
    """Each round every claimant has its own client (QDRANT_URL `urls[i % len(urls)]`) and
    starts at one barrier; the lease is free (first round: no point yet; later: expired)."""
    claimants = 8
    name = f"race_{uuid.uuid4().hex[:12]}"
    stores = [
        open_store(
            Settings(
                qdrant_url=urls[i % len(urls)],
                qdrant_collection=name,
                qdrant_replication_factor=replication,
            )
        )
        for i in range(claimants)
    ]
    clock = Clock()
    try:
        for _ in range(10):
            leases = [
                SyncLease(s, LEASE, holder=f"h{i}", clock=clock, monotonic=clock)  # type: ignore[arg-type]
                for i, s in enumerate(stores)
            ]
            barrier = threading.Barrier(claimants)
            won: list[str] = []
            failed: list[Exception] = []

            def claim(
                lease: SyncLease,
                barrier: threading.Barrier = barrier,
                won: list[str] = won,
                failed: list[Exception] = failed,
            ) -> None:
                barrier.wait()
                try:
                    won.append(lease.claim().holder)
                except LeaseHeldError:
                    pass  # lost the race: the expected outcome for all but one
                except Exception as e:
                    failed.append(e)

            threads = [threading.Thread(target=claim, args=(lease,)) for lease in leases]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert not failed and len(won) == 1, (failed, won)
            assert leases[0].current().holder == won[0]  # type: ignore[union-attr]
            clock.now += LEASE + 1
    finally:
        for s in stores:
            s.close()


@pytest.mark.server
def test_racing_claimants_on_the_server_leave_exactly_one_holder(qdrant_server: str) -> None:
    race([qdrant_server])


@pytest.mark.server
@pytest.mark.slow  # three nodes start
def test_racing_claimants_through_every_node_of_a_cluster_leave_exactly_one_holder(
    qdrant_cluster: QdrantCluster,
) -> None:
    """The lease replicated on two of three nodes, claims entering through all three (each
    claimant's QDRANT_URL starts at another node): its MEDIUM ordering still serialises them."""
    nodes = [n.url for n in qdrant_cluster.nodes]
    urls = [",".join(nodes[i:] + nodes[:i]) for i in range(len(nodes))]
    race(urls, replication=2)


def test_only_a_server_store_gets_a_lease() -> None:
    memory = Settings(qdrant_path=":memory:", qdrant_url=None)
    store = open_store(memory)
    assert SyncLease.for_settings(memory, store) is None
    store.close()


@pytest.mark.server
def test_the_server_refuses_the_writes_of_a_holder_whose_lease_was_taken_over(
    qdrant_fenced_server: str,
) -> None:
    """Fenced writes: the holder's points, deletes and checkpoint land while it holds the
    lease; after another syncer's takeover the server refuses every one of them, and the
    new holder's writes land."""
    name = f"fence_{uuid.uuid4().hex[:12]}"
    a_store = _open(qdrant_fenced_server, name, FENCED_API_KEY)
    b_store = _open(qdrant_fenced_server, name, FENCED_API_KEY)
    clock = Clock()
    a = SyncLease(a_store, LEASE, holder="a", clock=clock, monotonic=clock)
    b = SyncLease(b_store, LEASE, holder="b", clock=clock, monotonic=clock)
    try:
        a_store.ensure_collection(2)
        a.claim()
        assert a.fenced
        a_store.upsert([ChunkPoint(str(uuid.uuid4()), [1.0, 0.0], {"product_id": 1})])
        a_store.save_state({"completed": "1"})
        clock.now += LEASE + 1
        b.claim()
        assert (a.epoch, b.epoch) == (1, 2)
        late = str(uuid.uuid4())
        with pytest.raises(StoreFencedError, match="took the lease over"):
            a_store.upsert([ChunkPoint(late, [0.0, 1.0], {"product_id": 2})])
        with pytest.raises(StoreFencedError):
            a_store.save_state({"completed": "2"})
        with pytest.raises(StoreFencedError):
            a_store.delete_products([1])
        # Reads are not fenced; nothing of the late writes landed.
        assert a_store.count() == 1 and a_store.load_state() == {"completed": "1"}
        b_store.upsert([ChunkPoint(late, [0.0, 1.0], {"product_id": 2})])
        b_store.save_state({"completed": "3"})
        assert a_store.count() == 2 and a_store.load_state() == {"completed": "3"}
    finally:
        a_store.close()
        b_store.close()
