# syntax=docker/dockerfile:1
# Two images from one file, both thin over the repo's own scripts:
#   docker build --target api   -t recommender-api .    (default) FastAPI + sync; reads the
#                                                       table natively with hudi-rs: no JVM,
#                                                       no Java source, no spark_jobs; runs
#                                                       the model with ONNX Runtime: no torch
#   docker build --target spark -t recommender-spark .  the PySpark jobs + Hudi bundle + a
#                                                       JRE + the product rules' jar + torch
# The `rules` stage builds that jar (the Maven module rules/, its unit tests included); only
# the jar leaves it. The `model` stage exports the embedding model to ONNX once (torch and
# sentence-transformers live there only); only the exports leave it, and the `packages`
# stage's trimmed venv is what the api target runs. docker-compose.yml wires the images
# with a Qdrant server and a shared table volume.

FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
    DATA_DIR=/data
# Everything the service writes (table, index, lock) goes under DATA_DIR: /srv (the code)
# and the api image's /opt/models are not writable for the non-root user.
WORKDIR /srv
# torch (the model stage, the spark image) from PyPI brings CUDA wheels (~4 GB); the CPU
# index keeps them smaller where it is reachable. TORCH_INDEX_URL= (empty): PyPI only.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# The api target's and the model stage's dependencies install from these alone (the code
# runs from /srv, copied after them): a change to the code reuses those layers.
COPY pyproject.toml README.md ./
RUN useradd --create-home --uid 10001 app && mkdir -p /data && chown app /data

# The model's ONNX exports (fp32, tokenizer, export.json: app/embedding/exported.py), made
# once here; the api target copies only /opt/models. EXPORT_INT8=1 adds the int8 export
# (68 MB), which EMBEDDING_ENCODER=auto picks where the image runs on a VNNI/AMX CPU.
FROM base AS model
ARG EMBEDDING_MODEL=
ARG EXPORT_INT8=
ENV MODEL_CACHE_DIR=/opt/models
RUN pip install ${TORCH_INDEX_URL:+--extra-index-url $TORCH_INDEX_URL} ".[embed]"
COPY app ./app
# fp32 alone unless EXPORT_INT8: without it the export would follow the build host's CPU
# (int8 where it has AVX2/VNNI/AMX), so the image would depend on where it was built.
RUN EMBEDDING_ENCODER=onnx-fp32 python -m app.embedding ${EXPORT_INT8:+--int8}

# The api target's Python packages, in a venv trimmed before it is copied (~140 MB): the
# packages' own test suites removed, the extension modules' and pyarrow's symbol tables
# stripped (wheels ship most with theirs). Not the vendored `*.libs` (auditwheel-patched:
# stripped, they fail to load). OpenVINO keeps its CPU plugin and ONNX reader (app/embedding/
# openvino_session.py): its GPU/NPU plugins, their tuning cache, other frontends and headers
# go (~74 MB). pyarrow's Flight (Arrow's RPC, which nothing here speaks) goes (~27 MB).
FROM base AS packages
RUN apt-get update && apt-get install -y --no-install-recommends binutils \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv --without-pip /opt/venv \
    && pip --python /opt/venv/bin/python install --no-compile . \
    && site=$(/opt/venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') \
    && find /opt/venv -type d -name tests -prune -exec rm -rf {} + \
    && find "$site" -type f \( -name '*.abi3.so' -o -name '*.cpython-*.so' \
        -o -path "$site/pyarrow/lib*.so*" \) -not -path '*.libs/*' -exec strip --strip-unneeded {} + \
    && ov="$site/openvino" \
    && rm -rf "$ov/include" "$ov"/libs/libopenvino_intel_gpu_plugin.so \
        "$ov"/libs/libopenvino_intel_npu_plugin.so \
        "$ov"/libs/libopenvino_tensorflow_frontend.so* "$ov"/libs/libopenvino_paddle_frontend.so* \
        "$ov"/libs/libopenvino_tensorflow_lite_frontend.so* \
        "$ov"/libs/libopenvino_pytorch_frontend.so* "$ov"/libs/libopenvino_gguf_frontend.so* \
        "$ov"/libs/cache.json \
    && rm -f "$site"/pyarrow/libarrow_flight.so* "$site"/pyarrow/libarrow_python_flight.so* \
        "$site"/pyarrow/_flight.*.so

# The product rules' jar: a JDK and Maven here only. `package` runs the rules' unit tests.
FROM python:3.11-slim AS rules
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jdk-headless maven \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /rules
COPY rules/pom.xml ./
COPY rules/src ./src
RUN mvn -q -B package

FROM base AS spark
# A JRE runs Spark and the prebuilt rules; Maven (on that JRE) fetches the Hudi bundle.
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless maven \
    && rm -rf /var/lib/apt/lists/*
COPY app ./app
COPY scripts ./scripts
COPY spark_jobs ./spark_jobs
# Installed with the code: Spark's Python workers import app and spark_jobs from site-packages.
RUN pip install ${TORCH_INDEX_URL:+--extra-index-url $TORCH_INDEX_URL} ".[spark,embed]"
COPY data/demo ./data/demo
COPY --from=rules /rules/target/product-rules.jar /opt/product-rules/product-rules.jar
ENV PRODUCT_RULES_JAR=/opt/product-rules/product-rules.jar
USER app
# Hudi bundle (+ s3a jars) into ~app/.m2, where spark_jobs/session.py looks for them.
RUN ./scripts/fetch_jars.sh && python -m spark_jobs.rules_jar
# Default: build the demo table if missing. Any job: `docker compose run spark python -m
# spark_jobs.upsert_products --input /data/in/products.jsonl`.
CMD ["python", "-m", "spark_jobs.demo"]

FROM base AS api
# No `embed` extra: ONNX Runtime and the tokenizer run the exports (and a learned ranker's
# trees), nothing pulls torch, CUDA libraries, LightGBM or SciPy. A model that was not
# exported stops the start with what to do.
COPY --from=packages /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
COPY app ./app
COPY scripts ./scripts
# Bytecode for what a start imports, written once here (read-only to `app`; the rest of
# the packages' ~86 MB of it is left out).
RUN PYTHONDONTWRITEBYTECODE= python -c "import app.main, app.sync.__main__, \
    app.embedding.exported, onnxruntime, hudi, qdrant_edge, tokenizers, semantic_text_splitter"
ARG EMBEDDING_MODEL=
ENV EMBEDDING_MODEL=${EMBEDDING_MODEL} MODEL_CACHE_DIR=/opt/models
COPY --from=model /opt/models /opt/models
USER app
ENV HOST=0.0.0.0 PORT=8000
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health')"
CMD ["./scripts/serve.sh"]
