# syntax=docker/dockerfile:1
# harness-memory as a service: the MCP server over streamable HTTP, with /healthz and /readyz.
# Keys and the embedding model are never part of the image: keys arrive at run time (compose
# secrets, HARNESS_MCP_INGEST_KEY_FILE), the model folder is mounted at /models.
# This image was not built on the machines this project is developed on (they cannot reach a
# container registry); see README, "Running as a service".

FROM python:3.11-slim AS build
WORKDIR /src
RUN python -m venv /opt/harness
COPY pyproject.toml README.md ./
COPY harness ./harness
COPY product_adapter ./product_adapter
COPY migrations ./migrations
RUN /opt/harness/bin/pip install --no-cache-dir .

FROM python:3.11-slim AS runtime
RUN useradd --system --uid 10001 --create-home --home-dir /var/lib/harness harness
COPY --from=build /opt/harness /opt/harness
ENV PATH=/opt/harness/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    HARNESS_HOME=/var/lib/harness \
    HARNESS_EMBED_MODEL_PATH=/models/all-MiniLM-L6-v2-onnx \
    HARNESS_MCP_HTTP=0.0.0.0:8765 \
    HARNESS_LOG_FORMAT=json
USER harness
WORKDIR /var/lib/harness
VOLUME ["/var/lib/harness"]
EXPOSE 8765
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, sys, urllib.request; port = os.environ['HARNESS_MCP_HTTP'].rpartition(':')[2]; sys.exit(urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=4).status != 200)"]
# SIGTERM: stop accepting, recalls in flight get 0.3 s and other calls at most 10 s, release the store, exit 143.
STOPSIGNAL SIGTERM
ENTRYPOINT ["harness-memory"]
CMD ["mcp"]
