"""`python -m app.embedding --stamp S`: set-up's exports are made once per stamp (no model run).

The export itself is replaced by a fake that writes two small files, so these tests check
the stamp's bookkeeping in milliseconds: when set-up exports again and when it does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core.config import Settings, get_settings
from app.embedding import __main__ as export_cli


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    monkeypatch.setenv("MODEL_CACHE_DIR", str(tmp_path / "models"))
    get_settings.cache_clear()  # Settings are read once per process
    made: list[str] = []

    def export(settings: Settings, int8: bool = False) -> list[Path]:
        models = Path(settings.model_cache_dir)
        models.mkdir(parents=True, exist_ok=True)
        made.append("export")
        for name in ("m.onnx", "m-int8v3.onnx"):
            (models / name).write_bytes(name.encode())
        return [models / "m-int8v3.onnx"]

    monkeypatch.setattr(export_cli, "export", export)
    yield made
    get_settings.cache_clear()


def test_the_same_stamp_exports_once(calls: list[str]) -> None:
    assert export_cli.main(["--stamp", "s1"]) == 0
    assert export_cli.main(["--stamp", "s1"]) == 0
    assert calls == ["export"]
    # Every export is listed, the fp32 one an int8 start quantized from included.
    cache = Path(get_settings().model_cache_dir)
    assert export_cli.up_to_date(cache, export_cli.stamp_key(get_settings(), "s1"))


def test_another_stamp_or_a_missing_file_exports_again(calls: list[str]) -> None:
    export_cli.main(["--stamp", "s1"])
    export_cli.main(["--stamp", "s2"])  # another lock or export code
    assert calls == ["export", "export"]
    (Path(get_settings().model_cache_dir) / "m.onnx").unlink()
    export_cli.main(["--stamp", "s2"])
    assert calls == ["export", "export", "export"]


def test_without_a_stamp_it_always_exports(calls: list[str]) -> None:
    export_cli.main([])
    export_cli.main([])
    assert calls == ["export", "export"]
