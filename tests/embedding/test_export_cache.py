"""`python -m app.embedding --stamp S --shared DIR`: exports shared by clones (no model run).

The export itself is replaced by a fake that writes two small files, so these tests check
the cache's bookkeeping in milliseconds: what is copied where, and when it is not used.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.core.config import Settings, get_settings
from app.embedding import __main__ as export_cli


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    models = tmp_path / "clone" / "models"
    _use_cache(monkeypatch, models)
    yield models
    get_settings.cache_clear()


def _use_cache(monkeypatch: pytest.MonkeyPatch, models: Path) -> None:
    monkeypatch.setenv("MODEL_CACHE_DIR", str(models))
    get_settings.cache_clear()  # Settings are read once per process


def _fake_export(calls: list[str]) -> object:
    def export(settings: Settings) -> list[Path]:
        models = Path(settings.model_cache_dir)
        models.mkdir(parents=True, exist_ok=True)
        calls.append("export")
        for name in ("m.onnx", "m-int8v2.onnx"):
            (models / name).write_bytes(name.encode())
        return [models / "m-int8v2.onnx"]

    return export


@dataclass
class Exports:
    """The export replaced by `_fake_export`, which records each call in `calls`."""

    calls: list[str]
    shared: Path

    def run(self, stamp: str) -> int:
        return export_cli.main(["--stamp", stamp, "--shared", str(self.shared)])


@pytest.fixture
def exports(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Exports:
    calls: list[str] = []
    monkeypatch.setattr(export_cli, "export", _fake_export(calls))
    return Exports(calls, tmp_path / "shared")


def test_a_second_clone_copies_the_exports_instead_of_exporting(
    exports: Exports, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert exports.run("s1") == 0
    assert exports.calls == ["export"]
    (slot,) = list(exports.shared.iterdir())
    assert sorted(p.name for p in slot.glob("*.onnx")) == ["m-int8v2.onnx", "m.onnx"]

    other = tmp_path / "clone2" / "models"
    _use_cache(monkeypatch, other)
    assert exports.run("s1") == 0
    assert exports.calls == ["export"]  # copied, not exported
    assert (other / "m.onnx").read_bytes() == b"m.onnx"
    assert not list(other.glob(".*.partial"))
    # The copy is stamped like an export: the next run does nothing at all.
    assert export_cli.up_to_date(other, export_cli.stamp_key(get_settings(), "s1"))


def test_other_locked_versions_or_a_damaged_slot_export_again(
    exports: Exports, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exports.run("s1")
    _use_cache(monkeypatch, tmp_path / "clone2" / "models")
    exports.run("s2")  # another lock: another slot
    assert exports.calls == ["export", "export"]
    shared = exports.shared
    assert len(list(shared.iterdir())) == 2

    for slot in shared.iterdir():
        (slot / "m.onnx").unlink()  # a slot missing a file it lists is not used
    _use_cache(monkeypatch, tmp_path / "clone3" / "models")
    exports.run("s1")
    assert exports.calls == ["export", "export", "export"]


def test_shared_needs_a_stamp(cache: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        export_cli.main(["--shared", str(tmp_path)])
