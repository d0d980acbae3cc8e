"""What a cluster's executors need to run the jobs' Python: this environment and this code.

    python -m spark_jobs.pack_env          # the environment's archive (packs it when missing)
    python -m spark_jobs.pack_env --code   # a zip of the project's code (app/, spark_jobs/)
    python -m spark_jobs.pack_env --jars   # the jars every job needs, comma-separated

For `spark-submit --jars "<jars>" --py-files "<code>"` (every job) and `--archives
"<env>#env" --conf spark.pyspark.python=./env/bin/python` (embed): docs/spark-jobs.md,
"On a cluster". Only `embed` runs Python on the executors (its workers run the driver's
ONNX export with onnxruntime, tokenizers and the sync's chunker); the other jobs' Python
runs on the driver, and their executors run the Java rules and Hudi.

The archive is the part of the virtual environment this interpreter runs in (`sys.prefix`,
a uv venv) that an executor's Python imports, as a .tar.gz (gzip -1): the distributions
whose modules PySpark's worker and spark_jobs.embed_worker import (found by importing them
in a fresh interpreter), and what those require; the driver and each executor copy and
unpack it once per application. So no torch, CUDA libraries, transformers or test tools
(embed ships its engine as an ONNX export), no Spark jars (executors have theirs) and no
editable install (executors import the project from the code zip, never from a checkout).
`bin/python` is a copy of the base interpreter's executable, not a link; it still loads
that interpreter's library and standard library (pyvenv.cfg's `home`), as a venv-pack
archive would: every worker needs that Python at the same path.

Kept in ~/.cache/hudi-rag-recommender/envs under a name that hashes the environment's
packages and versions: packed once per set of packages, reused by every run.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from app.core.config import Settings, get_settings
from spark_jobs.errors import JobError

# What an executor's Python imports: PySpark's worker and the embed job's worker functions,
# with the two its shipped engine imports on first use (embed_worker._shipped).
_EXECUTOR_MODULES = (
    "pyspark.daemon",
    "pyspark.worker",
    "spark_jobs.embed_worker",
    "onnxruntime",
    "tokenizers",
)
# Never shipped: executors have Spark's jars, and import the project from the code zip.
_LEFT_OUT = ("pyspark/jars/",)
_PROJECT = "hudi-rag-recommender"
_CODE_PACKAGES = ("app", "spark_jobs")
# Part of the archive's name: bump it when what goes into the archive changes.
_RECIPE = "5"
_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _cache_dir() -> Path:
    from spark_jobs.rules_jar import cache_root

    return cache_root() / "envs"


def _site_packages(prefix: Path) -> Path:
    found = sorted(prefix.glob("lib/python3*/site-packages"))
    if not found:
        raise JobError(f"no site-packages under {prefix}: not a virtual environment")
    return found[0]


def environment_key() -> str:
    """A hash of the interpreter and the name and version of every package installed in it."""
    site = _site_packages(Path(sys.prefix))
    # Only site-packages: sys.path also holds the working directory, whatever is in it.
    found = importlib.metadata.distributions(path=[str(site)])
    names = sorted(f"{d.metadata['Name']}=={d.version}" for d in found)
    digest = hashlib.sha256("\n".join([_RECIPE, sys.prefix, sys.version, *names]).encode())
    return digest.hexdigest()[:16]


def env_archive() -> Path:
    """The packed environment's path, packed first when this set of packages has none."""
    prefix = Path(sys.prefix)
    if prefix == Path(sys.base_prefix):
        raise JobError(f"{sys.executable} does not run in a virtual environment: nothing to pack")
    # Named by the environment's folder too: clones on one machine each keep their own.
    owner = hashlib.sha256(str(prefix).encode()).hexdigest()[:8]
    # .tar.gz, not .tar: Spark unpacks a .tar in Java, which drops the files' modes (an
    # executor then cannot run env/bin/python, SPARK-38632), a .tar.gz with the system's tar.
    archive = _cache_dir() / f"env-{owner}-{environment_key()}.tar.gz"
    if archive.is_file():
        return archive
    tar = shutil.which("tar")
    if tar is None:
        raise JobError("tar not found: needed to pack the environment")
    entries = executor_files(prefix)
    archive.parent.mkdir(parents=True, exist_ok=True)
    # Packed under a temporary name and renamed: test workers may pack at once, and a
    # reader must never see half an archive.
    with tempfile.NamedTemporaryFile(dir=archive.parent, suffix=".part", delete=False) as part:
        partial = Path(part.name)
    listing = partial.with_suffix(".files")
    try:
        listing.write_text("".join(f"{entry}\n" for entry in entries))
        # Spark's Java unpacking (of a .tar) refuses an entry that leads outside its folder:
        # "./", and links such as bin/python -> the base interpreter. Files named and links
        # copied (-h), the archive unpacks either way. gzip -1: packed in seconds, once per
        # set of packages.
        command = [tar, "-I", "gzip -1", "-chf", str(partial), "-C", str(prefix)]
        command += ["--no-recursion", "-T", str(listing)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise JobError(f"packing {prefix} failed (tar): {done.stderr.strip()[-500:]}")
        partial.chmod(0o644)
        partial.replace(archive)
    finally:
        partial.unlink(missing_ok=True)
        listing.unlink(missing_ok=True)
    # One environment at a time: an older archive is gigabytes nobody will ship again.
    for old in archive.parent.glob(f"env-{owner}-*.tar*"):
        if old != archive:
            old.unlink(missing_ok=True)
    return archive


def executor_distributions() -> list[importlib.metadata.Distribution]:
    """The installed distributions an executor's Python needs: those whose modules
    _EXECUTOR_MODULES import (in a fresh interpreter of this environment), and every
    distribution they require, the project itself left out (the code zip carries it)."""
    probe = (
        "import importlib, sys\n"
        f"for name in {_EXECUTOR_MODULES!r}: importlib.import_module(name)\n"
        "print('\\n'.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise JobError(f"importing the executors' modules failed: {done.stderr.strip()[-500:]}")
    site = _site_packages(Path(sys.prefix))
    installed = {
        _normalized(d.metadata["Name"]): d
        for d in importlib.metadata.distributions(path=[str(site)])
    }
    providers = importlib.metadata.packages_distributions()
    wanted = [_normalized(d) for m in done.stdout.split() for d in providers.get(m, [])]
    found: dict[str, importlib.metadata.Distribution] = {}
    while wanted:
        name = wanted.pop()
        dist = installed.get(name)
        if name in found or name == _PROJECT or dist is None:
            continue
        found[name] = dist
        # Extras' requirements left out; a marker for another platform only adds a name
        # that is not installed here.
        for requirement in dist.requires or []:
            match = _REQUIREMENT.match(requirement)
            if match and "extra ==" not in requirement:
                wanted.append(_normalized(match.group(1)))
    return sorted(found.values(), key=lambda d: _normalized(d.metadata["Name"]))


def executor_files(prefix: Path) -> list[str]:
    """The archive's entries, relative to `prefix`: the interpreter, pyvenv.cfg, and the
    files of executor_distributions (their RECORDs) in site-packages."""
    site = _site_packages(prefix).relative_to(prefix)
    files = {"bin/python", "pyvenv.cfg"}
    for dist in executor_distributions():
        for file in dist.files or []:
            entry = (site / file).as_posix()
            if (
                not file.parts[0].startswith("..")
                and "__pycache__" not in file.parts
                and not any(entry.startswith(f"{site}/{out}") for out in _LEFT_OUT)
                and (prefix / entry).is_file()
            ):
                files.add(entry)
    return sorted(files)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def code_zip() -> Path:
    """A zip of the project's packages (for `--py-files`), named by a hash of its content."""
    root = Path(__file__).resolve().parents[1]
    files = sorted(
        path
        for package in _CODE_PACKAGES
        for path in (root / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    out = _cache_dir() / f"code-{digest.hexdigest()[:16]}.zip"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=out.parent, suffix=".part", delete=False) as part:
        partial = Path(part.name)
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
            for path in files:
                z.write(path, path.relative_to(root).as_posix())
        partial.chmod(0o644)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    return out


def job_jars(settings: Settings | None = None) -> list[Path]:
    """The product rules' jar, Hudi's Spark bundle and the s3a connector (from ~/.m2)."""
    from spark_jobs.rules_jar import rules_jar
    from spark_jobs.session import S3A_JARS, local_bundle_jar

    s = settings or get_settings()
    bundle = Path(s.hudi_spark_jar) if s.hudi_spark_jar else local_bundle_jar(s.hudi_spark_bundle)
    found = [bundle, *(local_bundle_jar(c) for c in S3A_JARS)]
    if not all(found):
        raise JobError("Hudi's bundle or the s3a jars are not in ~/.m2: run scripts/fetch_jars.sh")
    return [rules_jar(s), *(j for j in found if j is not None)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spark_jobs.pack_env", description=__doc__)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--code", action="store_true", help="the code zip instead")
    which.add_argument("--jars", action="store_true", help="the jobs' jars instead")
    args = parser.parse_args(argv)
    try:
        if args.jars:
            print(",".join(str(j) for j in job_jars()))
        else:
            print(code_zip() if args.code else env_archive())
    except JobError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
